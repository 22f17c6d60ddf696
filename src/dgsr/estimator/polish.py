"""Refitting the constants of the searched front on all training rows, within what is left of
the budget (the search fits them on 256-row subsets, with a 1 s cap each).

Evaluations spent here count in the estimator's ``n_evaluations_``; a Ctrl-C here keeps the
constants as the search found them (:mod:`dgsr.estimator.interrupts`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import weighted_var
from dgsr.core.expression import Expression
from dgsr.estimator.front import FrontEntry, front_entry, tidy_constants
from dgsr.estimator.interrupts import note_interrupt
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

# Refit cap per expression (the search's own fits stop at 1 s, Appendix E.2); longer here since
# it runs once per front entry, on all rows.
_POLISH_SECONDS = 2.0


def polish(est: Any, exprs: list[Expression], columns: np.ndarray, y: np.ndarray,
           rng: np.random.Generator, start: float, w: np.ndarray | None = None, keep: float = 0.0
           ) -> list[FrontEntry]:
    """``exprs`` with their constants refitted and tidied on ``columns, y``, scored; entries whose
    loss is not finite are dropped. ``start`` is when ``fit`` began (for ``est.max_time``);
    ``keep`` evaluations of ``est.max_evaluations`` are left for what follows (the ``"cv"`` check)."""
    y_var = weighted_var(y, w)
    evals_left = math.inf
    if est.max_evaluations is not None:
        evals_left = est.max_evaluations - est.n_evaluations_ - keep
    entries = []
    for i, expr in enumerate(exprs):
        if not est._interrupted:
            try:
                expr, evals_left = _polish_one(est, expr, columns, y, rng, start, w, y_var, evals_left,
                                               len(exprs) - i)
            except INTERRUPTS as err:  # Ctrl-C while polishing: keep what was searched
                if not is_interrupt(err):
                    raise
                note_interrupt(est, "constant polishing", "the remaining constants are as the search found them",
                               stacklevel=6)
        entries.append(front_entry(expr, columns, y, y_var, w))
    return [e for e in entries if math.isfinite(e.mse)]


def _polish_one(est: Any, expr: Expression, columns: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                start: float, w: np.ndarray | None, y_var: float, evals_left: float,
                n_left: int) -> tuple[Expression, float]:
    """Refit and tidy one expression's constants; returns it and the evaluations left."""
    time_left = math.inf
    if est.max_time is not None:
        time_left = est.max_time - (time.perf_counter() - start)
    if expr.n_constants and evals_left >= 2 and time_left > 0:
        cap = min(_POLISH_SECONDS, time_left / n_left)
        fit = fit_constants(expr, columns, y, rng=rng, time_limit=cap, batch_size=columns.shape[1],
                            y_var=y_var, max_iter=int(min(200, max(evals_left / 2, 1))),
                            max_evaluations=evals_left, sample_weight=w)
        evals_left -= fit.evaluations
        est.n_evaluations_ += fit.evaluations
        if fit.improved and fit.r2 > -math.inf:
            expr = fit.expression
    if expr.n_constants and evals_left >= 2 * expr.n_constants + 2:  # tidy_constants's most
        expr, spent = tidy_constants(expr, columns, y, w=w)
        evals_left -= spent
        est.n_evaluations_ += spent
    return expr, evals_left
