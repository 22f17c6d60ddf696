"""core.kernels.child: a child's inner fit and scoring in one compiled call give, bit for bit, what
the separate calls give (the structure, the inner fit of kernels.structure, the scoring of
kernels.scoring at the fitted constants), and the search scores every child the same either way."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.inner_fit import INNER_FIT_TOLERANCES
from dgsr.core.kernels import child as kernel_child
from dgsr.core.kernels import scoring, structure
from dgsr.core.linear_terms import additive_terms, weighted_sum
from dgsr.core.parser import parse
from tests.core.sum_strategies import N_VARS, SETTINGS, sums

pytestmark = pytest.mark.timeout(300, method="thread")

rng = np.random.default_rng(11)
X = rng.uniform(0.2, 2.0, size=(200, N_VARS))
COLUMNS = as_columns(X)
Y = np.sin(1.3 * X[:, 0] * X[:, 1]) + 0.5 * X[:, 2] + 0.01 * rng.normal(size=200)
FIT_ROWS = np.sort(rng.choice(200, size=64, replace=False))
FIT_COLUMNS, FIT_Y = np.ascontiguousarray(COLUMNS[:, FIT_ROWS]), Y[FIT_ROWS]


def _separately(expr: Expression, steps: int, linear_terms: bool, max_size: int):
    """The chain as the evaluator ran it before: structure, fit, then scoring of the result."""
    shape = structure.structure(expr.symbols)
    constants, passes, status = expr.constants, 0, kernel_child.NOT_FITTED
    if shape.inner_count and steps:
        fitted, passes, status = structure.fit_structure(shape, expr.constants, FIT_COLUMNS, FIT_Y, steps,
                                                             **INNER_FIT_TOLERANCES)
        if fitted is not None:
            constants = tuple(fitted.tolist())
    if status == structure.COLLINEAR:
        return status, passes, None, None
    encoded = scoring.encode_sum(expr.symbols)
    fit_terms = linear_terms and encoded.varying.shape[0] >= 2 and encoded.varying_size <= max_size
    score = scoring.score_sum(encoded, constants, COLUMNS, Y, fit_terms)
    return status, passes, None if constants is expr.constants else constants, score


def encoded_varying(expr: Expression) -> np.ndarray:
    return scoring.encode_sum(expr.symbols).varying


def _same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@SETTINGS
@given(sums, st.sampled_from([0, 1, 4]), st.booleans(), st.sampled_from([60, 12]))
def test_one_call_gives_what_the_separate_calls_give(expr, steps, linear_terms, max_size):
    got = kernel_child.fit_and_score(expr.symbols, expr.constants, FIT_COLUMNS, FIT_Y, steps, COLUMNS, Y,
                                  linear_terms=linear_terms, max_size=max_size, **INNER_FIT_TOLERANCES)
    status, passes, constants, score = _separately(expr, steps, linear_terms, max_size)
    assert (got.fit_status, got.passes, got.constants) == (status, passes, constants)
    if score is None:
        assert got.score is None
        return
    s = got.score
    assert all(_same(a, b) for a, b in [(s.mean, score.mean), (s.var, score.var), (s.cov, score.cov)])
    assert s.status == score.status
    if s.status == scoring.FIT_DONE:
        assert _same(s.intercept, score.intercept) and _same(s.mse, score.mse)
        np.testing.assert_array_equal(s.weights, score.weights)
        np.testing.assert_array_equal(s.kept, score.kept)
        # the weighted sum the evaluator offers: the size and finiteness the call read off
        terms = additive_terms(expr)
        used = encoded_varying(expr)[s.distinct]
        built = weighted_sum([terms[i][1] for i in used], np.nan_to_num(s.weights[s.distinct]), 0.5)
        assert got.terms_size == built.size
        assert got.weights_finite == bool(np.isfinite(s.weights).all())
    np.testing.assert_array_equal(s.values, score.values)
    encoded = scoring.encode_sum(expr.symbols)
    np.testing.assert_array_equal(got.varying, encoded.varying)
    np.testing.assert_array_equal(got.lengths, encoded.lengths)
    assert got.varying_size == encoded.varying_size


def test_a_fit_that_finds_the_law_returns_its_constants_and_its_exact_score():
    expr = parse("2.0*sin(1.0*x0*x1) + x2", ["x0", "x1", "x2"])
    y = 1.5 * np.sin(1.3 * X[:, 0] * X[:, 1]) + X[:, 2]
    got = kernel_child.fit_and_score(expr.symbols, expr.constants, FIT_COLUMNS, y[FIT_ROWS], 20, COLUMNS, y,
                                  linear_terms=True, max_size=60, **INNER_FIT_TOLERANCES)
    assert got.fit_status == 0 and got.passes > 1
    inner = got.constants[1]  # the frequency (the outer weight 2.0 is the term's own coefficient)
    assert inner == pytest.approx(1.3, rel=1e-6)
    assert got.score.status == scoring.FIT_DONE and got.score.mse < 1e-18


def _searched_front(y: np.ndarray, *, seed: int, evaluations: int) -> tuple:
    """A semantic search's evaluations and front (keys, losses, R²) on ``X``, ``y``."""
    from dgsr.core.budget import Budget
    from dgsr.policies.semantic.policy import SemanticPolicy
    from dgsr.search.mcts import SearchConfig, run_search

    result = run_search(X, y, SemanticPolicy(), config=SearchConfig(inner_fit_steps=3),
                        rng=np.random.default_rng(seed), budget=Budget(max_evaluations=evaluations))
    return result.n_evaluations, [(e.expression.key(), e.mse, e.r2) for e in result.archive.front()]


def test_the_search_scores_every_child_as_the_separate_calls_do(monkeypatch):
    # The same search through the one call and through the separate calls (each child declined
    # by the one call, with no status the evaluator could reuse): the same front and the same
    # evaluations, so the one call is a speed-up, never a change of what the search sees.

    y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2] ** 2
    real, calls = kernel_child.fit_and_score, []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    def declined(symbols, *args, **kwargs):
        return kernel_child.ChildScore(kernel_child.NOT_FITTED, 0, None, None, np.zeros(0, dtype=np.int64), 0,
                                    np.zeros(0, dtype=np.int64), False)

    def front(one_call):
        monkeypatch.setattr(kernel_child, "fit_and_score", counted if one_call else declined)
        return _searched_front(y, seed=0, evaluations=3000)

    assert front(True) == front(False)
    assert len(calls) > 100


def test_children_found_collinear_are_fitted_as_the_full_path_fits_them(monkeypatch):
    # A child whose terms the one call found collinear goes to the minimum-norm start without
    # that kernel run again (fit_inner_constants(collinear=True)): the same search as when the
    # full path runs it, with such children met.
    from dgsr.search import evaluator

    y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2] ** 2 + 0.5 * X[:, 2]
    real, known = evaluator.fit_inner_constants, []

    def full_path(*args, collinear=False, **kwargs):
        known.append(collinear)
        return real(*args, **kwargs)

    def front(shortcut):
        monkeypatch.setattr(evaluator, "fit_inner_constants", real if shortcut else full_path)
        return _searched_front(y, seed=1, evaluations=6000)

    assert front(True) == front(False)
    assert sum(known) >= 3  # children found collinear were met
