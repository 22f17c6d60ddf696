"""Sums of library operands as a trial's first proposals (issue 25: Friedman's additive laws)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dgsr.core.expression import Expression
from dgsr.policies.semantic.additive import greedy_sums
from dgsr.policies.semantic.policy import SemanticPolicy

pytestmark = pytest.mark.timeout(120, method="thread")


def _operands(n: int = 120, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(8, n))


def _left_share(values: np.ndarray, terms: list[int], y: np.ndarray) -> float:
    """Share of var(y) left by least squares on the terms and an intercept (computed apart)."""
    A = np.column_stack([values[terms].T, np.ones(len(y))])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    return float(r @ r) / float((y - y.mean()) @ (y - y.mean()))


def test_forward_selection_finds_the_terms_of_an_additive_law():
    V = _operands()
    y = 2.0 * V[1] - 3.0 * V[4] + 0.5 * V[6] + 7.0
    sizes = np.full(8, 3.0)
    sums = greedy_sums(V, sizes, y, size_penalty=0.03, max_size=60)
    assert sums, "no sum of two or more terms"
    match, terms = max(sums, key=lambda s: s[0])
    assert sorted(terms) == [1, 4, 6]
    # The match is the policy's: -log10 of the share left, less the size penalty per node.
    size = 3 * 3 + 2  # three operands and two add nodes
    expected = -math.log10(max(_left_share(V, terms, y), 1e-12)) - 0.03 * size
    assert match == pytest.approx(expected, abs=1e-6)


def test_each_prefix_is_scored_by_its_own_least_squares_fit():
    V = _operands(seed=1)
    rng = np.random.default_rng(3)
    y = V[0] + 0.7 * V[2] + 0.4 * V[5] + rng.normal(0, 0.3, V.shape[1])
    sizes = np.arange(1.0, 9.0)
    for match, terms in greedy_sums(V, sizes, y, size_penalty=0.05, max_size=60):
        size = sum(sizes[terms]) + len(terms) - 1
        assert match == pytest.approx(-math.log10(_left_share(V, terms, y)) - 0.05 * size, abs=1e-6)


def test_a_forced_first_term_leads_and_the_size_limit_holds():
    V = _operands(seed=2)
    y = V[2] + V[3] + V[7]
    sizes = np.full(8, 5.0)
    sums = greedy_sums(V, sizes, y, size_penalty=0.0, max_size=17, first=0)
    assert sums and all(terms[0] == 0 for _, terms in sums)
    assert all(sum(sizes[t]) + len(t) - 1 <= 17 for _, t in sums)
    assert max(len(t) for _, t in sums) == 3  # 3 operands of 5 nodes and 2 adds fill 17


def test_a_collinear_operand_is_never_added():
    V = _operands(seed=4)
    V[5] = -2.0 * V[1] + 3.0  # the same direction as operand 1, up to scale and offset
    y = V[1] + V[2]
    sums = greedy_sums(V, np.ones(8), y, size_penalty=0.0, max_size=60)
    assert all(not {1, 5} <= set(t) for _, t in sums)


@pytest.mark.parametrize("y", [np.full(50, 3.0), np.full(50, np.nan)])
def test_nothing_to_explain_gives_no_sums(y):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert greedy_sums(_operands(50), np.ones(8), y, size_penalty=0.03, max_size=60) == []


def _first_proposals(policy: SemanticPolicy, X: np.ndarray, y: np.ndarray) -> list[Expression]:
    rng = np.random.default_rng(0)
    ctx = policy.prepare(X, y, rng)
    return [p.mutation.operand for p in policy.propose(ctx, Expression.empty(), 16, rng)]


def test_a_trials_first_proposals_hold_the_additive_law_and_single_operands():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.7, 1.7, size=(300, 5))
    y = (2.0 * np.sin(0.26 * (X[:, 0] + 1.7) * (X[:, 1] + 1.75)) + 0.3 * X[:, 2] ** 2 + 0.6 * X[:, 3]
         + 0.3 * X[:, 4])
    with_sums = _first_proposals(SemanticPolicy(random_share=0.0), X, y)
    sums = [e for e in with_sums if e.symbols[0] == "add" and "sin" in e.symbols]
    assert sums, "no sum with the sine among the first proposals"
    best = sums[0]
    assert {"x0", "x1", "x3", "x4"} <= {f"x{v}" for v in best.variables}
    assert any(e.size <= 6 for e in with_sums)  # single operands are still proposed
    without = _first_proposals(SemanticPolicy(random_share=0.0, additive_roots=False), X, y)
    assert not any(e.symbols[0] == "add" and "sin" in e.symbols and len(e.variables) >= 4 for e in without)


def test_an_unusable_first_term_gives_no_sums_and_is_never_chosen():
    """An operand with a non-finite value (or no spread) cannot be a term: forced first it gives
    no sums, and free selection never picks it, whatever it would explain on the other rows."""
    V = _operands(seed=5)
    y = V[3] + V[6]
    V[3, 7] = np.nan
    V[6] = 2.0  # no spread
    assert greedy_sums(V, np.ones(8), y, size_penalty=0.0, max_size=60, first=3) == []
    assert greedy_sums(V, np.ones(8), y, size_penalty=0.0, max_size=60, first=6) == []
    assert all(not {3, 6} & set(t) for _, t in greedy_sums(V, np.ones(8), y, size_penalty=0.0, max_size=60))
