"""Fitted constants snapped to simple values only where the fit's own rows cannot tell them apart
(:mod:`dgsr.core.snapping`)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.gradients import compile_expression
from dgsr.core.parser import parse as parse_expression
from dgsr.core.snapping import (
    exact_value,
    indistinguishable,
    merged_constants,
    scale_group,
    simple_values,
    snap_constants,
)
from dgsr.estimator.regressor import SymbolicRegressor


def _noisy(rng: np.random.Generator, y: np.ndarray, level: float = 0.01) -> np.ndarray:
    return y + level * math.sqrt(float(np.mean(y**2))) * rng.normal(size=len(y))


def test_simple_values_are_zero_then_the_near_simple_numbers_simplest_first():
    assert simple_values(0.5003) == [0.0, 0.5]
    assert simple_values(2.9) == [0.0, 3.0]  # 2.75 and 3*pi/4... are more than 5% away
    assert simple_values(3.1398) == [0.0, 3.0, 3.25, math.pi, math.pi**2 / 3]  # fractions before pi
    assert simple_values(-1.4999) == [0.0, -1.5, -math.pi / 2]
    assert simple_values(0.148) == [0.0]  # nothing simple near it but zero
    # multiples of pi**2 come after those of pi
    assert simple_values(9.8702) == [0.0, 10.0, 9.75, 3 * math.pi, 13 * math.pi / 4, math.pi**2]
    assert simple_values(2.4671) == [0.0, 2.5, 3 * math.pi / 4, math.pi**2 / 4]
    assert simple_values(0.0) == [] and simple_values(math.nan) == []
    # thirds of pi: a sphere's volume, angles of 60 degrees
    assert simple_values(4.2) == [0.0, 4.0, 13 / 3, 4.25, 4 * math.pi / 3]
    assert 8 * math.pi / 3 in simple_values(8.38) and math.pi**2 / 3 in simple_values(3.3)


def test_a_constant_the_noise_hides_snaps_and_the_others_are_refitted():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 4.0, size=(600, 1))
    truth = 2.3 * np.exp(-0.5 * x[:, 0]) * np.cos(3.0 * x[:, 0])
    y = _noisy(rng, truth)
    fitted = parse_expression("2.2987*exp(-0.5009*x0)*cos(2.9991*x0)")
    snapped, spent = snap_constants(fitted, as_columns(x), y)
    assert spent > 0
    values = sorted(snapped.constants)
    assert values[0] == -0.5 and values[2] == 3.0  # the rate and the frequency snap
    assert abs(values[1] - 2.3) < 0.02 and values[1] != 2.2987  # the amplitude is refitted, not snapped
    before = np.mean((evaluate_columns(fitted, as_columns(x)) - y) ** 2)
    after = np.mean((evaluate_columns(snapped, as_columns(x)) - y) ** 2)
    assert after < 1.01 * before  # the snapped law fits as well


def test_a_constant_the_rows_pin_down_stays_as_fitted():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 4.0, size=(2000, 1))
    y = _noisy(rng, np.exp(-0.47 * x[:, 0]), level=0.001)  # 0.47 is 6% from 0.5 but near nothing else
    fitted = parse_expression("exp(-0.4702*x0)")
    snapped, _ = snap_constants(fitted, as_columns(x), y)
    assert snapped.constants == fitted.constants
    y2 = _noisy(rng, np.exp(-0.49 * x[:, 0]), level=0.001)  # 2% from 0.5: tried, and rejected
    fitted2 = parse_expression("exp(-0.4901*x0)")
    assert snap_constants(fitted2, as_columns(x), y2)[0].constants == fitted2.constants


def test_without_noise_only_a_constant_already_simple_to_float_precision_snaps():
    x = np.linspace(0.1, 3.0, 300)[:, None]
    exact = parse_expression("1.5*sin(2.001*x0)")
    y = 1.5 * np.sin(2.001 * x[:, 0])
    assert snap_constants(exact, as_columns(x), y)[0].constants == exact.constants
    nearly = parse_expression("1.5*sin(1.99999999999*x0)")
    assert snap_constants(nearly, as_columns(x), 1.5 * np.sin(2.0 * x[:, 0]))[0].constants == (1.5, 2.0)


def test_a_squared_wave_number_snaps_to_pi_squared_on_exact_data():
    # sqrt(w**2 - pi**2/d**2) (a guided wave's cutoff): the search returns pi**2 to float precision
    # inside a sum, where the multiplicative check cannot absorb it.
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(4.0, 6.0, 300), rng.uniform(1.0, 2.0, 300)])
    y = np.sqrt(X[:, 0] ** 2 - math.pi**2 / X[:, 1] ** 2)
    fitted = parse_expression("sqrt(x0**2 - 9.86960440109*inv(x1**2))")
    assert snap_constants(fitted, as_columns(X), y)[0].constants == (math.pi**2,)
    off = parse_expression("sqrt(x0**2 - 9.8701*inv(x1**2))")  # 5e-5 away: the exact rows tell it apart
    assert snap_constants(off, as_columns(X), np.sqrt(X[:, 0] ** 2 - 9.8701 / X[:, 1] ** 2))[0].constants == (9.8701,)


def test_constants_only_their_product_or_sum_fits_are_merged_into_one():
    X = np.random.default_rng(4).uniform(1.0, 2.0, size=(50, 3))
    cases = {  # expression: (merged constants, indices set to the identity)
        "(x1 + 12*(0.08332*(x2*x0)))*x0": ((12 * 0.08332, 1.0), {1}),
        "2*x0/(3*x1)": ((2 / 3, 1.0), {1}),
        "3/(2*x0)": ((1.5, 1.0), {1}),
        "1.5 + (x0 - 2.25)": ((-0.75, 0.0), {1}),
        "3*inv(2*x0)": ((1.5, 1.0), {1}),
        "2*sq(3*x0)": ((18.0, 1.0), {1}),  # through a square, the inner factor enters squared
        "2*sqrt(4*x0)": ((4.0, 1.0), {1}),
        "2*sqrt(-4*x0)": ((2.0, -4.0), set()),  # no real root of -4: left alone
        "2*(x0 + 1)": ((2.0, 1.0), set()),  # a product and a sum: nothing to merge
        "0*x0/(2*x1)": ((0.0, 2.0), set()),  # a zero factor is left alone
    }
    for text, (constants, fixed) in cases.items():
        expr = parse_expression(text)
        merged, indices = merged_constants(expr)
        assert merged.symbols == expr.symbols and set(indices) == fixed, text
        assert np.allclose(merged.constants, constants, rtol=1e-12, atol=0), text
        assert np.allclose(evaluate_columns(merged, as_columns(X)), evaluate_columns(expr, as_columns(X)),
                           rtol=1e-12, atol=1e-12, equal_nan=True), text


def test_a_scale_split_over_two_factors_snaps_once_merged():
    # The search returns q*(Ef + 12*(0.08332*(B*v))*sin(t)): neither factor is near a simple value,
    # their product (0.9998) is 1 within the noise.
    rng = np.random.default_rng(5)
    X = rng.uniform(1.0, 5.0, size=(2000, 4))
    y = _noisy(rng, X[:, 0] * (X[:, 1] + X[:, 2] * X[:, 3]))
    fitted = parse_expression("(x1 + 12*(0.08332*(x2*x3)))*x0")
    snapped, _ = snap_constants(fitted, as_columns(X), y)
    assert snapped.constants == (1.0, 1.0)


def test_a_term_the_data_do_not_need_is_zeroed_and_one_they_need_is_kept():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1.0, 1.0, size=(400, 2))
    y = _noisy(rng, 1.3 * X[:, 0] + 0.7 * X[:, 1] ** 2, level=0.05)
    fitted = parse_expression("1.3021*x0 + 0.0041*x1 + 0.6987*x1**2")
    snapped, _ = snap_constants(fitted, as_columns(X), y)
    c = snapped.constants
    assert c[1] == 0.0  # the spurious linear term in x1
    assert abs(c[0] - 1.3) < 0.05 and abs(c[2] - 0.7) < 0.05 and c[0] != 0.0 and c[2] != 0.0


def test_a_weighted_fit_snaps_by_its_weights():
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 3.0, size=(500, 1))
    y = _noisy(rng, np.sin(2.0 * x[:, 0]), level=0.02)
    w = rng.uniform(0.5, 2.0, size=len(y))
    snapped, _ = snap_constants(parse_expression("sin(2.0012*x0)"), as_columns(x), y, w)
    assert snapped.constants == (2.0,)
    zero_weights = np.zeros(len(y))
    zero_weights[:50] = 1.0
    assert snap_constants(parse_expression("sin(2.0012*x0)"), as_columns(x), y, zero_weights)[0].constants == (2.0,)
    no_rows = np.zeros(len(y))  # nothing to test against: nothing snaps
    assert snap_constants(parse_expression("sin(2.0012*x0)"), as_columns(x), y, no_rows) == (
        parse_expression("sin(2.0012*x0)"), 0)


def test_undefined_values_never_snap_and_nothing_warns():
    x = np.linspace(0.1, 2.0, 100)[:, None]
    y = np.log(0.5 * x[:, 0])
    fitted = parse_expression("log(0.5003*x0)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        snapped, _ = snap_constants(fitted, as_columns(x), y)
    assert snapped.constants in ((0.5,), (0.5003,))  # never 0: log(0) is not finite


@pytest.mark.timeout(300, method="thread")
def test_the_estimator_returns_the_law_with_simple_constants_at_one_percent_noise_and_not_without_snapping():
    rng = np.random.default_rng(4)
    X = rng.uniform(-3.0, 3.0, size=(600, 1))
    y = _noisy(rng, np.exp(-X[:, 0] ** 2 / 2) / math.sqrt(2 * math.pi))
    found = {}
    for snap in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # The search stops at the target, leaving the polish its evaluations (not the 2% a
            # search that spends its whole budget leaves it).
            est = SymbolicRegressor(max_time=None, max_evaluations=200_000, target_r2=0.9995, random_state=0,
                                    snap_constants=snap)
            found[snap] = est.fit(X, y).sympy()
    x0 = sympy.Symbol("x0")
    assert sympy.simplify(found[True] / sympy.exp(-x0**2 / 2)).is_constant()
    assert not sympy.simplify(found[False] / sympy.exp(-x0**2 / 2)).is_constant()


def test_a_fraction_over_four_pi_snaps_on_exact_data_and_shows_exactly():
    # Coulomb's constant in SI units, q1*q2/(4*pi*eps*r**2), and a term over 8*pi beside one over
    # 4*pi (Einstein's field equations): the fit returns 1/(4*pi) and 1/(8*pi) to float precision.
    rng = np.random.default_rng(5)
    X = rng.uniform(1.0, 3.0, size=(300, 3))
    coulomb = X[:, 0] * X[:, 1] / (4 * math.pi * X[:, 2] ** 2)
    fitted = parse_expression("0.0795774715463*x0*x1/x2**2")
    snapped = snap_constants(fitted, as_columns(X), coulomb)[0]
    assert snapped.constants == (1 / (4 * math.pi),)
    x0, x1, x2 = sympy.symbols("x0 x1 x2")
    assert sympy.simplify(snapped.to_sympy() - x0 * x1 / (4 * sympy.pi * x2**2)) == 0
    field = X[:, 0] * (2 * X[:, 1] - 1) / (8 * math.pi)
    two = snap_constants(parse_expression("x0*(0.07957747155*x1 - 0.03978873577)"), as_columns(X), field)[0]
    assert two.to_sympy() == x0 * (x1 / (4 * sympy.pi) - 1 / (8 * sympy.pi))
    off = parse_expression("0.0796*x0*x1/x2**2")  # 3e-4 away: the exact rows tell it apart
    assert snap_constants(off, as_columns(X), 0.0796 * X[:, 0] * X[:, 1] / X[:, 2] ** 2)[0].constants == (0.0796,)


def test_fractions_over_four_pi_are_simple_values_only_up_to_four_over_it_and_only_near():
    assert 3 / (8 * math.pi) in simple_values(0.119368) and 1 / (4 * math.pi**2) in simple_values(0.025331)
    # 2% away is within the 5% of the other simple values, but these fractions lie so close that a
    # noisy fit of any small constant would find one
    assert simple_values(0.2286) == [0.0] and 3 / (8 * math.pi) not in simple_values(0.1194)
    assert exact_value(3 / (8 * math.pi)) == sympy.Rational(3, 8) / sympy.pi
    assert exact_value(1 / (4 * math.pi**2)) == 1 / (4 * sympy.pi**2)
    # 1/pi is the largest: a value near 1 has no fraction over 4*pi among its simple values
    assert simple_values(1.0103) == [0.0, 1.0, math.pi / 3]
    assert exact_value(0.0796) is None


def test_a_snapped_third_or_multiple_of_pi_shows_exactly():
    assert exact_value(1 / 3) == sympy.Rational(1, 3) and exact_value(-8 / 3) == sympy.Rational(-8, 3)
    assert exact_value(2 * math.pi) == 2 * sympy.pi and exact_value(math.pi / 4) == sympy.pi / 4
    assert exact_value(math.pi**2 / 2) == sympy.pi**2 / 2
    assert exact_value(4 * math.pi / 3) == 4 * sympy.pi / 3 and exact_value(-math.pi / 3) == -sympy.pi / 3
    for plain in (0.5, 1.25, 3.0, 0.3333, 3.1416, math.nan, 0.0):  # decimals read well; near is not equal
        assert exact_value(plain) is None
    x0 = sympy.Symbol("x0")
    assert parse_expression("0.3333333333333333*x0 + 6.283185307179586").to_sympy() == x0 / 3 + 2 * sympy.pi


def _ratio_rows(noise: float, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 2.0, size=(300, 1))
    y = (2 * x[:, 0] + 3) / (3 - x[:, 0])
    return x, (_noisy(rng, y, noise) if noise else y)


def test_a_ratio_fixes_its_constants_only_up_to_a_common_factor():
    x, _ = _ratio_rows(0.0)
    ratio = parse_expression("(1.4624*x0 + 2.1936)/(2.1936 - 0.7312*x0)")
    theta = np.array(ratio.constants)
    assert scale_group(compile_expression(ratio), theta, as_columns(x)) == [0, 1, 2, 3]
    # a shift in the denominator alone, or an exponential's rate, is pinned by the rows: no group
    for fixed in ("(1.5*x0 + 2.2)/(2.2 - 0.7*x0) + 0.3", "2.3*exp(-0.5*x0) + 0.1*x0"):
        expr = parse_expression(fixed)
        assert scale_group(compile_expression(expr), np.array(expr.constants), as_columns(x)) == []


_RATIO = sympy.sympify("(2*x0 + 3)/(3 - x0)")
_RATIO_AT_ANY_SCALE = "(1.4624*x0 + 2.1936)/(2.1936 - 0.7312*x0)"  # the law times 0.7312


def _is_ratio_law(expr) -> bool:
    return sympy.simplify(expr.to_sympy() - _RATIO) == 0


def test_a_ratio_found_at_any_scale_snaps_to_its_plainest_form():
    x, y = _ratio_rows(0.0)
    found = parse_expression(_RATIO_AT_ANY_SCALE)
    snapped, _ = snap_constants(found, as_columns(x), y)
    assert sorted(abs(v) for v in snapped.constants) == [1.0, 2.0, 3.0, 3.0] and _is_ratio_law(snapped)
    # without the passes that divide the group by each member, the constants keep the fit's scale
    unnormalized, _ = snap_constants(found, as_columns(x), y, max_evaluations=0)
    assert sorted(abs(v) for v in unnormalized.constants) != [1.0, 2.0, 3.0, 3.0]
    # a product's two constants are merged first, and the group is the merged one and the rest
    merged, _ = snap_constants(parse_expression("(0.5*(2.9248*x0) + 2.1936)/(2.1936 - 0.7312*x0)"), as_columns(x), y)
    assert sorted(abs(v) for v in merged.constants) == [1.0, 1.0, 2.0, 3.0, 3.0] and _is_ratio_law(merged)


def test_a_noisy_ratio_snaps_to_the_law_as_often_as_the_test_allows():
    """At 1% noise the likelihood-ratio test rejects even the law in some draws (it is a 5% test
    with up to three constants snapped); most draws give the law, and none without the group."""
    recovered = {True: 0, False: 0}
    for seed in range(8):
        x, y = _ratio_rows(0.01, seed)
        found = fit_constants(parse_expression(_RATIO_AT_ANY_SCALE), as_columns(x), y, rng=np.random.default_rng(0),
                              batch_size=300, max_iter=200).expression
        for normalize in (True, False):
            snapped, _ = snap_constants(found, as_columns(x), y, max_evaluations=math.inf if normalize else 0)
            recovered[normalize] += _is_ratio_law(snapped)
    assert recovered[True] >= 5 and recovered[False] == 0


def test_indistinguishable_is_the_likelihood_ratio_test_and_total():
    # 100 rows, one constant: the SSE may grow by exp(3.84/100), about 3.9%, not more.
    assert indistinguishable(1.03, 1.0, 100, 1e-12)
    assert not indistinguishable(1.05, 1.0, 100, 1e-12)
    # Below the floor both sums are float noise, however far apart.
    assert indistinguishable(1e-20, 1e-30, 100, 1e-12)
    assert not indistinguishable(1e-9, 1e-30, 100, 1e-12)
    # A loss that is not finite is never as good; anything finite is as good as one that is not.
    assert not indistinguishable(float("inf"), 1.0, 100, 1e-12)
    assert not indistinguishable(float("nan"), 1.0, 100, 1e-12)
    assert indistinguishable(1.0, float("inf"), 100, 1e-12)
    assert indistinguishable(0.0, 0.0, 100, 0.0)  # a floor that underflowed: no log of 0
