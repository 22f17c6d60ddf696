"""The fitted front's entries: scoring an expression on the training rows, tidying its constants,
keeping the non-dominated ones, and finding the row a caller asks for.

Everything here works in the search's units (data scaled by powers of two); the estimator maps
expressions back to the user's units for display (:mod:`dgsr.estimator.display`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from dgsr.core.evaluate import evaluate_columns, r2_score, weighted_mean, weighted_var
from dgsr.core.expression import Expression
from dgsr.core.formula_rules import FormulaRules
from dgsr.core.pareto import ParetoEntry
from dgsr.core.snapping import FLOOR, counted_rows, exact_value, indistinguishable

#: One expression of the final Pareto front (after refitting its constants on all rows): the
#: archive's entry type, under the name that estimators pickled by 0.10.0 and before refer to.
FrontEntry = ParetoEntry


def front_entry(expr: Expression, columns: np.ndarray, y: np.ndarray, y_var: float | None = None,
                w: np.ndarray | None = None) -> FrontEntry:
    """``expr`` scored on ``columns, y`` (weighted MSE and R²; an MSE that is not finite is inf)."""
    with np.errstate(all="ignore"):
        pred = evaluate_columns(expr, columns)
        mse = weighted_mean((pred - y) ** 2, w)
    if not math.isfinite(mse):
        mse = math.inf
    return FrontEntry(expr.size, expr, mse, r2_score(y, pred, y_var, w))


def admitted(entries: list[FrontEntry], rules: FormulaRules | None) -> list[FrontEntry]:
    """The entries that keep the user's ``rules``, each sized by its complexity (``entries``
    itself without rules). The search keeps only such expressions; this catches the ones the
    fit adds after it (the linear model, a warm start's kept structures)."""
    if rules is None:
        return entries
    return [dataclasses.replace(e, size=rules.complexity(e.expression)) for e in entries
            if rules.violation(e.expression) is None]


def best_of_each_size(entries: Iterable[FrontEntry]) -> dict[int, FrontEntry]:
    """The most accurate entry of each size (the first among equals), for
    :func:`dgsr.core.pareto.non_dominated`: refitting constants can make a small expression beat
    a larger one, which then drops out of the front."""
    best: dict[int, FrontEntry] = {}
    for e in entries:
        if e.size not in best or e.mse < best[e.size].mse:
            best[e.size] = e
    return best


def tidy_constants(expr: Expression, columns: np.ndarray, y: np.ndarray,
                   digits: int = 4, tolerance: float = 1e-9, w: np.ndarray | None = None) -> tuple[Expression, int]:
    """Zero negligible constants and round the others to ``digits`` significant digits where that
    costs (almost) nothing: ``6.674*m1*(m2 + 1.2e-10)`` becomes ``6.674*m1*(m2 + 0)``, which SymPy
    then shows as ``6.674*m1*m2``. A constant that is a third or a multiple of pi to the last bit
    (snapped: :func:`dgsr.core.snapping.exact_value`) keeps its value: rounded, ``pi**2`` would
    show as ``9.87``, a different number to SymPy.

    A change is kept when the training MSE grows by at most ``tolerance`` relative to the
    variance of ``y`` (an R² loss below 1e-9), and by no more than the snapping's likelihood-ratio
    test allows (:func:`dgsr.core.snapping.indistinguishable`): on rows without noise an exact
    fit stays exact to float noise, so ``1/(8*pi)`` is not rounded to ``0.03979`` where its term
    is small. Returns the expression and the evaluations spent.
    """
    y_var = weighted_var(y, w)
    scale = y_var if y_var > 0 else 1.0
    slack = tolerance * scale
    n = counted_rows(y, w)

    def mse_of(candidate: Expression) -> float:
        with np.errstate(all="ignore"):
            value = weighted_mean((evaluate_columns(candidate, columns) - y) ** 2, w)
        return value if math.isfinite(value) else math.inf

    start = mse_of(expr)
    if not math.isfinite(start):  # undefined on the rows: the polish drops it, nothing to tidy
        return expr, 1
    limit = start + slack

    def harmless(candidate: Expression) -> bool:
        mse = mse_of(candidate)
        return mse <= limit and indistinguishable(mse, start, n, FLOOR * scale)

    spent = 1
    values = list(expr.constants)
    exact = {i for i, v in enumerate(values) if exact_value(v) is not None}
    # All at once first: constants that cancel (c - 206.0157 + 206.0157) round together.
    rounded = [v if i in exact else float(f"{v:.{digits}g}") for i, v in enumerate(values)]
    if rounded != values:
        spent += 1
        if harmless(expr.with_constants(rounded)):
            values = rounded
    for i in sorted(range(len(values)), key=lambda j: abs(values[j])):
        for candidate in (0.0,) if i in exact else (0.0, float(f"{values[i]:.{digits}g}")):
            if candidate == values[i]:
                break
            trial = values[:i] + [candidate] + values[i + 1:]
            spent += 1
            if harmless(expr.with_constants(trial)):
                values = trial
                break
    return expr.with_constants(values), spent


def front_row(n_rows: int, best_index: int, index: int | None) -> int:
    """Row of a front of ``n_rows`` entries that ``index`` names (None: the selected one,
    ``best_index``); IndexError if none."""
    if index is None:
        return best_index
    n = n_rows
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not -n <= index < n:
        raise IndexError(f"index must be an integer row of equations_ (0..{n - 1}), got {index!r}")
    return int(index) % n
