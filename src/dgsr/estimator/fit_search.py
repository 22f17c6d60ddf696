"""Running the search of one fit: the rows it sees, its random streams, and the MCTS search
itself under its share of the budget (:mod:`dgsr.estimator.budget_plan`), on ``n_jobs``
processes (:func:`dgsr.search.parallel.run_parallel_search`) or as expert iteration
(``finetune``), with a progress line when ``verbose``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.exponent_scaling import Scaling, fit_scaling
from dgsr.estimator.budget_plan import BudgetPlan
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.input_checks import TrainingData, validate_sample_weight
from dgsr.estimator.user_warnings import warn_user


@dataclass(frozen=True)
class SearchRows:
    """The training rows as the search sees them: scaled by powers of two, zero-weight rows left out."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    scaling: Scaling


def random_streams(random_state: Any, n_fits: int = 1) -> list[np.random.Generator]:
    """(features, search, polish) generators for the ``n_fits``-th fit of a warm-started series."""
    root = _root_rng(random_state)
    # A warm-started fit continues with fresh random streams instead of replaying the last one.
    for _ in range(n_fits - 1):
        root = root.spawn(1)[0]
    return root.spawn(3)


def search_rows(data: TrainingData, sample_weight: Any) -> SearchRows:
    """``data`` scaled by powers of two (exact, so any magnitude works) with weights normalised to
    mean 1; a zero weight is a row left out, exactly."""
    scaling = fit_scaling(data.X, data.y, data.names)
    X, y = scaling.scale_X(data.X), scaling.scale_y(data.y)
    if not math.isfinite(scaling.unscale_loss(max(float(np.var(y)), 1e-300))):
        top = float(np.max(np.abs(data.y)))
        warn_user(f"y reaches {top:.3g}: squared errors in its units overflow float64, so the 'loss' column "
                  "of equations_ and validation_loss_ show inf. The search, the model selection, r2, score() "
                  "and the formulas are exact (they work on y scaled by a power of two); divide y by a power "
                  "of ten to read losses.")
    w = validate_sample_weight(sample_weight, X)
    if w is not None and not (w > 0).all():
        keep = w > 0
        X, y = X[keep], y[keep]
        w = w[keep] * (len(w[keep]) / float(np.sum(w[keep])))
    return SearchRows(X, y, w, scaling)


def run_search(config: FitConfig, X: np.ndarray, y: np.ndarray, policy: Any, rng: np.random.Generator,
               plan: BudgetPlan, previous: Any, w: np.ndarray | None, spent: float | None = None,
               before: float = 0.0) -> Any:
    """The search under its share of ``plan``, with a progress line when ``config.verbose``.

    ``spent``: the evaluations of a first part of this search, which continues (into the archive
    ``previous``) with all that is left, the fold searches' share included; ``before``: the
    evaluations a first search on the reduced problem took of this search's share."""
    from dgsr.core.budget import Budget

    limit = plan.search_evaluation_limit(spent)
    budget = Budget(max_evaluations=None if limit is None else max(1, int(limit - before)),
                    max_time=plan.search_time(continuation=spent is not None), target_r2=config.target_r2)
    search_config = config.search_config()
    if not config.verbose:
        return run_units(config, X, y, policy, search_config, rng, budget, previous, None, w)
    from dgsr.estimator.progress import ProgressLine

    with ProgressLine(max_time=config.max_time, max_evaluations=config.max_evaluations) as progress:
        result = run_units(config, X, y, policy, search_config, rng, budget, previous, progress.update, w)
        progress.update(_snapshot(result), force=True)
    return result


def run_units(config: FitConfig, X: np.ndarray, y: np.ndarray, policy: Any, search_config: Any,
              rng: np.random.Generator, budget: Any, previous: Any, on_progress: Any,
              w: np.ndarray | None = None) -> Any:
    """The search's work units on ``config.n_jobs`` processes (:mod:`dgsr.search.parallel`), or expert
    iteration on this dataset when ``config.finetune`` is set."""
    from dgsr.estimator.policy_loading import load_policy
    from dgsr.search.parallel import run_parallel_search

    if config.finetune:
        from dgsr.neural import require_torch

        require_torch("finetune=True")  # dgsr.online imports torch
        from dgsr.online.finetune import finetune_search, is_finetunable

        if is_finetunable(policy):
            if w is not None:
                warn_user("finetune=True does not use sample_weight during the search (the final "
                          "front's constants, losses and selection do).")
            result, _ = finetune_search(X, y, policy, config=search_config, rng=rng, budget=budget,
                                        archive=previous, on_progress=on_progress)
            return result
        warn_user("finetune=True needs the neural policy; running a plain search.")
    _warn_if_capped(config.n_jobs, config.parallel_backend)
    make_policy = functools.partial(load_policy, config.policy, device=config.device,
                                    operators=config.allowed_operators())
    return run_parallel_search(X, y, policy, config=search_config, rng=rng, budget=budget, n_jobs=config.n_jobs,
                               backend=config.parallel_backend, make_policy=make_policy, archive=previous,
                               on_progress=on_progress, sample_weight=w)


def continued(first: Any, more: Any) -> Any:
    """One search result of a search and its continuation into the same archive."""
    return dataclasses.replace(
        more, n_evaluations=first.n_evaluations + more.n_evaluations, n_trials=first.n_trials + more.n_trials,
        n_iterations=first.n_iterations + more.n_iterations, elapsed=first.elapsed + more.elapsed,
        history=[*first.history, *(dict(h, evaluations=h["evaluations"] + first.n_evaluations) for h in more.history)],
        mutation_stats={k: first.mutation_stats.get(k, 0) + more.mutation_stats.get(k, 0)
                        for k in {*first.mutation_stats, *more.mutation_stats}},
        trials=[*first.trials, *more.trials])


def _warn_if_capped(n_jobs: int | None, backend: str) -> None:
    """Warn when a local ``n_jobs`` asks for more processes than this process has CPUs."""
    from dgsr.search.parallel import resolve_n_jobs
    from dgsr.search.workers import available_cpus

    cpus = available_cpus()
    if backend == "local" and resolve_n_jobs(n_jobs) > cpus:
        warn_user(f"n_jobs={n_jobs} is more than the {cpus} CPUs this process may use; running {cpus} "
                  "processes (results do not depend on n_jobs).")


def feature_limit(policy: Any, max_features: int | None) -> tuple[int | None, str]:
    """How many columns the search may use (None: all) and why: the user's ``max_features``, or
    the policy's own variable limit (its ``max_variables`` attribute; the neural policy names 10)."""
    policy_limit = getattr(policy, "max_variables", None)
    if policy_limit is not None and (max_features is None or policy_limit < max_features):
        return int(policy_limit), f"the {policy_limit} variables the {type(policy).__name__} can name"
    if max_features is not None:
        return int(max_features), f"max_features={max_features}"
    return None, ""


def _root_rng(random_state: Any) -> np.random.Generator:
    """A Generator from ``random_state`` without touching global state (an int seeds it exactly)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    return np.random.default_rng(random_state)


def _snapshot(result: Any) -> Any:
    from dgsr.search.mcts import SearchProgress

    best = result.best
    return SearchProgress(result.elapsed, result.n_evaluations, best.r2 if best else -math.inf,
                          best.size if best else 0, result.n_trials)
