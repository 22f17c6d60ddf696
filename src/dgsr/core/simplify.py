"""SymPy simplification with a time cap, and SRBench's size measure.

SymPy never runs on the search's hot path (CONTRACTS §1); these functions serve the final
Pareto front, reports and the benchmark's size column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import sympy

from dgsr.runtime.time_cap import can_cap, run_capped

#: A term of a sum below this share of the sum's largest term (at the data's typical values) is
#: the rounding of float arithmetic, not a term of the model (``8.2*s - 1.4e-14*i``).
_FLOAT_NOISE = 1e-12
#: Values of the variables (by symbol name) at which the size of a sum's terms is judged: typical
#: values of the data's columns (:func:`dgsr.estimator.fit_front.column_magnitudes`). A variable not
#: named counts as 1.
Probes = Sequence[Mapping[str, float]]


def simplify(expr: sympy.Expr, timeout: float = 2.0, probes: Probes = ()) -> sympy.Expr:
    """``sympy.simplify`` capped at ``timeout`` seconds (the input if it runs over), without the
    float noise its arithmetic leaves (:func:`without_float_noise` at ``probes``), whole floats as
    integers (:func:`whole_numbers`)."""
    if timeout <= 0 or not can_cap():  # no cap possible (or wanted) here: cheaper rewriting only
        try:
            if expr.is_rational_function():
                return whole_numbers(without_float_noise(sympy.cancel(expr), probes))
            return expr
        except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs, e.g. zoo; keep the original)
            return expr
    try:
        finished, value = run_capped(lambda: sympy.simplify(expr), timeout)
    except Exception:  # noqa: BLE001  (as above)
        return expr
    return whole_numbers(without_float_noise(value, probes)) if finished else expr


def named_constants_as_floats(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with its named constants (pi, E) as 15-digit floats: they then combine with fitted
    floats in float arithmetic (and round like them, as SRBench's check does)."""
    return expr.xreplace({c: sympy.Float(c.evalf(15)) for c in expr.atoms(sympy.NumberSymbol)})


def multiplied_out(expr: sympy.Expr, timeout: float = 1.0, probes: Probes = ()) -> sympy.Expr:
    """``expr`` as one fraction with its numerator and denominator multiplied out, where that
    leaves terms of float noise to drop (:func:`without_float_noise` at ``probes``) and the result
    is smaller than ``expr`` with its multiples of pi as floats; else ``expr`` (also past ``timeout``
    seconds, or where SymPy fails). A search can reach a law through a detour whose constants
    cancel only to float noise (``H + 0.01326*(3*H - 4*pi)**2 - 2.094`` is ``0.1194*H**2``),
    which SymPy's simplification keeps. Where nothing cancels the form stays: multiplied out,
    ``beta*(alpha*cos(theta) + 1)`` has a node less and reads worse, and a snapped pi stays pi."""
    def multiply_out() -> sympy.Expr:
        numeric = named_constants_as_floats(expr)
        # power_exp=False: split, exp(-(x - 6.2)**2) is 2.1e-17*exp(12.4*x)*exp(-x**2)
        expanded = [sympy.expand(p, power_exp=False) for p in sympy.fraction(sympy.together(numeric))]
        cleaned = [without_float_noise(p, probes) for p in expanded]
        if cleaned == expanded:  # nothing cancelled: the form as simplified reads better
            return expr
        out = cleaned[0] / cleaned[1]
        return out if complexity(out) < complexity(numeric) else expr

    if timeout <= 0 or not can_cap():
        return expr
    try:
        finished, value = run_capped(multiply_out, timeout)
    except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs; keep the original)
        return expr
    return value if finished else expr


def whole_numbers(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with each float that is a whole number written as an integer: simplifying
    exact constants next to floats leaves ``1.0*x`` and ``sqrt(2.0*a + 1)``, which read as if a
    constant were fitted (and SymPy treats ``2.0`` and ``2`` apart). A float within float noise
    (:data:`_FLOAT_NOISE`, relative) of a nonzero integer is that integer: moving constants into a
    root leaves ``0.9999999999999998``."""
    def rewrite(e: sympy.Expr) -> sympy.Expr:
        replacements = {f: sympy.Integer(round(float(f))) for f in e.atoms(sympy.Float) if _is_whole(float(f))}
        return e.xreplace(replacements) if replacements else e

    return _or_unchanged(rewrite, expr)


def exact_half_exponents(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with each float exponent that is a nonzero multiple of a half, to float noise,
    written exactly: ``(m1 + m2)**0.5`` as ``sqrt(m1 + m2)``. A free exponent fitted or snapped to
    0.5 is a float, and SymPy merges, cancels and proves equal only exact powers."""

    def is_half(e: sympy.Expr) -> bool:
        if not (isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Float)):
            return False
        twice = 2 * float(e.exp)
        return math.isfinite(twice) and round(twice) != 0 and _near(twice, round(twice))

    return _or_unchanged(lambda e: e.replace(is_half, lambda p: p.base ** sympy.Rational(round(2 * float(p.exp)), 2)),
                         expr)


def exact_fractions(expr: sympy.Expr, max_denominator: int = 100) -> sympy.Expr:
    """``expr`` with each float that is a fraction without a finite decimal (``p/q``, ``p`` and ``q``
    at most ``max_denominator``, ``q`` not a product of 2s and 5s) to float noise written exactly:
    a fit to exact data returns ``0.0294117647058824`` for 1/34. Halves, quarters and fifths read
    well as decimals, and ``22.2222222222222`` better than ``200/9``: they stay."""

    def rewrite(e: sympy.Expr) -> sympy.Expr:
        replacements = {}
        for f in e.atoms(sympy.Float):
            value = float(f)
            if not (math.isfinite(value) and 1e-6 < abs(value) < 1e6):
                continue
            q = Fraction(value).limit_denominator(max_denominator)
            if (_finite_decimal(q.denominator) or abs(q.numerator) > max_denominator
                    or not _near(value, float(q))):
                continue
            replacements[f] = sympy.Rational(q.numerator, q.denominator)
        return e.xreplace(replacements) if replacements else e

    return _or_unchanged(rewrite, expr)


def _finite_decimal(denominator: int) -> bool:
    for p in (2, 5):
        while denominator % p == 0:
            denominator //= p
    return denominator == 1


def _is_whole(value: float) -> bool:
    if not (math.isfinite(value) and 0.5 <= abs(value) < 1e15):
        return False
    return _near(value, round(value))


def merged_powers(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with powers of one exponent merged (``sqrt(a)*sqrt(b)`` as ``sqrt(a*b)``), which
    holds where every base is non-negative: for a formula over positive columns, whose roots are
    real on its data. SymPy keeps them apart for positive symbols, and for others unless forced."""
    return _or_unchanged(lambda e: sympy.powsimp(e, force=True), expr)


def merged_logs(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with the logarithms of each sum merged (``log(b) - log(a)`` as ``log(b/a)``, with
    whole coefficients as powers), which holds where every argument is positive: for a formula
    over positive columns. A coefficient that is not a whole number stays outside its logarithm."""
    return _or_unchanged(lambda e: _bottom_up(e, _logs_of_sum_merged), expr)


def _logs_of_sum_merged(node: sympy.Expr) -> sympy.Expr:
    if not node.is_Add:
        return node
    inside, rest = [], []
    for term in node.args:
        k, factor = term.as_coeff_Mul()
        if isinstance(factor, sympy.log) and k.is_Integer:
            inside.append(sympy.Pow(factor.args[0], k))
        else:
            rest.append(term)
    return sympy.Add(*rest, sympy.log(sympy.Mul(*inside))) if len(inside) >= 2 else node


def half_angles(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with each ``c - c*cos(w)`` of a sum written ``2*c*sin(w/2)**2`` and each
    ``c + c*cos(w)`` written ``2*c*cos(w/2)**2`` (``c`` a number): the same function, and
    SymPy's simplification does not find it (``0.5 - 0.5*cos(2*x)`` stays as it is)."""
    return _or_unchanged(lambda e: _bottom_up(e, _half_angle_of_sum), expr)


def _half_angle_of_sum(node: sympy.Expr) -> sympy.Expr:
    if not node.is_Add:
        return node
    c, rest = node.as_coeff_Add()
    if c == 0:
        return node
    for term in sympy.Add.make_args(rest):
        k, factor = term.as_coeff_Mul()
        if not isinstance(factor, sympy.cos) or not _near(abs(float(k)), abs(float(c))):
            continue
        half = factor.args[0] / 2
        square = sympy.sin(half) ** 2 if (k < 0) == (c > 0) else sympy.cos(half) ** 2
        return sympy.Add(*[t for t in sympy.Add.make_args(rest) if t != term], 2 * c * square)
    return node


def _near(a: float, b: float) -> bool:
    """Whether ``a`` and ``b`` differ by float noise only (:data:`_FLOAT_NOISE`, relative)."""
    return abs(a - b) <= _FLOAT_NOISE * max(abs(a), abs(b))


def factors_into_roots(expr: sympy.Expr, positive: frozenset[sympy.Symbol] = frozenset()) -> sympy.Expr:
    """``expr`` with the factors of a product moved into a root of that product where the result
    is smaller (:func:`display_order`): ``sqrt(24*pi*G - 9*a)/3`` as ``sqrt(8*pi*G/3 - a)``, and, for symbols in
    ``positive``, ``sqrt(w**2 - pi**2*c**2)/c`` as ``sqrt(w**2/c**2 - pi**2)``. A factor ``k``
    enters ``B**p`` as ``k**(1/p)``, which is the same number for a positive ``k``: a positive
    constant, or a power of a positive symbol. A move that adds a division (``v*sqrt(...)`` as
    ``sqrt(v**-2*...)``) is not made, nor one that does not come first in :func:`display_order`
    (``1.414*sqrt(a + 0.5)`` as ``sqrt(2*a + 1)`` is: as short, no fitted-looking constant).
    The inverse of what SymPy's simplification does."""
    return _or_unchanged(lambda e: _bottom_up(e, lambda node: _product_into_roots(node, positive)), expr)


def _product_into_roots(expr: sympy.Expr, positive: frozenset[sympy.Symbol]) -> sympy.Expr:
    if not expr.is_Mul:
        return expr
    best, size = expr, display_order(expr)
    for root in (f for f in expr.args if _is_root(f)):
        current = best
        for factor in _movable(current, root, positive):
            rest = [f for f in sympy.Mul.make_args(current) if f != factor and f != root]
            base, p = root.base, root.exp
            moved = sympy.Pow(sympy.Add(*[sympy.Mul(t, sympy.Pow(factor, 1 / p)) for t in sympy.Add.make_args(base)]), p)
            trial = sympy.Mul(*rest, moved)
            if display_order(trial) < display_order(current) and _divisions(trial) <= _divisions(current):
                current, root = trial, moved
        if display_order(current) < size:
            best, size = current, display_order(current)
    return best


def _divisions(expr: sympy.Expr) -> int:
    """Powers with a negative exponent in ``expr``: moving ``v`` into ``1/sqrt(1 - v**2/c**2)`` gives
    the shorter ``1/sqrt(v**-2 - c**-2)``, which reads worse."""
    return sum(1 for e in sympy.preorder_traversal(expr) if e.is_Pow and e.exp.is_negative)


def _is_root(f: sympy.Expr) -> bool:
    return bool(f.is_Pow and f.exp.is_Rational and not f.exp.is_Integer)


def _movable(product: sympy.Expr, root: sympy.Expr, positive: frozenset[sympy.Symbol]) -> list[sympy.Expr]:
    """The factors of ``product`` other than ``root`` that are positive: a positive number, or a
    power of a symbol in ``positive``."""
    out = []
    for f in sympy.Mul.make_args(product):
        if f == root:
            continue
        base = f.base if f.is_Pow and f.exp.is_Rational else f
        if (f.is_Number and f.is_positive and f != 1) or (base.is_Symbol and base in positive):
            out.append(f)
    return out


def without_float_noise(expr: sympy.Expr, probes: Probes = ()) -> sympy.Expr:
    """``expr`` without the terms of each sum that are below 1e-12 of its largest term at every
    one of ``probes`` (typical values of the variables; without probes, each variable is 1):
    simplifying floats leaves such terms where constants cancel (``(-1.4e-14*i + 8.2*s -
    8.9e-16)/(4.17*i + s + 0.5)``). Only a term with a float coefficient can be noise, and never
    one with a function in it, which may be tiny by its coefficient and large by the function
    (``7.8e-20*exp(14.6*x)``, part of a peak). The probes keep a law's terms on data of extreme
    scales: ``4.5e-12*T**2/lam**4`` is no noise beside ``4.1e11`` where ``lam`` is near 1e-6."""
    points = [{sympy.Symbol(name): value for name, value in p.items()} for p in probes] or [{}]
    return _or_unchanged(lambda e: _bottom_up(e, lambda node: _without_noise_terms(node, points)), expr)


def _without_noise_terms(node: sympy.Expr, points: list[dict[sympy.Symbol, float]]) -> sympy.Expr:
    if not node.is_Add:
        return node
    candidates = [k for k, term in enumerate(node.args)
                  if term.as_coeff_Mul()[0].is_Float and not term.atoms(sympy.Function)]
    if not candidates:
        return node
    noise = set(candidates)
    for point in points:
        sizes = [_size_at(term, point) for term in node.args]
        largest = max(sizes)
        if largest is sympy.oo:  # a term of no finite size here: nothing is judged small beside it
            return node
        noise &= {k for k in candidates if sizes[k] < _FLOAT_NOISE * largest}
    if not noise:
        return node
    return sympy.Add(*(term for k, term in enumerate(node.args) if k not in noise))


def _size_at(term: sympy.Expr, point: dict[sympy.Symbol, float]) -> sympy.Expr:
    """``|term|`` with each variable at its value in ``point`` (by name; 1 where it has none), as a
    float of any exponent (SymPy's): inf where it has no finite real value there, so that such a
    term is never noise and no other term is noise beside it."""
    values = {s: sympy.Float(point.get(sympy.Symbol(s.name), 1.0)) for s in term.free_symbols}
    value = sympy.Abs(term.xreplace(values)).evalf(8)
    return value if value.is_Float and value.is_finite else sympy.oo


def _bottom_up(expr: sympy.Expr, rewrite) -> sympy.Expr:
    """``expr`` with ``rewrite`` applied to every node, children first."""
    if not expr.args:
        return expr
    args = [_bottom_up(a, rewrite) for a in expr.args]
    return rewrite(expr.func(*args) if args != list(expr.args) else expr)


def _or_unchanged(rewrite, expr: sympy.Expr) -> sympy.Expr:
    """``rewrite(expr)``, or ``expr`` where SymPy fails on it."""
    try:
        return rewrite(expr)
    except Exception:  # noqa: BLE001  (SymPy raises assorted errors on exotic nodes it cannot rebuild)
        return expr


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


def display_order(expr: sympy.Expr) -> tuple[int, int]:
    """How two equal forms of a formula rank for display: the one of fewer nodes
    (:func:`complexity`), and of equal ones the one with fewer floats that are not whole numbers
    to float noise: ``sqrt(2*a + 1)`` before ``1.414*sqrt(a + 0.5)``, which reads as two fitted
    constants where there are none."""
    return complexity(expr), sum(1 for f in expr.atoms(sympy.Float) if not _is_whole(float(f)))
