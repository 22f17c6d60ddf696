"""The fitted front as people read it: the ``equations_`` table (simplified by SymPy within a time
cap, in the user's column names and units) and a row as text.

The functions take the fitted values they read; the estimator keeps the simplified rows and
the seconds left for simplifying between calls (``SymbolicRegressor._simplified_rows``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd
import sympy

from dgsr.core.display import FrontTable, equation_text
from dgsr.core.exponent_scaling import Scaling
from dgsr.core.expression import Expression
from dgsr.core.pareto import front_scores
from dgsr.core.simplify import complexity, simplify
from dgsr.estimator.front import FrontEntry

# Total seconds of SymPy simplification for the whole front, and per expression.
_SIMPLIFY_TOTAL, _SIMPLIFY_EACH = 10.0, 1.0
DIGITS = 4  # significant digits of constants in the displayed equations


def simplify_seconds(max_time: float | None, start: float) -> float:
    """Seconds of SymPy simplification allowed: at most 10, and within max_time when possible."""
    if max_time is None:
        return _SIMPLIFY_TOTAL
    left = max_time - (time.perf_counter() - start)
    return max(min(_SIMPLIFY_TOTAL, left), 0.5)


def equations_table(entries: Sequence[FrontEntry], scaling: Scaling, best_index: int,
                    exprs: dict[int, sympy.Expr]) -> pd.DataFrame:
    """The ``equations_`` table of the front ``entries`` whose rows simplified are ``exprs``: sizes
    and scores from the search's units (scale-free), losses in the user's units (``scaling``; a
    loss beyond the float range shows as inf or 0), ``best_index`` marked as selected."""
    rows = []
    for i, (e, score) in enumerate(zip(entries, front_scores(entries))):
        expr = exprs[i]
        rows.append({"complexity": e.size, "loss": scaling.unscale_loss(e.mse), "r2": e.r2, "score": float(score),
                     "equation": equation_text(expr, DIGITS), "sympy": expr,
                     "simplified_size": complexity(expr)})
    table = FrontTable(rows, columns=["complexity", "loss", "r2", "score", "equation", "sympy", "simplified_size"])
    table.selected_row = best_index
    return table


def simplify_rows(done: dict[int, sympy.Expr], rows: Sequence[int], expressions: Sequence[Expression],
                  names: Sequence[str], deadline: float) -> None:
    """Add ``rows`` of ``expressions`` (user units, variables ``x0..``) to ``done`` as SymPy in the
    column ``names``, simplified until ``deadline`` (a ``time.perf_counter()``), at most 1 s each."""
    # SymPy works on x0, x1, ... and the user's names come in last, so a column called E, I or
    # "a b" is only ever a Symbol's name, and simplification does not depend on the names.
    rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(str(n)) for i, n in enumerate(names)}
    for i in rows:
        if i in done:
            continue
        raw = expressions[i].to_sympy()
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        done[i] = (simplify(raw, timeout=cap) if cap > 0.05 else raw).xreplace(rename)


def equation_line(table: pd.DataFrame, i: int) -> str:
    """Row ``i`` of an ``equations_`` table as text (its ``equation``, else its SymPy form)."""
    column = table.get("equation")
    return str(column.iloc[i]) if column is not None else str(table["sympy"].iloc[i])
