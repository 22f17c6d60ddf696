"""How one fit shares ``max_time`` and ``max_evaluations`` out, computed once (:func:`plan_budget`).

The search gets the budget less what is kept back for the steps after it:

- the polish (refitting the front's constants on all rows): 5% of the evaluations and of
  the time (at most 5 s);
- with more than :data:`~dgsr.estimator.large_data.REFIT_ROWS` rows (batching), the scoring of
  every front entry on all rows after the polish: ``scoring_seconds``, as timed on this machine
  before the search (:func:`dgsr.estimator.large_data.scoring_seconds`), at most a fifth of the time;
- the ``"cv"`` check of the pick (:mod:`dgsr.estimator.cross_validation`), where it runs: at most
  400 evaluations (measured: about 190 for a 14-expression front on 750 rows, docs/DESIGN.md) and
  at most a fifth of ``max_evaluations``; a check that runs out leaves the pick as it is;
- the fold searches of the whole-search check (:mod:`dgsr.estimator.search_cv`), where it runs:
  half (:data:`~dgsr.estimator.search_cv.SEARCH_CV_SHARE`) of what the search would have had,
  in time and in evaluations. They end 3% of ``max_time`` before it (each fold search overruns
  its own time by a little: checks, polish, predictions). When the search's front fits the rows
  without noise the fold searches are skipped and a continuation of the search gets their share.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.search_cv import SEARCH_CV_SHARE

# Share of the budget kept back from the search for refitting the front's constants on all rows.
_POLISH_TIME_SHARE, _POLISH_TIME_MAX = 0.05, 5.0
_POLISH_EVAL_SHARE = 0.05
#: The largest share of ``max_time`` kept for scoring the front on all rows.
_SCORING_TIME_SHARE_MAX = 0.2
#: Evaluations kept back for the ``"cv"`` check where it runs: at most this many, and at most this
#: share of ``max_evaluations``.
_CV_EVALS, _CV_EVAL_SHARE_MAX = 400.0, 0.2
#: The fold searches of the whole-search check end this share of ``max_time`` before it.
_SEARCH_CV_TIME_MARGIN = 0.03


@dataclass(frozen=True)
class BudgetPlan:
    """Every carve-out of one fit's budget (None: that limit is not set).

    Attributes
    ----------
    start:
        ``time.perf_counter()`` when the fit began; the time limits count from it.
    max_time, max_evaluations:
        The fit's whole budget.
    search_time_end:
        Seconds after ``start`` by which the search ends (``max_time`` less the polish's share).
    search_time_share:
        Share of the time left to ``search_time_end`` that the first search gets (the rest is
        the fold searches').
    search_evaluations:
        Evaluations of the first search (before anything is spent).
    continuation_evaluations:
        Evaluations of the search and its continuation together, where the fold searches are
        skipped: all but the polish's and the ``"cv"`` check's.
    cv_evaluations:
        Kept back for the ``"cv"`` check (0 where it does not run).
    fold_evaluations:
        Kept back for the fold searches (0 where they do not run).
    fold_deadline:
        ``time.perf_counter()`` by which the fold searches end.
    scoring_seconds:
        Kept back after the polish for scoring the front on all rows (0 unless the refit uses a sample).
    """

    start: float
    max_time: float | None
    max_evaluations: int | None
    search_time_end: float | None
    search_time_share: float
    search_evaluations: float | None
    continuation_evaluations: float | None
    cv_evaluations: float
    fold_evaluations: float
    fold_deadline: float | None
    scoring_seconds: float = 0.0

    def search_time(self, continuation: bool = False) -> float | None:
        """Seconds the search (or its ``continuation``, which has the fold searches' share too) may run from now."""
        if self.search_time_end is None:
            return None
        share = 1.0 if continuation else self.search_time_share
        return share * max(self.search_time_end - (time.perf_counter() - self.start), 0.0)

    def search_evaluation_limit(self, spent: float | None = None) -> int | None:
        """Evaluations of the search, or of its continuation after ``spent`` (the fold searches' share too)."""
        if self.max_evaluations is None:
            return None
        if spent is None:
            return max(1, int(self.search_evaluations))
        return max(1, int(self.continuation_evaluations - spent))

    def polish_reserve(self, continued: bool) -> float:
        """Evaluations the polish leaves for what follows it (none for fold searches a continued search spent)."""
        return self.cv_evaluations + (0.0 if continued else self.fold_evaluations)

    def evaluations_left(self, spent: float, keep: float = 0.0) -> float:
        """Evaluations of ``max_evaluations`` left after ``spent``, less ``keep`` (inf without that limit)."""
        return math.inf if self.max_evaluations is None else self.max_evaluations - spent - keep

    def time_left(self) -> float:
        """Seconds of ``max_time`` left now for the polish and checks (inf without that limit): what
        is kept for scoring on all rows is not theirs."""
        if self.max_time is None:
            return math.inf
        return self.max_time - self.scoring_seconds - (time.perf_counter() - self.start)


def plan_budget(config: FitConfig, n_rows: int, start: float, scoring_seconds: float = 0.0) -> BudgetPlan:
    """The shares of ``config``'s budget for a fit that searches ``n_rows`` rows and began at
    ``start``; ``scoring_seconds``: the expected time of scoring the front on all rows (large data)."""
    max_time, max_evals = config.max_time, config.max_evaluations
    checks = config.cross_validates(n_rows)
    folds = config.cross_validates_search(n_rows)
    cv_evals = min(_CV_EVALS, _CV_EVAL_SHARE_MAX * max_evals) if max_evals is not None and checks else 0.0
    fold_evals = 0.0
    if max_evals is not None and folds:
        fold_evals = SEARCH_CV_SHARE * (max_evals * (1.0 - _POLISH_EVAL_SHARE) - cv_evals)
    search_time_end = None
    if max_time is not None:
        search_time_end = max_time - min(_POLISH_TIME_SHARE * max_time, _POLISH_TIME_MAX)
        scoring_seconds = min(scoring_seconds, _SCORING_TIME_SHARE_MAX * max_time)
        search_time_end -= scoring_seconds
    search_evals = continuation_evals = None
    if max_evals is not None:
        # Kept in this association: the shares are the same floats as when they were computed in place.
        continuation_evals = max_evals * (1.0 - _POLISH_EVAL_SHARE) - cv_evals - 0.0
        search_evals = max_evals * (1.0 - _POLISH_EVAL_SHARE) - cv_evals - fold_evals
    return BudgetPlan(
        start=start, max_time=max_time, max_evaluations=max_evals, search_time_end=search_time_end,
        search_time_share=1.0 - SEARCH_CV_SHARE if folds else 1.0, search_evaluations=search_evals,
        continuation_evaluations=continuation_evals, cv_evaluations=cv_evals, fold_evaluations=fold_evals,
        fold_deadline=None if max_time is None else start + max_time * (1.0 - _SEARCH_CV_TIME_MARGIN),
        scoring_seconds=scoring_seconds if max_time is not None else 0.0)
