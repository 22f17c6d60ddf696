"""The fitted front as people read it: the ``equations_`` table (simplified by SymPy within a time
cap, in the user's column names and units) and the selected row as SymPy or text."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pandas as pd
import sympy
from sklearn.utils.validation import check_is_fitted

from dgsr.core.display import FrontTable, equation_text
from dgsr.core.pareto import front_scores
from dgsr.core.simplify import complexity, round_floats, simplify
from dgsr.estimator.front import front_row
from dgsr.estimator.interrupts import note_interrupt
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

# Total seconds of SymPy simplification for the whole front, and per expression.
_SIMPLIFY_TOTAL, _SIMPLIFY_EACH = 10.0, 1.0
DIGITS = 4  # significant digits of constants in the displayed equations


def simplify_seconds(max_time: float | None, start: float) -> float:
    """Seconds of SymPy simplification allowed: at most 10, and within max_time when possible."""
    if max_time is None:
        return _SIMPLIFY_TOTAL
    left = max_time - (time.perf_counter() - start)
    return max(min(_SIMPLIFY_TOTAL, left), 0.5)


def equations_table(est: Any) -> pd.DataFrame:
    """``est``'s ``equations_``: every front row simplified (:func:`simplified_rows`), with its
    sizes and scores from the search's units (scale-free) and losses in the user's units (a loss
    beyond the float range shows as inf or 0)."""
    entries = est._front
    exprs = simplified_rows(est, range(len(entries)))
    rows = []
    for i, (e, score) in enumerate(zip(entries, front_scores(entries))):
        expr = exprs[i]
        rows.append({"complexity": e.size, "loss": est._scaling.unscale_loss(e.mse), "r2": e.r2, "score": float(score),
                     "equation": equation_text(expr, DIGITS), "sympy": expr,
                     "simplified_size": complexity(expr)})
    table = FrontTable(rows, columns=["complexity", "loss", "r2", "score", "equation", "sympy", "simplified_size"])
    table.selected_row = est.best_index_
    return table


def built_table(est: Any) -> pd.DataFrame | None:
    """``est``'s ``equations_`` table if it exists already (built, set, or stored by a pickle of
    0.9.0 and earlier, which kept the table itself under ``equations_``), else None."""
    table = est.__dict__.get("_equations")
    return est.__dict__.get("equations_") if table is None else table


def simplified_rows(est: Any, rows: Iterable[int]) -> dict[int, sympy.Expr]:
    """Rows of ``est``'s front as SymPy in the user's column names, simplified within the
    seconds ``fit`` left for it (``_simplify_seconds``, spent as they are used) and kept, so
    ``sympy()`` of one row and the whole table agree. A first Ctrl-C while simplifying leaves
    the rest unsimplified (:mod:`dgsr.estimator.interrupts`), a second one aborts."""
    done = est.__dict__.setdefault("_sympy_rows", {})
    todo = [i for i in rows if i not in done]
    try:
        _simplify_into(est, todo, done)
    except INTERRUPTS as err:
        if est._interrupted or not is_interrupt(err):
            raise
        note_interrupt(est, "simplification", "the constants are final")
        est._simplify_seconds = 0.0
        _simplify_into(est, todo, done)
    return done


def _simplify_into(est: Any, rows: list[int], done: dict[int, sympy.Expr]) -> None:
    deadline = time.perf_counter() + getattr(est, "_simplify_seconds", 0.0)
    # SymPy works on x0, x1, ... and the user's names come in last, so a column called E, I or
    # "a b" is only ever a Symbol's name, and simplification does not depend on the names.
    rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(str(n)) for i, n in enumerate(est.selected_features_)}
    try:
        for i in rows:
            if i in done:
                continue
            raw = est.expressions_[i].to_sympy()
            cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
            done[i] = (simplify(raw, timeout=cap) if cap > 0.05 else raw).xreplace(rename)
    finally:
        est._simplify_seconds = max(deadline - time.perf_counter(), 0.0)


def equation_sympy(est: Any, index: int | None = None, precision: int | None = None) -> sympy.Expr:
    """Row ``index`` (None: the selected one) of a fitted ``est`` as SymPy, constants rounded to
    ``precision`` significant digits (None: full precision). Simplifies that row alone when the
    ``equations_`` table is not built yet."""
    check_is_fitted(est, "expression_")
    row = front_row(est, index)
    table = built_table(est)
    expr = table["sympy"].iloc[row] if table is not None else simplified_rows(est, [row])[row]
    return expr if precision is None else round_floats(expr, precision)


def equation_line(est: Any, i: int) -> str:
    """Row ``i`` of ``est.equations_`` as text (its ``equation``, else its SymPy form)."""
    column = est.equations_.get("equation")
    return str(column.iloc[i]) if column is not None else str(est.equations_["sympy"].iloc[i])
