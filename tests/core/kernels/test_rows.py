"""core.kernels.rows: the kernels' own sin, cos and exp over row arrays (loops that vectorise) stay
within two units in the last place of libm's (sin and cos: where the value is not tiny, and
within 2**-52 everywhere), give libm's own bits where the fast reduction would lose digits, and
IEEE's answers on the special rows; every operator's row loop agrees with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.kernels import rows as row_kernels
from dgsr.core.kernels.codes import CODES, CODES_BINARY_LAST

PHASES = [(0, np.sin), (1, np.cos)]
DERIVATIVES = {0: np.cos, 1: lambda x: -np.sin(x)}


def _in_place(x: np.ndarray, phase: int) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    row_kernels.trig_in_place_jit(a, phase)
    return a


def _with_slope(x: np.ndarray, phase: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.array(x, dtype=np.float64)
    slope = np.full_like(a, 7.0)
    row_kernels.trig_with_slope_jit(a, slope, phase)
    return a, slope


def _assert_close_to_libm(got: np.ndarray, ref: np.ndarray) -> None:
    err = np.abs(got - ref)
    assert err.max() <= 2.0 ** -52
    away = np.abs(ref) > 1e-3  # near a zero of the function the bound is the absolute one above
    assert (err[away] <= 2 * np.spacing(np.abs(ref[away]))).all()


@pytest.mark.parametrize("phase, libm", PHASES)
@pytest.mark.parametrize("scale", [1.0, 10.0, 1e3, 1e5])
def test_values_are_within_two_ulp_of_libm(phase, libm, scale):
    x = np.random.default_rng(int(scale)).uniform(-scale, scale, 200_000)
    _assert_close_to_libm(_in_place(x, phase), libm(x))


@pytest.mark.parametrize("phase, libm", PHASES)
def test_multiples_of_half_pi_reduce_to_tiny_values(phase, libm):
    x = np.arange(-60_000, 60_000) * (np.pi / 2)  # the reduction's worst rows: near-total cancellation
    got = _in_place(x, phase)
    assert np.abs(got - libm(x)).max() < 1e-20


@pytest.mark.parametrize("phase, libm", PHASES)
def test_slope_is_the_derivative_and_the_value_the_same(phase, libm):
    x = np.random.default_rng(3).uniform(-40, 40, 5_000)
    value, slope = _with_slope(x, phase)
    np.testing.assert_array_equal(value, _in_place(x, phase))
    _assert_close_to_libm(slope, DERIVATIVES[phase](x))


@pytest.mark.parametrize("phase, libm", PHASES)
def test_far_or_non_finite_rows_hand_the_array_to_libm(phase, libm):
    x = np.random.default_rng(4).uniform(-3, 3, 64)
    for odd in (2e5, -1e300, np.inf, -np.inf, np.nan):
        rows = x.copy()
        rows[17] = odd
        ref = _libm(4 + phase, rows)
        np.testing.assert_array_equal(_in_place(rows, phase), ref)  # the same bits, NaN where libm's
        value, slope = _with_slope(rows, phase)
        np.testing.assert_array_equal(value, ref)
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(slope, DERIVATIVES[phase](rows))


def test_signed_zeros_and_small_arguments():
    x = np.array([0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-8, -1e-8])
    sines = _in_place(x, 0)
    np.testing.assert_array_equal(sines, np.sin(x))
    assert np.signbit(sines[1]) and not np.signbit(sines[0])
    np.testing.assert_array_equal(_in_place(x, 1), np.cos(x))
    value, slope = _with_slope(x, 0)
    np.testing.assert_array_equal(value, np.sin(x))
    np.testing.assert_array_equal(slope, np.cos(x))


def test_unary_kernel_matches_numpy_for_every_operator():
    x = np.random.default_rng(5).uniform(0.1, 3.0, 300)
    for name, code in CODES.items():
        if code <= CODES_BINARY_LAST:
            continue
        ref = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
               "inv": lambda v: 1.0 / v, "sq": lambda v: v * v}[name](x)
        a = x.copy()
        row_kernels.unary_in_place_jit(code, a)
        np.testing.assert_allclose(a, ref, rtol=4.5e-16, atol=2.0 ** -52, err_msg=name)
        b, d = x.copy(), np.empty_like(x)
        row_kernels.unary_with_slope_jit(code, b, d)
        np.testing.assert_array_equal(b, a, err_msg=name)


def _libm(code: int, x: np.ndarray) -> np.ndarray:
    """The one-row table (libm's scalar functions; numpy's own may be vectorised, other bits)."""
    return np.array([row_kernels.unary_value_jit(code, float(v)) for v in x])


def _exp(x: np.ndarray) -> np.ndarray:
    a = np.array(x, dtype=np.float64)
    row_kernels.exp_in_place_jit(a)
    return a


@pytest.mark.parametrize("scale", [1.0, 30.0, 708.0])
def test_exp_is_within_one_ulp_of_libm(scale):
    x = np.random.default_rng(int(scale)).uniform(-scale, scale, 200_000)
    ref = np.exp(x)
    assert (np.abs(_exp(x) - ref) <= np.spacing(ref)).all()


def test_exp_of_special_and_far_rows_is_libm_s():
    rows = np.random.default_rng(6).uniform(-3, 3, 64)
    for odd in (0.0, -0.0, 1e-300, 708.0, -708.0):  # the fast path's own edges: exact or within an ulp
        x = rows.copy()
        x[5] = odd
        assert abs(_exp(x)[5] - np.exp(odd)) <= np.spacing(np.exp(odd))
    for odd in (709.0, 710.0, -745.0, -800.0, np.inf, -np.inf, np.nan):  # overflow, subnormal, 0: libm
        x = rows.copy()
        x[5] = odd
        np.testing.assert_array_equal(_exp(x), _libm(7, x))
    value, slope = rows.copy(), np.empty_like(rows)
    row_kernels.unary_with_slope_jit(7, value, slope)
    np.testing.assert_array_equal(value, _exp(rows))
    np.testing.assert_array_equal(slope, value)
