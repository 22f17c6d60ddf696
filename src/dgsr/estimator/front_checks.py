"""Choosing among the refitted front on rows the search did not choose it on: the held-out rows
of ``model_selection="validation"`` (:func:`validated`), or ``"cv"``'s check of the pick with the
whole-search size limit on small data (:func:`cross_validated`). Both return an :class:`Outcome`
for :func:`dgsr.estimator.model_selection.choose_entry`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.evaluate import as_columns, weighted_var
from dgsr.core.pareto import select
from dgsr.estimator.budget_plan import BudgetPlan
from dgsr.estimator.cross_validation import cross_validated_choice, fold_labels, out_of_fold_errors
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.front import FrontEntry, front_entry
from dgsr.estimator.interrupts import FitLedger
from dgsr.estimator.model_selection import squared_errors, validation_choice
from dgsr.estimator.polish import polish
from dgsr.estimator.search_cv import size_limit
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

#: Share of var(y) below which the front treats two losses as equal (an R² difference under 1e-15).
_EXACT_FIT_FLOOR = 1e-15

Split = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Outcome:
    """The refitted front, the index chosen on held-out rows (None: the caller's rule picks), those
    rows' squared errors (``[n_entries, n_rows]``, None without them; entries above the size
    limit have inf), the held-out loss per entry (search units) and the whole-search size limit."""

    entries: list[FrontEntry]
    chosen: int | None = None
    errors: np.ndarray | None = None
    losses: np.ndarray | None = None
    size_limit: int | None = None


def exact_fit_floor(y: np.ndarray, w: np.ndarray | None) -> float:
    """Losses closer than this are float noise (two exact fits): 1e-15 of var(y), 0 if that is not finite."""
    floor = _EXACT_FIT_FLOOR * weighted_var(y, w)
    return floor if math.isfinite(floor) else 0.0


def validated(entries: list[FrontEntry], split: Split, X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
              rng: np.random.Generator, plan: BudgetPlan, ledger: FitLedger, snap: bool = True) -> Outcome:
    """The front searched on ``split[0]`` with the entry the validation rows ``split[1]`` choose
    (the smallest within one standard error of the lowest loss), its constants refitted on all
    rows, and every entry scored on all rows. Refitting keeps each structure, so each entry keeps
    its size (a complexity, with the user's weights); ``snap``: as :func:`~dgsr.estimator.polish.polish`."""
    w_val = w[split[1]] if w is not None else None
    errors = squared_errors([e.expression for e in entries], X[split[1]], y[split[1]], w_val)
    chosen = validation_choice(errors, floor=exact_fit_floor(y[split[1]], w_val))
    refit = polish([entries[chosen].expression], as_columns(X), y, rng, plan, ledger, w, snap=snap)
    if refit:
        entries[chosen] = dataclasses.replace(refit[0], size=entries[chosen].size)
    all_columns, y_var = as_columns(X), weighted_var(y, w)
    entries = [dataclasses.replace(front_entry(e.expression, all_columns, y, y_var, w), size=e.size)
               for e in entries]
    return Outcome(entries, chosen, errors, losses=errors.mean(axis=1))


def cross_validated(config: FitConfig, entries: list[FrontEntry], X: np.ndarray, y: np.ndarray,
                    w: np.ndarray | None, rng: np.random.Generator, plan: BudgetPlan, ledger: FitLedger,
                    policy: Any = None) -> Outcome:
    """The front, with ``"cv"``'s choice among it when the data are small enough to check
    (:mod:`dgsr.estimator.cross_validation`), bounded by the size limit of the whole-search check
    on tiny data (:mod:`dgsr.estimator.search_cv`, its fold searches seeded by the search's
    ``policy``); otherwise the caller's rule picks."""
    n_rows = len(y)
    if not entries or not config.cross_validates(n_rows) or ledger.interrupted:
        return Outcome(entries)
    pick = int(select(entries, "balanced"))
    labels = fold_labels(n_rows, rng)
    try:
        errors, spent = out_of_fold_errors([e.expression for e in entries], as_columns(X), y, labels, rng, w,
                                           max_evaluations=plan.evaluations_left(ledger.evaluations))
    except INTERRUPTS as err:  # Ctrl-C while cross-validating: the training-loss rule picks
        if not is_interrupt(err):
            raise
        ledger.note_interrupt("cross-validation", "the 'balanced' rule picks on training loss")
        return Outcome(entries)
    ledger.evaluations += spent
    if errors is None:  # the evaluation budget ran out first: the training-loss rule picks
        return Outcome(entries)
    losses = errors.mean(axis=1)
    floor = exact_fit_floor(y, w)  # two exact laws: rounding noise must not choose between them
    limit = None
    if config.cross_validates_search(n_rows):
        limit = _size_limit(config, entries, X, y, w, rng, plan, ledger, policy)
        if limit is not None:
            within = np.array([e.size <= limit for e in entries])
            # Entries above the limit leave the running: every later choice (the undersampled
            # waves, the poles) reads these errors.
            errors = np.where(within[:, None], errors, np.inf)
            kept = np.flatnonzero(within)
            pick = pick if within[pick] else int(kept[select([entries[i] for i in kept], "balanced")])
    return Outcome(entries, cross_validated_choice(errors, pick, floor), errors, losses, limit)


def _size_limit(config: FitConfig, entries: list[FrontEntry], X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
                rng: np.random.Generator, plan: BudgetPlan, ledger: FitLedger, policy: Any) -> int | None:
    """:func:`dgsr.estimator.search_cv.size_limit` within what is left of the budget (None when
    nothing is left, or after a Ctrl-C in it)."""
    evals_left = None if plan.max_evaluations is None else plan.max_evaluations - ledger.evaluations
    try:
        limit, spent, interrupted = size_limit(config, entries, X, y, w, rng, plan.fold_deadline, evals_left, policy)
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        limit, spent, interrupted = None, 0.0, True
    if interrupted:
        ledger.note_interrupt("the search's cross-validation", "no size limit is applied")
    ledger.evaluations += spent
    return limit
