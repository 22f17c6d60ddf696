"""SymPy simplification for display: capped in time, and without the float noise its arithmetic
leaves (:mod:`dgsr.core.simplify`)."""

from __future__ import annotations

import numpy as np
import sympy

from dgsr.core.parser import parse
from dgsr.core.simplify import (
    complexity,
    display_order,
    exact_fractions,
    factors_into_roots,
    half_angles,
    merged_logs,
    multiplied_out,
    simplify,
    whole_numbers,
    without_float_noise,
)


def test_terms_left_by_float_arithmetic_are_dropped_and_the_model_stays():
    s, i = sympy.symbols("s i")
    noisy = (-1.4210854715202e-14 * i + 8.2 * s - 8.88178419700125e-16) / (4.16666666666667 * i + s + 0.5)
    assert without_float_noise(noisy) == 8.2 * s / (4.16666666666667 * i + s + 0.5)
    # small constants of the model itself: a factor, and a term far above the noise share
    m1, m2, r = sympy.symbols("m1 m2 r")
    gravity = 6.674e-11 * m1 * m2 / r**2 + 1e-9 * r
    assert without_float_noise(gravity) == gravity
    assert without_float_noise(sympy.Float(3e-20)) == sympy.Float(3e-20)  # a lone constant is no sum


def test_a_simplified_model_shows_no_float_noise_and_predicts_the_same():
    # A form the search returns for competitive inhibition: its constants cancel to float precision
    # when SymPy brings it over one denominator.
    expr = parse("8.2 - 22.7796/(x0/(1.5*x1 + 0.18) + 2.778)")
    shown = simplify(expr.to_sympy(), timeout=5.0)
    coefficients = [abs(float(c)) for c in shown.atoms(sympy.Float)]
    assert coefficients and min(coefficients) > 1e-6, shown
    x0, x1 = sympy.symbols("x0 x1")
    f, g = sympy.lambdify((x0, x1), shown), sympy.lambdify((x0, x1), expr.to_sympy())
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.05, 10, 50), rng.uniform(0.01, 1, 50)
    np.testing.assert_allclose(f(a, b), g(a, b), rtol=1e-12)


def test_whole_floats_left_by_simplifying_show_as_integers():
    # x/(0.5*y) simplifies to 2.0*x/y; a snapped 0.5 times a 2 gives 1.0*x.
    x, y = sympy.symbols("x y")
    assert simplify(x / (sympy.Float(0.5) * y), timeout=5.0) == 2 * x / y
    shown = whole_numbers(sympy.Float(1.0) * x + sympy.sqrt(sympy.Float(2.0) * y + 1) + sympy.Float(0.25) * y)
    assert shown == x + sympy.sqrt(2 * y + 1) + sympy.Float(0.25) * y
    assert not any(f == int(f) for f in shown.atoms(sympy.Float))
    huge = sympy.Float(1e300) * x  # a float beyond any integer people read stays as it is
    assert whole_numbers(huge) == huge
    # Float noise left by arithmetic on constants is whole too; a fitted 1.0001 or a tiny 1e-13 is not.
    assert whole_numbers(sympy.Float(0.9999999999999998) * x) == x
    assert whole_numbers(sympy.Float(1.0001) * x) == sympy.Float(1.0001) * x
    assert whole_numbers(sympy.Float(1e-13) * x) == sympy.Float(1e-13) * x


def _same_values(a: sympy.Expr, b: sympy.Expr, symbols, low: float = 0.5, high: float = 3.0,
                 atol: float = 0.0) -> None:
    rng = np.random.default_rng(1)
    points = [rng.uniform(low, high, 50) for _ in symbols]
    with np.errstate(all="ignore"):
        va, vb = sympy.lambdify(symbols, a)(*points), sympy.lambdify(symbols, b)(*points)
    np.testing.assert_allclose(va, vb, rtol=1e-12, atol=atol)


def test_a_positive_constant_moves_into_a_root_where_that_is_shorter():
    g, rho, a, c, d = sympy.symbols("G rho alpha c d")
    shown = factors_into_roots(sympy.sqrt(24 * sympy.pi * g * rho - 9 * a * c**2 / d**2) / 3)
    assert shown == sympy.sqrt(sympy.Rational(8, 3) * sympy.pi * g * rho - a * c**2 / d**2)
    fitted = sympy.Float(2.89440501823307) * sympy.sqrt(g * rho - sympy.Float(0.119366207318922) * a * c**2 / d**2)
    moved = whole_numbers(factors_into_roots(fitted))
    assert complexity(moved) < complexity(fitted) and moved.has(-a * c**2 / d**2)
    _same_values(moved, fitted, (g, rho, a, c, d), 1.0, 1.5)
    # A negative factor stays out (its root would be another number), and so does one that would lengthen it.
    assert factors_into_roots(-3 * sympy.sqrt(g + 1)) == -3 * sympy.sqrt(g + 1) or \
        complexity(factors_into_roots(-3 * sympy.sqrt(g + 1))) < complexity(-3 * sympy.sqrt(g + 1))
    _same_values(factors_into_roots(-3 * sympy.sqrt(g + 1)), -3 * sympy.sqrt(g + 1), (g,))
    assert factors_into_roots(5 * sympy.sqrt(g) + g) == 5 * sympy.sqrt(g) + g


def test_a_constant_moves_into_a_root_where_that_leaves_no_fitted_looking_constant():
    # 1.414*sqrt(a*b + 0.5) and sqrt(2*a*b + 1) have as many nodes; the second has no float that is not whole.
    a, b, t = sympy.symbols("a b theta")
    fitted = sympy.Float(1.41421356237309) * sympy.sqrt(a * b + sympy.Float(0.5)) * sympy.cos(t)
    moved = whole_numbers(factors_into_roots(fitted))
    assert moved == sympy.sqrt(2 * a * b + 1) * sympy.cos(t)
    _same_values(moved, fitted, (a, b, t), 0.5, 2.0)
    assert display_order(moved) < display_order(fitted)
    assert display_order(moved)[0] == complexity(moved) == complexity(fitted)
    # Of two forms with as many nodes and as many whole numbers, neither comes first.
    assert display_order(sympy.Float(0.3) * a) == display_order(sympy.Float(0.7) * a)
    # Fewer nodes always come first, floats or not.
    assert display_order(sympy.Float(0.37) * a) < display_order(2 * a + 1)


def test_a_column_moves_into_a_root_only_where_it_is_positive():
    w, c, d = sympy.symbols("omega c d")
    signed = sympy.sqrt(-sympy.pi**2 + d**2 * w**2 / c**2) / d  # the law only where d > 0
    assert factors_into_roots(signed) == signed
    shown = factors_into_roots(signed, frozenset({d}))
    assert shown == sympy.sqrt(w**2 / c**2 - sympy.pi**2 / d**2)
    _same_values(shown, signed, (w, c, d), 2.0, 4.0)
    # Shorter, but with a division more: m*v/sqrt(1 - v**2/c**2) is not shown as m/sqrt(v**-2 - c**-2).
    m, v = sympy.symbols("m v")
    momentum = m * v / sympy.sqrt(1 - v**2 / c**2)
    assert factors_into_roots(momentum, frozenset({m, v, c})) == momentum


def test_logs_of_positive_arguments_merge():
    a, b, n = sympy.symbols("a b n")
    merged = merged_logs(n * (sympy.log(b) - sympy.log(a)))
    assert complexity(merged) < complexity(n * (sympy.log(b) - sympy.log(a)))
    _same_values(merged, n * (sympy.log(b) - sympy.log(a)), (a, b, n))


def test_a_constant_minus_its_cosine_is_a_squared_sine_of_the_half_angle():
    e, t, h, x = sympy.symbols("E_n t h x")
    fitted = sympy.Float(0.5) - sympy.Float(0.5) * sympy.cos(sympy.Float(4 * np.pi) * e * t / h)
    shown = whole_numbers(half_angles(fitted))
    assert shown == sympy.sin(sympy.Float(2 * np.pi) * e * t / h) ** 2
    _same_values(shown, fitted, (e, t, h), atol=1e-14)  # 0.5 - 0.5*cos cancels near its zeros
    assert half_angles(3 + 3 * sympy.cos(x)) == 6 * sympy.cos(x / 2) ** 2
    assert half_angles(x + 1 - sympy.cos(2 * x)) == x + 2 * sympy.sin(x) ** 2
    assert half_angles(1 + 2 * sympy.cos(x)) == 1 + 2 * sympy.cos(x)  # no such pair: unchanged


def test_fractions_without_a_finite_decimal_show_exactly_at_float_noise():
    q = sympy.Symbol("q")
    assert exact_fractions(25 / (q + sympy.Float(0.0294117647058824))) == 25 / (q + sympy.Rational(1, 34))
    assert exact_fractions(sympy.Float(2 / 3) * q) == sympy.Rational(2, 3) * q
    kept = [sympy.Float(0.5) * q,  # a half reads well as a decimal
            sympy.Float(0.3333) * q,  # a fitted 0.3333 is not a third
            sympy.Float(200 / 9) * q,  # 22.22 reads better than 200/9
            sympy.Float(1 / (2 * np.pi)) * q,
            sympy.Float(6.674e-11) * q]
    for e in kept:
        assert exact_fractions(e) == e


def test_a_detour_whose_constants_cancel_to_float_noise_is_multiplied_out():
    h, r, c, k = sympy.symbols("H r c k")
    # A search's fitted constants (Feynman test_18): 1/(24*pi) and 2*pi/3 to 15 digits, so H's
    # linear term and the constant cancel to about 1e-15, not exactly.
    b, d = 0.0132629119243246, 2.0943951023932
    detour = (0.1 * c**2 * k + r**2 * (h + b * (3 * h - 4 * sympy.pi) ** 2 - d)) / r**2
    shown = multiplied_out(detour)
    numerator, denominator = sympy.fraction(shown)
    assert denominator == r**2 and not numerator.has(sympy.pi)
    assert sympy.Poly(numerator, h).degree() == 2 and sympy.Poly(numerator, h).coeff_monomial(h) == 0
    assert len(numerator.args) == 2 and complexity(shown) < complexity(detour)
    _same_values(shown, detour, (h, r, c, k), atol=1e-12)
    # nothing cancels: unchanged (a snapped pi stays pi, a factored form stays factored)
    x, y, a = sympy.symbols("x y a")
    for plain in (2 * sympy.pi * x / (y + 1), sympy.sin(x) / (y + sympy.Float(0.5)), y * (a * sympy.cos(x) + 1),
                  x / (y * (a + 1))):
        assert multiplied_out(plain) == plain


def test_a_tiny_coefficient_of_a_function_is_not_float_noise():
    # exp(-(x - 6.2)**2) with its square multiplied out is 2.1e-17*exp(12.4*x)*exp(-x**2): tiny
    # by its coefficient, large by its function where the peak is
    x = sympy.Symbol("x")
    peak = sympy.Float(7.8e-20) * sympy.exp(sympy.Float(14.6) * x) * sympy.exp(-sympy.Float(1.18) * x**2)
    assert without_float_noise(peak + sympy.Float(0.45)) == peak + sympy.Float(0.45)
    assert without_float_noise(sympy.Float(8.2) * x - sympy.Float(1.4e-14) * x**2) == sympy.Float(8.2) * x
    # at the data's typical values a term is judged by its size there, not by its coefficient
    t, lam = sympy.symbols("T lam")
    planck = sympy.Float(4.5e-12) * t**2 / lam**4 - sympy.Float(4.1e11)
    assert without_float_noise(planck) == -sympy.Float(4.1e11)  # each variable as 1
    assert without_float_noise(planck, [{"T": 5000.0, "lam": 1e-6}]) == planck
    noise = sympy.Float(2.0) * t - sympy.Float(3e-20) * t / lam**2  # 1.5e-4 beside 1e4 at lam = 1e-6
    assert without_float_noise(noise, [{"T": 5000.0, "lam": 1e-6}]) == noise
    assert without_float_noise(noise, [{"T": 5000.0, "lam": 1.0}]) == sympy.Float(2.0) * t
    gaussian = sympy.Float(0.45) + sympy.Float(3.4) * sympy.exp(-sympy.Float(1.17647) * (x - sympy.Float(6.2)) ** 2)
    _same_values(multiplied_out(gaussian), gaussian, (x,), low=4.0, high=8.0, atol=1e-12)


def test_float_exponents_that_are_halves_are_written_exactly():
    import sympy

    from dgsr.core.simplify import exact_half_exponents

    x, y = sympy.symbols("x y")
    assert exact_half_exponents((x + 1) ** sympy.Float(0.5)) == sympy.sqrt(x + 1)
    assert exact_half_exponents(x ** sympy.Float(1.4999999999999998)) == x ** sympy.Rational(3, 2)
    assert exact_half_exponents((1 + y ** sympy.Float(-0.5)) ** sympy.Float(2.0)) == (1 + 1 / sympy.sqrt(y)) ** 2
    assert exact_half_exponents(x ** sympy.Float(0.65)) == x ** sympy.Float(0.65)
    assert exact_half_exponents(x ** sympy.Float(1e-17) + 2) == x ** sympy.Float(1e-17) + 2  # not a half: not 0
