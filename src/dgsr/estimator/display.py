"""The fitted front as people read it: the ``equations_`` table (simplified by SymPy within a time
cap, in the user's column names and units) and the selected row as SymPy or text."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import sympy
from sklearn.utils.validation import check_is_fitted

from dgsr.core.display import FrontTable, equation_text
from dgsr.core.exponent_scaling import Scaling
from dgsr.core.expression import Expression
from dgsr.core.interrupts import INTERRUPTS, is_interrupt
from dgsr.core.pareto import front_scores
from dgsr.core.simplify import complexity, round_floats, simplify
from dgsr.estimator.front import FrontEntry, front_row
from dgsr.estimator.interrupts import note_interrupt

# Total seconds of SymPy simplification for the whole front, and per expression.
_SIMPLIFY_TOTAL, _SIMPLIFY_EACH = 10.0, 1.0
DIGITS = 4  # significant digits of constants in the displayed equations


def simplify_seconds(max_time: float | None, start: float) -> float:
    """Seconds of SymPy simplification allowed: at most 10, and within max_time when possible."""
    if max_time is None:
        return _SIMPLIFY_TOTAL
    left = max_time - (time.perf_counter() - start)
    return max(min(_SIMPLIFY_TOTAL, left), 0.5)


def equations_table(est: Any, entries: list[FrontEntry], start: float) -> pd.DataFrame:
    """``est``'s ``equations_`` for ``entries``; a first Ctrl-C while simplifying gives the table
    unsimplified (:mod:`dgsr.estimator.interrupts`), a second one aborts."""
    seconds = 0.0 if est._interrupted else simplify_seconds(est.max_time, start)
    names = est.selected_features_
    try:
        return front_table(entries, est.expressions_, est._scaling, names, seconds)
    except INTERRUPTS as err:
        if est._interrupted or not is_interrupt(err):
            raise
        note_interrupt(est, "simplification", "the constants are final")
        return front_table(entries, est.expressions_, est._scaling, names, 0.0)


def front_table(entries: list[FrontEntry], user_exprs: list[Expression], scaling: Scaling, names: list[str],
                seconds: float) -> pd.DataFrame:
    """The ``equations_`` table: sizes and scores from the search's units (scale-free), equations
    and losses in the user's units (a loss beyond the float range shows as inf or 0)."""
    deadline = time.perf_counter() + seconds
    rows = []
    # SymPy works on x0, x1, ... and the user's names come in last, so a column called E, I or
    # "a b" is only ever a Symbol's name, and simplification does not depend on the names.
    rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(str(n)) for i, n in enumerate(names)}
    for e, user, score in zip(entries, user_exprs, front_scores(entries)):
        raw = user.to_sympy()
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        expr = (simplify(raw, timeout=cap) if cap > 0.05 else raw).xreplace(rename)
        rows.append({"complexity": e.size, "loss": scaling.unscale_loss(e.mse), "r2": e.r2, "score": float(score),
                     "equation": equation_text(expr, DIGITS), "sympy": expr,
                     "simplified_size": complexity(expr)})
    return FrontTable(rows, columns=["complexity", "loss", "r2", "score", "equation", "sympy", "simplified_size"])


def equation_sympy(est: Any, index: int | None = None, precision: int | None = None) -> sympy.Expr:
    """Row ``index`` (None: the selected one) of a fitted ``est`` as SymPy, constants rounded to
    ``precision`` significant digits (None: full precision)."""
    check_is_fitted(est, "expression_")
    expr = est.equations_["sympy"].iloc[front_row(est, index)]
    return expr if precision is None else round_floats(expr, precision)


def equation_line(est: Any, i: int) -> str:
    """Row ``i`` of ``est.equations_`` as text (its ``equation``, else its SymPy form)."""
    column = est.equations_.get("equation")
    return str(column.iloc[i]) if column is not None else str(est.equations_["sympy"].iloc[i])
