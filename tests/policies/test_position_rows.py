"""policies.semantic.position_rows: the compiled per-position rows of the semantic policy's
ranking agree with the numpy definition (the same NaN pattern, the values to rounding) on
expressions with every operator and on rows with poles, domain errors and overflow; and the
numpy definition means what its docstring says on cases worked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels import compiler
from dgsr.core.operators import UNARY
from dgsr.core.parser import parse
from dgsr.policies.semantic.compiled_backprop import CompiledBackprop, NumpyBackprop
from dgsr.policies.semantic.position_rows import KINDS, position_rows, position_rows_numpy
from tests.policies.expression_strategies import N_VARS, examples, trees

pytestmark = pytest.mark.timeout(300, method="thread")
needs_jit = pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")

SETTINGS = examples(150)

RNG = np.random.default_rng(7)
COLUMNS = as_columns(np.vstack([RNG.uniform(-3, 3, size=(40, N_VARS)), [[0.0, -1.0, 1e200], [710.0, 2.0, 0.0]]]))
Y = np.concatenate([np.sin(COLUMNS[0, :40]) * 3.0 + COLUMNS[1, :40], [0.0, 1e300]])
ROOTS = (Y / 2.0, Y - 1.0)  # without and with an intercept (any two targets will do here)
SPREADS = (float(np.sum((ROOTS[0][:40] - ROOTS[0][:40].mean()) ** 2)), np.inf)


def _agree(a: np.ndarray, b: np.ndarray) -> None:
    """The same NaN and infinity pattern, finite values equal to rounding (relative to the row's scale)."""
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
    finite = np.isfinite(a)
    scale = np.maximum(np.abs(b[finite]), 1e-9 * np.abs(b[finite]).max(initial=0.0))
    np.testing.assert_array_less(np.abs(a[finite] - b[finite]), 1e-9 * scale + 1e-300)


def _paths(expr: Expression, data: st.DataObject, n_positions: int) -> tuple[list[int], list[bool], list[bool]]:
    positions = data.draw(st.lists(st.integers(0, expr.size - 1), min_size=1, max_size=n_positions))
    scale = data.draw(st.lists(st.booleans(), min_size=len(positions), max_size=len(positions)))
    additive = data.draw(st.lists(st.booleans(), min_size=len(positions), max_size=len(positions)))
    return positions, scale, additive


@needs_jit
@SETTINGS
@given(trees, st.data())
def test_compiled_rows_agree_with_the_numpy_definition(expr, data):
    positions, scale, additive = _paths(expr, data, 6)
    ops = data.draw(st.lists(st.sampled_from(UNARY), unique=True, max_size=len(UNARY)))
    backprop = CompiledBackprop(expr, COLUMNS)
    compiled = position_rows(backprop, ROOTS, SPREADS, positions, scale, additive, ops)
    reference = position_rows_numpy(backprop, ROOTS, SPREADS, positions, scale, additive, ops)
    np.testing.assert_array_equal(compiled.usable, reference.usable)
    used = compiled.usable
    _agree(compiled.unary[used], reference.unary[used])
    for i in np.flatnonzero(used):
        kinds = [k for k, kind in enumerate(KINDS) if not (kind == "rsub" and additive[i])]
        _agree(compiled.targets[i, kinds], reference.targets[i, kinds])
        _agree(compiled.weights[i, kinds], reference.weights[i, kinds])


@needs_jit
def test_constant_nodes_on_a_sum_give_no_unary_match_in_either():
    """sq of a node whose values are +-a is constant: its centred variance is rounding noise, so
    neither path may turn it into a match (their summation orders would disagree on its sign)."""
    X = np.repeat([[1.5, 0.3], [-1.5, 0.7]], 30, axis=0)
    columns = as_columns(X)
    y = X[:, 1] * 2.0
    expr = parse("x0 + x1")  # positions: 0 add, 1 x0 (values +-1.5), 2 x1
    for make, rows_of in ((CompiledBackprop, position_rows), (NumpyBackprop, position_rows_numpy)):
        rows = rows_of(make(expr, columns), (y, y), (1.0, 1.0), [1], [True], [True], ["sq", "sin"])
        assert rows.usable[0]
        assert np.isnan(rows.unary[0, 0])  # sq(+-1.5) = 2.25 everywhere
        assert np.isfinite(rows.unary[0, 1])  # sin(+-1.5) takes two values


def test_numpy_rows_by_hand():
    """On ``x0 * x1`` at the factor ``x0`` (position 1) with the root target ``y``: D = y / x1,
    A = x0, g = x1 (so g2 = x1^2), and each kind's target and weight as the module docstring
    defines them; ``sq(A)`` matches exactly when y = x0^2 * x1 on a scale path."""
    X = np.random.default_rng(3).uniform(0.5, 2.0, size=(50, 2))
    x0, x1 = X[:, 0], X[:, 1]
    y = x0**2 * x1
    expr = parse("x0 * x1")
    rows = position_rows_numpy(NumpyBackprop(expr, as_columns(X)), (y, y), (float(np.sum((y - y.mean()) ** 2)),) * 2,
                               [1], [True], [False], ["sq", "exp"])
    assert rows.usable[0]
    desired, current, g2 = y / x1, x0, x1**2
    np.testing.assert_allclose(rows.targets[0, KINDS.index("add")], desired - current)
    np.testing.assert_allclose(rows.targets[0, KINDS.index("rsub")], desired + current)
    np.testing.assert_allclose(rows.targets[0, KINDS.index("mul")], desired / current)
    np.testing.assert_allclose(rows.weights[0, KINDS.index("mul")], g2 * current**2)
    np.testing.assert_allclose(rows.targets[0, KINDS.index("div")], current / desired)
    np.testing.assert_allclose(rows.weights[0, KINDS.index("div")], g2 * desired**4 / current**2)
    np.testing.assert_allclose(rows.targets[0, KINDS.index("rdiv")], desired * current)
    np.testing.assert_allclose(rows.weights[0, KINDS.index("rdiv")], g2 / current**2)
    sq, exp = rows.unary[0]
    assert sq == pytest.approx(12.0)  # the clipped floor: -log10(1e-12), an exact fit
    assert exp < 3.0


def test_a_position_with_too_few_finite_rows_is_not_usable():
    """log(x0) is NaN on most rows (x0 = -1 there): not usable; x0 below it is (its desired
    values exp(D - x1) and gradient 1/x0 are finite everywhere)."""
    X = np.column_stack([np.r_[np.full(40, -1.0), np.linspace(1, 2, 4)], np.ones(44)])
    y = np.linspace(0, 1, 44)
    expr = parse("log(x0) + x1")
    rows = position_rows_numpy(NumpyBackprop(expr, as_columns(X)), (y, y), (1.0, 1.0), [1, 2], [False, False],
                               [False, False], ["sin"])
    assert rows.usable.tolist() == [False, True]


@needs_jit
def test_a_slope_that_overflows_leaves_the_line_out_in_both():
    # The root of sqrt(x2) on the extreme rows (sqrt(1e200) against a target of 1e300): the
    # slope of the line in A overflows, and which rows then read +inf, -inf or NaN depended on
    # the order of the sums (found by the property test above). Both paths now drop the line.
    expr = parse("sqrt(x2)")
    backprop = CompiledBackprop(expr, COLUMNS)
    compiled = position_rows(backprop, ROOTS, SPREADS, [0], [False], [True], [])
    reference = position_rows_numpy(backprop, ROOTS, SPREADS, [0], [False], [True], [])
    assert compiled.usable[0] and reference.usable[0]
    _agree(compiled.targets[0, 0], reference.targets[0, 0])
    assert not np.isinf(reference.targets[0, 0]).any()
