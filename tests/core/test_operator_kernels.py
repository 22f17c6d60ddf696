"""core.kernels.rows / .forward: the compiled row loops agree with the operator table. numba cannot
call the table's Python functions, so each operator is written again per op code; these tests
run every compiled value and slope path of every operator in OPERATORS on random arguments and
compare them with the table's numpy value and derivative (finite rows only). The compiled sin,
cos and exp are the package's own, within a few units in the last place of libm's."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels import rows
from dgsr.core.kernels.codes import CODES, CODES_BINARY_LAST, encode
from dgsr.core.kernels.forward import run_encoded
from dgsr.core.operators import BINARY, OPERATORS, UNARY

SEED = 11
N = 500
RTOL, ATOL = 1e-13, 1e-15


def _close(compiled: np.ndarray, table: np.ndarray) -> None:
    """Equal to rounding wherever the table's value is finite (and enough rows are)."""
    table = np.broadcast_to(np.asarray(table, dtype=np.float64), compiled.shape)
    finite = np.isfinite(table)
    assert finite.mean() > 0.25  # log and sqrt: about half the arguments are in the domain
    np.testing.assert_allclose(compiled[finite], table[finite], rtol=RTOL, atol=ATOL)


def _arguments(rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(-4.0, 4.0, N)


def test_every_operator_has_an_op_code_of_its_arity():
    assert set(CODES) == set(OPERATORS)
    for name, code in CODES.items():
        assert (code <= CODES_BINARY_LAST) == (OPERATORS[name].arity == 2)
    assert len(set(CODES.values())) == len(OPERATORS)


@pytest.mark.parametrize("name", UNARY)
def test_compiled_unary_rows_are_the_tables_value_and_derivative(name):
    op, code = OPERATORS[name], CODES[name]
    a = _arguments(np.random.default_rng(SEED))
    with np.errstate(all="ignore"):
        value = op.numpy_fn(a)
        slope = op.derivative(a, value)
    # The one-row table (semantic policy kernels) and the in-place loop (scoring kernels).
    _close(np.array([rows.unary_value_jit(code, x) for x in a]), value)
    in_place = a.copy()
    rows.unary_in_place_jit(code, in_place)
    _close(in_place, value)
    # The loop with slopes (the inner fit's Jacobians).
    with_slope, d = a.copy(), np.empty(N)
    rows.unary_with_slope_jit(code, with_slope, d)
    _close(with_slope, value)
    _close(d, slope)


@pytest.mark.parametrize("name", BINARY)
def test_compiled_binary_rows_are_the_tables_value(name):
    op, code = OPERATORS[name], CODES[name]
    a, b = _arguments(np.random.default_rng(SEED)), _arguments(np.random.default_rng(SEED + 1))
    with np.errstate(all="ignore"):
        value = op.numpy_fn(a, b)
    _close(np.array([rows.binary_value_jit(code, x, y) for x, y in zip(a, b)]), value)
    in_place = b.copy()
    rows.binary_in_place_jit(code, a, in_place)
    _close(in_place, value)


def _shifted(column: int) -> Expression:
    """``x{column} + c``: with ``c = 0`` its value is the column and its derivative in ``c`` is 1,
    so the Jacobian of ``op(x0 + c0, ...)`` is the operator's partial derivatives."""
    return Expression.combine("add", Expression.variable(column), Expression.constant(0.0))


@pytest.mark.parametrize("name", list(OPERATORS))
def test_run_encoded_gives_the_tables_value_and_partials(name):
    op = OPERATORS[name]
    rng = np.random.default_rng(SEED)
    X = rng.uniform(-4.0, 4.0, (N, 2))
    expr = Expression.combine(name, *(_shifted(i) for i in range(op.arity)))
    ops, args = encode(expr)
    value, jac = run_encoded(ops, args, np.zeros(op.arity), as_columns(X))
    with np.errstate(all="ignore"):
        operands = [X[:, i] for i in range(op.arity)]
        table_value = op.numpy_fn(*operands)
        partials = op.derivative(*operands, table_value)
    partials = (partials,) if op.arity == 1 else partials
    _close(value, table_value)
    assert jac.shape == (op.arity, N)
    for row, partial in zip(jac, partials):
        _close(row, partial)
