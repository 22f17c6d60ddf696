"""Refitting the constants of the searched front on all training rows, within what is left of
the budget (the search fits them on 256-row subsets, with a 1 s cap each).

Evaluations spent here count in the fit's ledger (``n_evaluations_``); a Ctrl-C here keeps the
constants as the search found them (:mod:`dgsr.estimator.interrupts`).
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import weighted_var
from dgsr.core.expression import Expression
from dgsr.core.snapping import snap_constants
from dgsr.estimator.budget_plan import BudgetPlan
from dgsr.estimator.front import FrontEntry, front_entry, tidy_constants
from dgsr.estimator.interrupts import FitLedger
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

# Refit cap per expression (the search's own fits stop at 1 s, Appendix E.2); longer here since
# it runs once per front entry, on all rows.
_POLISH_SECONDS = 2.0
#: Evaluations per constant that snapping may spend at most (eight simple values, each refitted).
_SNAP_EVALUATIONS = 57


def polish(exprs: list[Expression], columns: np.ndarray, y: np.ndarray, rng: np.random.Generator,
           plan: BudgetPlan, ledger: FitLedger, w: np.ndarray | None = None, keep: float = 0.0,
           snap: bool = True) -> list[FrontEntry]:
    """``exprs`` with their constants refitted, snapped to simple values where the rows allow
    (``snap``, :func:`~dgsr.core.snapping.snap_constants`) and tidied on ``columns, y``, scored;
    entries whose loss is not finite are dropped. Within ``plan``'s time and what ``ledger`` says
    is left of its evaluations, less ``keep`` (left for what follows: the ``"cv"`` check); the
    evaluations spent are added to ``ledger``, and nothing is refitted after a Ctrl-C it recorded."""
    y_var = weighted_var(y, w)
    evals_left = plan.evaluations_left(ledger.evaluations, keep)
    entries = []
    for i, expr in enumerate(exprs):
        if not ledger.interrupted:
            try:
                expr, evals_left = _polish_one(expr, columns, y, rng, plan, ledger, w, y_var, evals_left,
                                               len(exprs) - i, snap)
            except INTERRUPTS as err:  # Ctrl-C while polishing: keep what was searched
                if not is_interrupt(err):
                    raise
                ledger.note_interrupt("constant polishing", "the remaining constants are as the search found them")
        entries.append(front_entry(expr, columns, y, y_var, w))
    return [e for e in entries if math.isfinite(e.mse)]


def _polish_one(expr: Expression, columns: np.ndarray, y: np.ndarray, rng: np.random.Generator, plan: BudgetPlan,
                ledger: FitLedger, w: np.ndarray | None, y_var: float, evals_left: float,
                n_left: int, snap: bool) -> tuple[Expression, float]:
    """Refit, snap (``snap``) and tidy one expression's constants; returns it and the evaluations left."""
    time_left = plan.time_left()
    if expr.n_constants and evals_left >= 2 and time_left > 0:
        cap = min(_POLISH_SECONDS, time_left / n_left)
        fit = fit_constants(expr, columns, y, rng=rng, time_limit=cap, batch_size=columns.shape[1],
                            y_var=y_var, max_iter=int(min(200, max(evals_left / 2, 1))),
                            max_evaluations=evals_left, sample_weight=w)
        evals_left -= fit.evaluations
        ledger.evaluations += fit.evaluations
        if fit.improved and fit.r2 > -math.inf:
            expr = fit.expression
    if snap and expr.n_constants and evals_left >= _SNAP_EVALUATIONS * expr.n_constants and plan.time_left() > 0:
        expr, spent = snap_constants(expr, columns, y, w, max_evaluations=evals_left)
        evals_left -= spent
        ledger.evaluations += spent
    if expr.n_constants and evals_left >= 2 * expr.n_constants + 2:  # tidy_constants's most
        expr, spent = tidy_constants(expr, columns, y, w=w)
        evals_left -= spent
        ledger.evaluations += spent
    return expr, evals_left
