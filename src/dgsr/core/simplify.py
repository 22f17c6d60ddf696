"""SymPy simplification with a time cap, and SRBench's size measure.

SymPy never runs on the search's hot path (CONTRACTS §1); these functions serve the final
Pareto front, reports and the benchmark's size column.
"""

from __future__ import annotations

import math

import sympy

from dgsr.runtime.time_cap import can_cap, run_capped


def simplify(expr: sympy.Expr, timeout: float = 2.0) -> sympy.Expr:
    """``sympy.simplify`` capped at ``timeout`` seconds; the input is returned if it runs over."""
    if timeout <= 0 or not can_cap():  # no cap possible (or wanted) here: cheaper rewriting only
        try:
            return sympy.cancel(expr) if expr.is_rational_function() else expr
        except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs, e.g. zoo; keep the original)
            return expr
    try:
        finished, value = run_capped(lambda: sympy.simplify(expr), timeout)
    except Exception:  # noqa: BLE001  (as above)
        return expr
    return value if finished else expr


def round_floats(expr: sympy.Expr, digits: int = 4) -> sympy.Expr:
    """Round every float in ``expr`` to ``digits`` significant digits (for display and checks)."""
    replacements = {f: _round_float(f, digits) for f in expr.atoms(sympy.Float)}
    return expr.xreplace(replacements) if replacements else expr


def _round_float(f: sympy.Float, digits: int) -> sympy.Float:
    value = float(f)
    if value == 0.0 and f != 0 or not math.isfinite(value):
        return f.evalf(digits)  # beyond the float range (a user-unit constant such as 1e-400)
    return sympy.Float(float(f"{value:.{digits}g}"), digits)


def complexity(expr: sympy.Expr) -> int:
    """Number of nodes of the SymPy tree, as SRBench counts model size."""
    return sum(1 for _ in sympy.preorder_traversal(expr))
