"""core.kernels.scoring: the compiled scoring of a candidate gives the numpy path's numbers (each term's
values, the moments of their sum, the least-squares term weights), reports collinear and
non-finite terms instead of solving them, and the search's Evaluator scores the same with it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgsr.core.budget import Budget
from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels import scoring
from dgsr.core.linear_terms import additive_terms, fit_term_weights
from dgsr.core.operators import BINARY, UNARY
from dgsr.core.pareto import ParetoArchive
from dgsr.core.parser import parse
from dgsr.search.config import SearchConfig
from dgsr.search.evaluator import Evaluator

pytestmark = pytest.mark.timeout(300, method="thread")

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N_VARS = 3
constants = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.5, 1e300]),
                      st.floats(-10, 10, allow_nan=False, allow_infinity=False))
leaves = st.one_of(st.integers(0, N_VARS - 1).map(Expression.variable), constants.map(Expression.constant))
trees = st.recursive(leaves, lambda c: st.one_of(
    st.tuples(st.sampled_from(UNARY), c).map(lambda t: Expression.combine(*t)),
    st.tuples(st.sampled_from(BINARY), c, c).map(lambda t: Expression.combine(*t))), max_leaves=8)
# Sums and differences of trees at the top, as the search grows them.
sums = st.lists(st.tuples(st.sampled_from(["add", "sub"]), trees), min_size=1, max_size=4).map(
    lambda parts: _chain(parts))

RNG = np.random.default_rng(0)
# Rows with zeros, negatives and large values: poles, domain errors and overflow all occur.
COLUMNS = as_columns(np.vstack([RNG.uniform(-3, 3, size=(60, N_VARS)), [[0.0, -1.0, 1e200], [710.0, 2.0, 0.0]]]))
Y = np.sin(COLUMNS[0] * COLUMNS[1]) + RNG.normal(size=COLUMNS.shape[1])


def _chain(parts: list[tuple[str, Expression]]) -> Expression:
    expr = parts[0][1]
    for op, term in parts[1:]:
        expr = Expression.combine(op, expr, term)
    return expr


def _numpy_moments(pred: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    with np.errstate(all="ignore"):
        mean = float(np.sum(pred)) / len(pred)
        centered = pred - mean
        return mean, float(centered @ centered) / len(pred), float(centered @ (y - y.mean())) / len(pred)


def _close(a: float, b: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.isfinite(a) == math.isfinite(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12 * max(1.0, abs(a), abs(b)))


@SETTINGS
@given(sums)
def test_terms_and_moments_equal_the_numpy_evaluation(expr):
    encoded = scoring.encode_sum(expr.symbols)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the compiled path must not leak numpy warnings either
        result = scoring.score_sum(encoded, expr.constants, COLUMNS, Y, fit_terms=False)
        terms = additive_terms(expr)
        values = [evaluate_columns(t, COLUMNS) for _, t in terms]
    assert result.values.shape == (len(terms), COLUMNS.shape[1])
    assert list(encoded.signs) == [s for s, _ in terms]
    assert list(encoded.varying) == [i for i, (_, t) in enumerate(terms) if t.variables]
    for got, want in zip(result.values, values):
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        both = np.isfinite(got)
        # atol: a last-bit difference of an inner function (the kernels' own sin, cos and exp
        # against numpy's) becomes an absolute one at a result near 0 (log(exp(x1)*exp(1)) at x1 = -1).
        np.testing.assert_allclose(got[both], want[both], rtol=1e-12, atol=1e-13)
    with np.errstate(all="ignore"):
        pred = sum(s * v for (s, _), v in zip(terms, values))
    # Rounding of a sum of n values: relative to the scale of the values, not of the result
    # (a constant 1e300 has a "variance" of pure rounding noise in both).
    scale = float(np.max(np.abs(pred))) if np.all(np.isfinite(pred)) else math.inf
    scales = (scale, scale * scale, scale * float(np.max(np.abs(Y - Y.mean()))))
    for got, want, size in zip((result.mean, result.var, result.cov), _numpy_moments(pred, Y), scales):
        assert _close(got, want) or abs(got - want) <= 1e-12 * size, (expr, got, want)
    assert result.status == scoring.FIT_SKIPPED


@SETTINGS
@given(sums)
def test_term_weights_are_the_least_squares_ones_or_the_reason_they_are_not(expr):
    encoded = scoring.encode_sum(expr.symbols)
    if encoded.varying.shape[0] < 2:
        return
    result = scoring.score_sum(encoded, expr.constants, COLUMNS, Y, fit_terms=True)
    distinct = []  # the varying terms not equal at every row to an earlier distinct one
    for i in encoded.varying:
        if not any(np.array_equal(result.values[i], result.values[j]) for j in distinct):
            distinct.append(int(i))
    if result.status != scoring.FIT_NON_FINITE:
        assert list(encoded.varying[result.distinct]) == distinct
        assert np.all(result.weights[~result.distinct] == 0.0)
    want = fit_term_weights(result.values[distinct], Y)
    if result.status == scoring.FIT_NON_FINITE:
        assert want is None  # the numpy fit refuses the same terms
    elif result.status == scoring.FIT_DONE:
        assert want is not None
        weights, intercept, mse = want
        np.testing.assert_allclose(result.weights[result.distinct], weights, rtol=1e-6,
                                   atol=1e-9 * max(1.0, np.abs(weights).max()))
        assert math.isclose(result.mse, mse, rel_tol=1e-7, abs_tol=1e-12 * float(Y @ Y))
        assert math.isclose(result.intercept, intercept, rel_tol=1e-6, abs_tol=1e-6)
    else:
        assert result.status == scoring.FIT_COLLINEAR


def test_collinear_and_non_finite_terms_are_reported_not_solved():
    y = COLUMNS[0] * 2.0 + 1.0
    twice = parse("x0 + 2*x0")  # exactly collinear terms
    result = scoring.score_sum(scoring.encode_sum(twice.symbols), twice.constants, COLUMNS, y, True)
    assert result.status == scoring.FIT_COLLINEAR
    copies = parse("x0*x1 + sin(x2) + x1*x0")  # the third term is the first again, row by row
    y = 3.0 * COLUMNS[0] * COLUMNS[1] + np.sin(COLUMNS[2])
    result = scoring.score_sum(scoring.encode_sum(copies.symbols), copies.constants, COLUMNS, y, True)
    assert result.status == scoring.FIT_DONE and list(result.kept) == [1, 1, 0]
    np.testing.assert_allclose(result.weights, [3.0, 1.0, 0.0], rtol=1e-9, atol=1e-12)
    pole = parse("x1 + 1/x0")  # x0 = 0 on one row
    result = scoring.score_sum(scoring.encode_sum(pole.symbols), pole.constants, COLUMNS, y, True)
    assert result.status == scoring.FIT_NON_FINITE and not math.isfinite(result.var)
    exact = parse("x0*x1 + sin(x2) - 3.5")
    y = 0.5 * COLUMNS[0] * COLUMNS[1] - 2.0 * np.sin(COLUMNS[2]) + 4.0
    result = scoring.score_sum(scoring.encode_sum(exact.symbols), exact.constants, COLUMNS, y, True)
    assert result.status == scoring.FIT_DONE
    np.testing.assert_allclose(result.weights, [0.5, -2.0], rtol=1e-9)
    assert result.intercept == pytest.approx(4.0, rel=1e-9) and result.mse < 1e-20


def _evaluator(compiled: bool, y: np.ndarray = Y) -> Evaluator:
    config = SearchConfig(max_rows=None)
    ev = Evaluator(COLUMNS.T, y, config, Budget(max_evaluations=10**9).start(), ParetoArchive(),
                   np.random.default_rng(0))
    ev.compiled = compiled
    return ev


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(sums, min_size=1, max_size=5))
def test_the_evaluator_scores_and_archives_the_same_with_either_path(exprs):
    compiled, reference = _evaluator(True), _evaluator(False)
    for expr in exprs:
        assert _close(compiled.score(expr, False), reference.score(expr, False)), expr
    assert compiled.budget.evaluations == reference.budget.evaluations
    got, want = compiled.archive.front(), reference.archive.front()
    assert [e.size for e in got] == [e.size for e in want]
    for a, b in zip(got, want):
        assert a.expression.symbols == b.expression.symbols
        assert math.isclose(a.mse, b.mse, rel_tol=1e-6, abs_tol=1e-12)


@SETTINGS
@given(sums)
def test_the_stack_depth_is_what_evaluating_each_term_needs(expr):
    # The compiled evaluation trusts this depth for its stack (no bounds checks): too small would
    # write past the buffer, so it is checked against a plain simulation of each term's program.
    from dgsr.core.operators import ARITY

    encoded = scoring.encode_sum(expr.symbols)
    need = 0
    for _, term in additive_terms(expr):
        height = 0
        for s in reversed(term.symbols):
            height += 1 - ARITY.get(s, 0)
            need = max(need, height)
    assert encoded.depth == need
    assert encoded.starts[-1] == len(encoded.ops) == sum(t.size for _, t in additive_terms(expr))


@pytest.mark.parametrize("compiled", [True, False])
def test_a_repeated_term_is_weighted_once_in_the_archived_sum(compiled):
    # y is exactly 3*x0*x1 + sin(x2) - 1; the child repeats x0*x1 (as x1*x0): the archive gets the
    # two-term sum ), not the three-term one with the weight split in halves.
    evaluator = _evaluator(compiled, 3.0 * COLUMNS[0] * COLUMNS[1] + np.sin(COLUMNS[2]) - 1.0)
    assert evaluator.score(parse("x0*x1 + sin(x2) + x1*x0"), False) == pytest.approx(1.0, abs=1e-12)
    best = min(evaluator.archive.front(), key=lambda entry: entry.mse)
    assert best.size == (3 + 3) + (2 + 3) + 1  # two weighted terms and the intercept
    assert sorted(best.expression.symbols).count("x0") == 1
    np.testing.assert_allclose(evaluate_columns(best.expression, COLUMNS), evaluator.y, rtol=1e-9, atol=1e-9)
