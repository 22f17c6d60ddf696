"""policies.semantic backpropagation against the operator table. The compiled desired values of
a child (compiled_backprop._desired) are the table's inverse, NaN for NaN, on desired values in
and out of the operator's range; the chain gradients, compiled and numpy (both hand-written in
terms of the children's values, see backprop._local_derivative), are the table's partial
derivatives to rounding on finite rows."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels import compiler
from dgsr.core.operators import OPERATORS
from dgsr.policies.semantic.compiled_backprop import CompiledBackprop, NumpyBackprop

SEED = 3
N = 400
needs_jit = pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")


def _case(name: str) -> tuple[Expression, np.ndarray, np.ndarray]:
    """``name(x0[, x1])``, its columns, and desired values for its root: values the operator takes
    (in its range), arbitrary ones (partly outside it) and edges (0, +-1, the log inverse's cap
    at 700, a huge value)."""
    op = OPERATORS[name]
    rng = np.random.default_rng(SEED)
    X = rng.uniform(-4.0, 4.0, (N, op.arity))
    with np.errstate(all="ignore"):
        reached = op.numpy_fn(*rng.uniform(-4.0, 4.0, (op.arity, N // 2)))
    edges = [0.0, 1.0, -1.0, 699.0, 700.0, 701.0, 1e300]
    desired = np.concatenate([reached, rng.uniform(-5.0, 5.0, N - N // 2 - len(edges)), edges])
    expr = Expression.combine(name, *(Expression.variable(i) for i in range(op.arity)))
    return expr, as_columns(X), desired


def _table_inverse(name: str, child: int, desired: np.ndarray, X: np.ndarray) -> np.ndarray:
    op = OPERATORS[name]
    with np.errstate(all="ignore"):
        if op.arity == 1:
            out = op.inverse(desired, X[0])
        else:
            out = op.inverse(child, desired, X[1 - child])
    out = np.array(out, dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return out


def _table_partial(name: str, child: int, X: np.ndarray) -> np.ndarray:
    op = OPERATORS[name]
    with np.errstate(all="ignore"):
        out = op.numpy_fn(*X)
        partial = op.derivative(X[0], out) if op.arity == 1 else op.derivative(X[0], X[1], out)[child]
    return np.broadcast_to(partial, out.shape)


def _close_where_finite(got: np.ndarray, table: np.ndarray) -> None:
    finite = np.isfinite(table) & np.isfinite(got)
    assert finite.mean() > 0.4
    np.testing.assert_allclose(got[finite], table[finite], rtol=1e-12, atol=1e-14)


@needs_jit
@pytest.mark.parametrize("name", [n for n, op in OPERATORS.items() if op.inverse is not None])
def test_compiled_desired_values_are_the_tables_inverse(name):
    expr, X, desired = _case(name)
    backprop = CompiledBackprop(expr, X)
    for child, position in enumerate(expr.children(0)):
        got, table = backprop.desired(position, desired), _table_inverse(name, child, desired, X)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(table))
        _close_where_finite(got, table)


@pytest.mark.parametrize("backprop_class", [pytest.param(CompiledBackprop, marks=needs_jit), NumpyBackprop])
@pytest.mark.parametrize("name", list(OPERATORS))
def test_chain_gradients_are_the_tables_partials(name, backprop_class):
    expr, X, _ = _case(name)
    backprop = backprop_class(expr, X)
    for child, position in enumerate(expr.children(0)):
        _close_where_finite(np.asarray(backprop.gradient(position)), _table_partial(name, child, X))
