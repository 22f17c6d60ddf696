"""core.operators: every entry of the operator table is self-consistent. Its derivative matches
central finite differences of its value and SymPy's derivative of its SymPy form; its inverse
gives back the desired values (op(inverse(d)) = d) and picks the solution nearest the current
value. The checks run over OPERATORS, so a new entry is checked without a new test."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from dgsr.core import gradients
from dgsr.core.operators import BINARY, OPERATORS, UNARY, Operator

SEED = 47
N = 2000


def _unary_rows(op: Operator, rng: np.random.Generator) -> np.ndarray:
    """Arguments in [-3, 3] where the value and derivative are finite and moderate (away from
    poles and domain edges, where finite differences say nothing)."""
    a = rng.uniform(-3.0, 3.0, N)
    with np.errstate(all="ignore"):
        out = op.numpy_fn(a)
        slope = np.broadcast_to(op.derivative(a, out), a.shape)
    keep = np.isfinite(out) & np.isfinite(slope) & (np.abs(slope) < 1e3) & (np.abs(a) > 1e-2)
    assert keep.sum() > N // 4, f"{op.name}: too few valid arguments in [-3, 3]"
    return a[keep]


def _binary_rows(op: Operator, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Argument pairs in [-3, 3]^2 with finite, moderate partials and operands clear of zero."""
    a, b = rng.uniform(-3.0, 3.0, (2, N))
    with np.errstate(all="ignore"):
        out = op.numpy_fn(a, b)
        da, db = (np.broadcast_to(p, a.shape) for p in op.derivative(a, b, out))
    keep = (np.isfinite(out) & np.isfinite(da) & np.isfinite(db) & (np.abs(da) < 1e3) & (np.abs(db) < 1e3)
            & (np.abs(a) > 1e-2) & (np.abs(b) > 1e-2))
    assert keep.sum() > N // 4
    return a[keep], b[keep]


def _central_difference(f, x: np.ndarray) -> np.ndarray:
    # A step relative to |x| beyond 1 (rounding stays below truncation there), absolute below:
    # a relative step near 0 would divide rounding errors of values of order 1 by a tiny step.
    h = 1e-6 * np.maximum(np.abs(x), 1.0)
    return (f(x + h) - f(x - h)) / (2.0 * h)


def test_every_operator_has_a_complete_entry():
    # Operators user-defined by other tests of this process are entries too (tests/core/test_custom_operators.py).
    for name, op in OPERATORS.items():
        assert op.name == name and op.arity in (1, 2)
        assert callable(op.numpy_fn) and callable(op.sympy_fn) and callable(op.derivative)
        assert op.inverse is None or callable(op.inverse)
        assert isinstance(op.complexity, int) and op.complexity >= 1
    assert set(UNARY) | set(BINARY) == {name for name, op in OPERATORS.items() if op.definition is None}


def test_the_gradient_module_derivatives_are_the_tables():
    assert set(gradients.UNARY_DERIVATIVES) == set(UNARY)
    assert set(gradients.BINARY_DERIVATIVES) == set(BINARY)
    for name in UNARY + BINARY:
        assert gradients.DERIVATIVES[name] is OPERATORS[name].derivative
    with pytest.raises(TypeError):  # read-only: the definitions are edited in the table
        gradients.DERIVATIVES["sin"] = np.cos  # type: ignore[index]


@pytest.mark.parametrize("name", UNARY)
def test_unary_derivative_matches_central_differences(name):
    op = OPERATORS[name]
    a = _unary_rows(op, np.random.default_rng(SEED))
    np.testing.assert_allclose(op.derivative(a, op.numpy_fn(a)), _central_difference(op.numpy_fn, a),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", BINARY)
def test_binary_partials_match_central_differences(name):
    op = OPERATORS[name]
    a, b = _binary_rows(op, np.random.default_rng(SEED))
    da, db = (np.broadcast_to(p, a.shape) for p in op.derivative(a, b, op.numpy_fn(a, b)))
    np.testing.assert_allclose(da, _central_difference(lambda x: op.numpy_fn(x, b), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(db, _central_difference(lambda x: op.numpy_fn(a, x), b), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_sympy_form_has_the_tables_value_and_derivative(name):
    op = OPERATORS[name]
    rng = np.random.default_rng(SEED)
    symbols = sympy.symbols("a b")[: op.arity]
    form = op.sympy_fn(*symbols)
    if op.arity == 1:
        args: tuple[np.ndarray, ...] = (_unary_rows(op, rng),)
        table = (op.derivative(args[0], op.numpy_fn(*args)),)
    else:
        args = _binary_rows(op, rng)
        table = op.derivative(*args, op.numpy_fn(*args))
    np.testing.assert_allclose(sympy.lambdify(symbols, form, "numpy")(*args), op.numpy_fn(*args), rtol=1e-12)
    for symbol, partial in zip(symbols, table):
        from_sympy = sympy.lambdify(symbols, sympy.diff(form, symbol), "numpy")(*args)
        np.testing.assert_allclose(np.broadcast_to(from_sympy, args[0].shape),
                                   np.broadcast_to(partial, args[0].shape), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", [n for n in UNARY if OPERATORS[n].inverse is not None])
def test_unary_inverse_reaches_the_desired_values_on_the_nearest_branch(name):
    op = OPERATORS[name]
    rng = np.random.default_rng(SEED)
    a = _unary_rows(op, rng)
    desired = op.numpy_fn(a)  # values in the operator's range
    with np.errstate(all="ignore"):
        # The current value is the argument itself: the inverse gives it back (the branch choice).
        np.testing.assert_allclose(op.inverse(desired, a), a, rtol=1e-7, atol=1e-7)
        # Any current value: a solution, and at least as near the current value as ``a`` is.
        current = a + rng.uniform(-4.0, 4.0, a.shape)
        x = op.inverse(desired, current)
        assert np.all(np.isfinite(x))
        np.testing.assert_allclose(op.numpy_fn(x), desired, rtol=1e-9, atol=1e-12)
        assert np.all(np.abs(x - current) <= np.abs(a - current) + 1e-7)


@pytest.mark.parametrize("name", [n for n in UNARY if OPERATORS[n].inverse is not None])
def test_unary_inverse_is_nan_or_exact_on_arbitrary_desired_values(name):
    """Desired values outside the range give NaN (or non-finite), never a wrong argument."""
    op = OPERATORS[name]
    rng = np.random.default_rng(SEED)
    desired = rng.uniform(-5.0, 5.0, N)
    with np.errstate(all="ignore"):
        x = op.inverse(desired, rng.uniform(-3.0, 3.0, N))
        reached = np.isfinite(x)
        assert reached.any()
        np.testing.assert_allclose(op.numpy_fn(x[reached]), desired[reached], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in BINARY if OPERATORS[n].inverse is not None])
def test_binary_inverse_gives_each_child_back(name):
    op = OPERATORS[name]
    a, b = _binary_rows(op, np.random.default_rng(SEED))
    desired = op.numpy_fn(a, b)
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    left, right = op.inverse(0, desired, b), op.inverse(1, desired, a)
    assert np.all(np.abs(left - a) <= 1e-12 * scale + 1e-9 * np.abs(a))
    assert np.all(np.abs(right - b) <= 1e-12 * scale + 1e-9 * np.abs(b))
    np.testing.assert_allclose(op.numpy_fn(left, b), desired, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(op.numpy_fn(a, right), desired, rtol=1e-9, atol=1e-12)
