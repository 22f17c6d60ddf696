"""``SymbolicRegressor(finetune=True)``: expert iteration on the one dataset being fitted.

The search budget is spent in trials, as in :func:`dgsr.search.mcts.run_search`, but each trial draws
its hyper-parameters as Appendix E.3 does, trials alternate with and without constant fitting,
and after each trial the policy and critic take a few training steps on what the search found
(:mod:`dgsr.online.trainer`), so later trials use the fine-tuned policy. All trials share one
:class:`~dgsr.core.budget.Budget` and one Pareto archive, so the result is a
:class:`~dgsr.search.mcts.SearchResult` like a plain search's. The policy's model is copied first:
the caller's policy is left as it was.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.pareto import ParetoArchive
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt
from dgsr.search.mcts import SearchConfig, SearchProgress, SearchResult
from dgsr.search.results import history_point

from .controller import Controller, Dataset, OnlineConfig, make_policy, run_trial
from .trainer import OnlineTrainer, TrainerConfig


def is_finetunable(policy: Any) -> bool:
    """True for a policy with a torch model that can be fine-tuned (the neural policy)."""
    from dgsr.neural.policy import NeuralPolicy

    return isinstance(policy, NeuralPolicy)


def finetune_search(X: np.ndarray, y: np.ndarray, policy: Any, *, config: SearchConfig,
                    rng: np.random.Generator, budget: Budget, archive: ParetoArchive | None = None,
                    trainer_config: TrainerConfig | None = None,
                    on_progress: Callable[[SearchProgress], Any] | None = None) -> tuple[SearchResult, OnlineTrainer]:
    """Search ``(X, y)`` under ``budget`` while fine-tuning a copy of ``policy``'s model after every trial.

    ``config`` supplies what trials do not draw (iterations per trial, size limit, constant
    method); its constant-fitting mode alternates with ``"never"``. Returns the search result
    and the trainer (its ``model`` is the fine-tuned one).
    """
    budget.start()
    archive = archive if archive is not None else ParetoArchive(config.rules, config.units)
    model = copy.deepcopy(policy.model)
    device = str(getattr(policy, "device", "cpu"))
    modes = (config.constant_fitting, "never") if config.constant_fitting != "never" else ("never",)
    online = OnlineConfig(iterations_per_trial=config.iterations_per_trial, trial_time=None,
                          constant_modes=modes, max_size=config.max_size, solved_r2=config.solved_r2,
                          min_visits=config.min_visits, seed=int(rng.integers(2**31)))
    controller = Controller([Dataset("data", np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64))],
                            online)
    trainer = OnlineTrainer(model, trainer_config or TrainerConfig(seed=online.seed), device=device)
    history: list[dict[str, float]] = []
    n_iterations, reason = 0, None

    def best() -> tuple[float, int]:
        entry = archive.best()
        return (entry.r2, entry.size) if entry is not None else (-math.inf, 0)

    try:
        while (reason := budget.exhausted(best()[0])) is None:
            spec = controller.next_spec(trainer.version)
            spent_before = budget.evaluations
            outcome = run_trial(spec, X, y, make_policy(trainer.model, spec, device), online, budget=budget,
                                archive=archive, base=config)
            controller.record(outcome)
            n_iterations += outcome.iterations
            trainer.buffers.add_trial(outcome.points, [outcome.solution_path], outcome.critic_targets)
            r2, size = best()
            if not history or r2 > history[-1]["best_r2"]:
                history.append(history_point(budget.evaluations, budget.elapsed, r2, size, controller.completed))
            if on_progress is not None:
                on_progress(SearchProgress(budget.elapsed, budget.evaluations, r2, size, controller.completed))
            if budget.exhausted(r2) is None:  # no training step once the budget is spent
                trainer.train()
            if outcome.error is not None and budget.evaluations == spent_before:
                reason = "error"  # a trial that cannot even start would loop forever
                break
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        reason = "interrupted"
    entry = archive.best()
    result = SearchResult(archive=archive, best=entry, n_evaluations=budget.evaluations,
                          n_trials=controller.completed, n_iterations=n_iterations, elapsed=budget.elapsed,
                          stop_reason=reason or "evaluations", history=history, mutation_stats={}, trials=[])
    return result, trainer
