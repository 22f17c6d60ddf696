"""SymPy simplification with a time cap, and SRBench's size measure.

SymPy never runs on the search's hot path (CONTRACTS §1); these functions serve the final
Pareto front, reports and the benchmark's size column.
"""

from __future__ import annotations

import math

import sympy

from dgsr.runtime.time_cap import can_cap, run_capped

#: A term of a sum whose float coefficient is below this share of the sum's largest coefficient is
#: the rounding of float arithmetic, not a term of the model (``8.2*s - 1.4e-14*i``).
_FLOAT_NOISE = 1e-12


def simplify(expr: sympy.Expr, timeout: float = 2.0) -> sympy.Expr:
    """``sympy.simplify`` capped at ``timeout`` seconds (the input if it runs over), without the
    float noise its arithmetic leaves (:func:`without_float_noise`), whole floats as integers
    (:func:`whole_numbers`)."""
    if timeout <= 0 or not can_cap():  # no cap possible (or wanted) here: cheaper rewriting only
        try:
            return whole_numbers(without_float_noise(sympy.cancel(expr))) if expr.is_rational_function() else expr
        except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs, e.g. zoo; keep the original)
            return expr
    try:
        finished, value = run_capped(lambda: sympy.simplify(expr), timeout)
    except Exception:  # noqa: BLE001  (as above)
        return expr
    return whole_numbers(without_float_noise(value)) if finished else expr


def whole_numbers(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with each float that is a whole number written as an integer: simplifying
    exact constants next to floats leaves ``1.0*x`` and ``sqrt(2.0*a + 1)``, which read as if a
    constant were fitted (and SymPy treats ``2.0`` and ``2`` apart)."""
    try:
        replacements = {f: sympy.Integer(int(f)) for f in expr.atoms(sympy.Float)
                        if math.isfinite(float(f)) and abs(float(f)) < 1e15 and float(f) == int(float(f))}
        return expr.xreplace(replacements) if replacements else expr
    except Exception:  # noqa: BLE001  (an exotic node SymPy cannot rebuild: keep the expression as it is)
        return expr


def merged_powers(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with powers of one exponent merged (``sqrt(a)*sqrt(b)`` as ``sqrt(a*b)``), which
    holds where every base is non-negative: for a formula over positive columns, whose roots are
    real on its data. SymPy keeps them apart for positive symbols, and for others unless forced."""
    try:
        return sympy.powsimp(expr, force=True)
    except Exception:  # noqa: BLE001  (as above)
        return expr


def without_float_noise(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` without the terms of each sum whose float coefficient is below 1e-12 of the largest
    coefficient of that sum: simplifying floats leaves such terms where constants cancel
    (``(-1.4e-14*i + 8.2*s - 8.9e-16)/(4.17*i + s + 0.5)``). A model's own small constants
    (``6.674e-11*m1*m2/r**2``) are factors, or terms far above that share, and stay."""
    try:
        return _cleaned(expr)
    except Exception:  # noqa: BLE001  (an exotic node SymPy cannot rebuild: keep the expression as it is)
        return expr


def _cleaned(expr: sympy.Expr) -> sympy.Expr:
    if not expr.args:
        return expr
    args = [_cleaned(a) for a in expr.args]
    if expr.is_Add:
        coefficients = [term.as_coeff_Mul()[0] for term in args]
        largest = max(abs(float(c)) for c in coefficients)
        kept = [term for term, c in zip(args, coefficients) if not (c.is_Float and abs(float(c)) < _FLOAT_NOISE * largest)]
        if len(kept) < len(args):
            return sympy.Add(*kept)
    return expr.func(*args) if args != list(expr.args) else expr


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
