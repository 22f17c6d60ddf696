"""Monte-Carlo tree search over expressions (Section 3.1 of the paper).

A search runs *trials*; each trial builds a tree from the empty expression for
``iterations_per_trial`` iterations, then the tree is reset (the policy may have changed in
between: expert iteration). One iteration:

1. **selection**: from the root, follow the child maximising equation 3,
   ``V(f') + p_uct * P(f') * sqrt(sum_children N) / (1 + N(f'))``, to a leaf;
2. **expansion**: ask the policy for K mutations of the leaf and apply them; every new
   expression is evaluated (constants fitted per ``constant_fitting``, Table 5) and offered
   to the Pareto archive; its first value is 1 when it solves the problem (R² >= 0.99), else
   the critic's estimate (or, for a policy without a critic, its own accuracy);
3. **back-propagation**: every ancestor adds the new values, times ``depth_decay ** distance``.

The pieces: :mod:`~dgsr.search.config` (hyper-parameters), :mod:`~dgsr.search.evaluator`
(scoring, caching and counting evaluations as CONTRACTS §2 says), :mod:`~dgsr.search.tree` (one
trial's tree) and :mod:`~dgsr.search.results`. This module runs trials until the budget is
spent. The search never imports torch or SymPy (CONTRACTS §5).
"""


from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.pareto import ParetoArchive
from dgsr.runtime.interrupts import INTERRUPTS, CtrlCWatch, is_interrupt
from dgsr.search.config import CONSTANT_FITTING_MODES, SearchConfig
from dgsr.search.evaluator import Evaluator
from dgsr.search.policy import Policy
from dgsr.search.results import SearchProgress, SearchResult, TrialRecord, history_point
from dgsr.search.scope import search_scope
from dgsr.search.tree import Trial, accuracy_value

__all__ = ["CONSTANT_FITTING_MODES", "SearchConfig", "SearchProgress", "SearchResult", "TrialRecord",
           "accuracy_value", "run_search"]

_PROGRESS_EVERY = 8  # iterations between progress callbacks (the display rate-limits itself)


def run_search(
    X: np.ndarray,
    y: np.ndarray,
    policy: Policy,
    *,
    config: SearchConfig | None = None,
    rng: np.random.Generator | int | None = None,
    budget: Budget | None = None,
    archive: ParetoArchive | None = None,
    on_progress: Callable[[SearchProgress], Any] | None = None,
    sample_weight: np.ndarray | None = None,
) -> SearchResult:
    """Search for expressions of the columns of ``X`` that fit ``y``.

    Parameters
    ----------
    X, y:
        Training rows ``[n_rows, n_features]`` and targets ``[n_rows]``, all finite.
    policy:
        The mutation policy (:class:`dgsr.search.policy.Policy`).
    config:
        Search hyper-parameters (default :class:`SearchConfig`).
    rng:
        Randomness of the search, the policy's sampling and the constant fits.
    budget:
        Evaluations / time / target R² (default: 100,000 evaluations).
    archive:
        A Pareto archive to continue (warm start); a new one otherwise.
    on_progress:
        Called every few iterations with a :class:`SearchProgress`.
    sample_weight:
        Non-negative row weights ``[n_rows]`` (None: equal): every loss and R² of the search,
        and its constant fits, are weighted by them.

    Returns
    -------
    SearchResult
        ``stop_reason`` is ``"evaluations"``, ``"time"``, ``"target"``, ``"trials"``,
        ``"exhausted"`` (``config.max_idle_trials`` trials in a row scored nothing new) or
        ``"interrupted"`` (Ctrl-C: the search returns what it found so far).
    """
    config = config or SearchConfig()
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    budget = (budget or Budget(max_evaluations=100_000)).start()
    archive = archive if archive is not None else ParetoArchive(config.rules, config.units)
    X, y, sample_weight = _training_data(X, y, sample_weight)
    evaluator = Evaluator(X, y, config, budget, archive, rng, sample_weight)
    trials = _Trials(X, y, policy, config, rng, budget, evaluator, on_progress)
    try:
        # Fewer collections, a Ctrl-C watch (a KeyboardInterrupt is caught below), one BLAS
        # thread and the structure memos, all put back after (dgsr.search.scope).
        with search_scope() as ctrl_c:
            trials.run(ctrl_c)
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        trials.stop_reason = "interrupted"
    return trials.result(archive)


class _Trials:
    """One search's trials and what they add up to: the history of improvements, the trial
    records, the mutation statistics, the iteration count and, once known, the stop reason."""

    def __init__(self, X: np.ndarray, y: np.ndarray, policy: Policy, config: SearchConfig,
                 rng: np.random.Generator, budget: Budget, evaluator: Evaluator,
                 on_progress: Callable[[SearchProgress], Any] | None):
        self.X, self.y, self.policy, self.config, self.rng = X, y, policy, config, rng
        self.budget, self.evaluator, self.on_progress = budget, evaluator, on_progress
        self.stats: Counter[str] = Counter()
        self.history: list[dict[str, float]] = []
        self.records: list[TrialRecord] = []
        self.n_iterations = 0
        self.idle = 0  # trials in a row that scored nothing new
        self.stop_reason: str | None = None

    def run(self, ctrl_c: CtrlCWatch) -> None:
        """Run trials until one of the budget's limits, ``max_trials``, ``max_idle_trials`` or a Ctrl-C."""
        for root in self.config.roots:  # the user's guesses join the archive, constants fitted, first
            self.evaluator.score(root, fit=True)
        while self.stop_reason is None:
            trial = len(self.records)
            if self.config.max_trials is not None and trial >= self.config.max_trials:
                self.stop_reason = "trials"
                break
            self._trial(trial, ctrl_c)

    def _trial(self, trial: int, ctrl_c: CtrlCWatch) -> None:
        config, evaluator = self.config, self.evaluator
        trial_rng = np.random.default_rng(self.rng.integers(2**63))
        roots = config.roots
        root = roots[trial % (len(roots) + 1)] if roots and trial % (len(roots) + 1) < len(roots) else None
        search = Trial(trial, self.policy, self.policy.prepare(self.X, self.y, trial_rng), evaluator, config,
                       trial_rng, self.stats, root)
        self.records.append(search.record)
        fit_now = config.constant_fitting == "all"
        while search.iterations < config.iterations_per_trial:
            self.stop_reason = "interrupted" if ctrl_c.seen else self.budget.exhausted(evaluator.best_r2)
            if self.stop_reason is not None or search.root.terminal:
                break
            search.iterate(fit_now)
            self.n_iterations += 1
            self.record_history(trial)
            if search.iterations % _PROGRESS_EVERY == 0:
                self.progress(trial + 1)
        search.finish()
        search.release()
        self.record_history(trial)
        self.idle = self.idle + 1 if search.record.evaluations == 0 else 0
        if self.stop_reason is None and config.max_idle_trials is not None and self.idle >= config.max_idle_trials:
            self.stop_reason = "exhausted"

    def record_history(self, trial: int) -> None:
        """A history point when the best R² improved."""
        evaluator = self.evaluator
        if not self.history or evaluator.best_r2 > self.history[-1]["best_r2"]:
            self.history.append(history_point(self.budget.evaluations, self.budget.elapsed, evaluator.best_r2,
                                              evaluator.best_size, trial))

    def progress(self, trial: int) -> None:
        if self.on_progress is not None:
            self.on_progress(SearchProgress(self.budget.elapsed, self.budget.evaluations, self.evaluator.best_r2,
                                            self.evaluator.best_size, trial))

    def result(self, archive: ParetoArchive) -> SearchResult:
        """The search's result, once it stopped (the stop reason completed from the budget)."""
        self.record_history(len(self.records))
        if self.stop_reason is None:
            self.stop_reason = self.budget.exhausted(self.evaluator.best_r2) or "trials"
        self.progress(len(self.records))
        return SearchResult(archive=archive, best=archive.best(), n_evaluations=self.budget.evaluations,
                            n_trials=len(self.records), n_iterations=self.n_iterations, elapsed=self.budget.elapsed,
                            stop_reason=self.stop_reason, history=self.history, mutation_stats=dict(self.stats),
                            trials=self.records)


def _training_data(X: Any, y: Any, sample_weight: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``X``, ``y`` and the row weights as float arrays of matching shapes (ValueError otherwise)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be [n_rows, n_features] and y [n_rows]; got {X.shape} and {y.shape}")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != y.shape:
            raise ValueError(f"sample_weight must have shape {y.shape}, got {sample_weight.shape}")
    return X, y, sample_weight
