"""Numeric range (issue 11, item 1): any magnitude of X and y is searched in a well-scaled space
and reported exactly in the user's units."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy

from dgsr.core.budget import Budget
from dgsr.core.exponent_scaling import Scaling, fit_scaling
from dgsr.core.operators import OPERATORS
from dgsr.core.parser import parse
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.policies.random import RandomPolicy
from dgsr.search.mcts import run_search

pytestmark = pytest.mark.timeout(120, method="thread")


def _est(**kw) -> SymbolicRegressor:
    params = {"policy": "random", "max_evaluations": 3000, "max_time": None, "random_state": 0}
    params.update(kw)
    return SymbolicRegressor(**params)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_same_law_at_every_scale_gives_the_same_formula(scale):
    rng = np.random.default_rng(0)
    U = rng.uniform(1, 3, size=(200, 2))
    X, y = U * scale, 2.5 * U[:, 0] * U[:, 1] * scale  # y = (2.5 / scale) * x0 * x1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow or underflow warning reaches the user
        est = _est().fit(X, y)
        pred = est.predict(X)
    # dgsr's own warning says when losses cannot be shown in the user's units (and only then)
    overflow = [w for w in caught if "overflow float64" in str(w.message)]
    assert bool(overflow) == (float(np.max(np.abs(y))) > math.sqrt(np.finfo(np.float64).max))
    found = est.sympy()
    x0, x1 = sympy.symbols("x0 x1")
    coefficient, rest = sympy.expand(found).as_coeff_Mul()  # 5/2 shows exactly, 2.5e-300 as a float
    assert rest == x0 * x1, found
    assert float(coefficient) == pytest.approx(2.5 / scale, rel=1e-9)
    assert est.equations_["r2"].iloc[est.best_index_] > 1 - 1e-12
    np.testing.assert_allclose(pred, y, rtol=1e-9)
    # The Expression in user units is the same law, whichever of the equivalent forms
    # (c*x0*x1, x1*(x0/c'), ...) the search reached: its constants carry the scale exactly.
    own = sympy.expand(est.expression_.to_sympy(["x0", "x1"]))
    own_coefficient, own_rest = own.as_coeff_Mul()
    assert own_rest == x0 * x1, own
    assert float(own_coefficient) == pytest.approx(2.5 / scale, rel=1e-9)


def test_a_single_huge_target_value_does_not_break_the_fit():
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 2, size=(100, 2))
    y = X[:, 0] + X[:, 1]
    y[7] = 1e200  # a sentinel value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(UserWarning, match="overflow float64"):  # its squared errors do
            est = _est(max_evaluations=1000).fit(X, y)
        pred = est.predict(X)
    assert np.isfinite(pred).all() and len(est.equations_) >= 1


def test_subnormal_column_is_a_clear_error_before_the_search():
    X = np.column_stack([np.linspace(1, 2, 20), np.linspace(1, 2, 20) * 1e-310])
    y = np.linspace(0, 1, 20)
    with pytest.raises(ValueError, match="column 'x1' of X holds only values below"):
        _est().fit(X, y)
    with pytest.raises(ValueError, match="the target y holds only values below"):
        _est().fit(X[:, :1], y * 1e-310)


def test_target_spread_below_rounding_is_constant_relative_to_its_magnitude():
    X = np.linspace(1, 2, 40).reshape(-1, 1)
    y = 1e200 * (1.0 + np.arange(40) % 3 * np.finfo(float).eps)  # a few ulps apart
    with pytest.warns(UserWarning) as caught:
        est = _est().fit(X, y)
    messages = [str(w.message) for w in caught]
    assert any("y is constant" in m for m in messages)
    # 1e200 squared overflows: the user is told the loss column reads inf, and nothing else
    assert all("y is constant" in m or "overflow float64" in m for m in messages), messages
    assert est.stop_reason_ == "constant_target"
    np.testing.assert_allclose(est.predict(X), y, rtol=1e-14)


def test_search_on_tiny_targets_does_not_divide_by_zero():
    # y around 1e-150: var(pred) * var(y) underflows to 0 in the scaled-R² line (a search called
    # directly, without the estimator's scaling).
    rng = np.random.default_rng(2)
    X = rng.uniform(1, 2, size=(64, 2))
    y = 1e-150 * X[:, 0] * X[:, 1]
    result = run_search(X, y, RandomPolicy(), rng=0, budget=Budget(max_evaluations=300))
    assert result.n_evaluations > 0


_EXPRESSIONS = [
    "2.5*x0*x1", "x0 + x1", "x0 - 3*x1", "sqrt(x0)*x1", "sqrt(x0*x1)", "1/(x0 + x1)", "(x0**2 + 1.5)/x1",
    "sin(x0) + x1", "log(x0*x1) - 0.5", "exp(0.1*x0)*x1**2", "sqrt(x0**2 + x1**2)", "x0/(x1 - 0.25)",
]


@pytest.mark.parametrize("exponents", [(0, 0, 0), (40, -40, 7), (-33, 35, -120), (997, 997, 997),
                                       (-997, -1000, -998), (1000, 0, 1023)])
@pytest.mark.parametrize("text", _EXPRESSIONS)
def test_to_user_is_exact(text, exponents):
    # y = 2**e_y * f(x / 2**e): checked symbolically with exact rationals for every constant.
    e0, e1, ey = exponents
    scaling = Scaling((e0, e1), ey)
    expr = parse(text)
    user = scaling.to_user(expr)
    x0, x1 = sympy.symbols("x0 x1", positive=True)
    want = sympy.Integer(2) ** ey * _exact(expr, [x0 / sympy.Integer(2) ** e0, x1 / sympy.Integer(2) ** e1])
    got = _exact(user, [x0, x1])
    assert sympy.simplify(got - want) == 0, (user, got, want)
    assert all(math.isfinite(c) for c in user.constants)


def _exact(expr, variables):
    """SymPy value of ``expr`` with every constant as the exact rational its float holds."""
    stack = []
    ci = len(expr.constants)
    for s in reversed(expr.symbols):
        if s == "c":
            ci -= 1
            stack.append(sympy.Rational(expr.constants[ci]))
        elif s.startswith("x") and s[1:].isdigit():
            stack.append(variables[int(s[1:])])
        else:
            op = OPERATORS[s]
            stack.append(op.sympy_fn(*[stack.pop() for _ in range(op.arity)]))
    return stack[0]


def test_moderate_columns_are_searched_as_given():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1e6, 1e6, size=(10, 2))
    scaling = fit_scaling(X, X[:, 0] * 1e-6, ("a", "b"))
    assert scaling.is_identity
    huge = fit_scaling(X * 1e100, X[:, 0], ("a", "b"))
    scaled = huge.scale_X(X * 1e100)
    assert np.abs(scaled).max(axis=0).min() >= 1.0 and np.abs(scaled).max() < 2.0


@pytest.mark.parametrize("n_rows", [1, 255, 256, 1000, 5003])
def test_column_magnitudes_are_exact_in_any_layout_and_length(n_rows):
    """The blocked reductions find each column's largest magnitude exactly: a negative extreme,
    a last row past the blocks, C and Fortran order."""
    rng = np.random.default_rng(n_rows)
    X = rng.uniform(-1, 1, size=(n_rows, 4)) * np.array([1e-12, 3.0, 7e13, 1.0])
    X[-1, 0] = -9e-12  # the largest magnitude is negative, in the last row
    names = ["a", "b", "c", "d"]
    # One row of the columns' largest magnitudes: no blocks, the plain reduction.
    want = fit_scaling(np.abs(X).max(axis=0)[None, :], X[:1, 1], names).x_exponents
    assert want[0] != 0 and want[2] != 0  # the tiny and the huge column are rescaled
    for layout in (np.ascontiguousarray(X), np.asfortranarray(X)):
        assert fit_scaling(layout, X[:, 1], names).x_exponents == want
