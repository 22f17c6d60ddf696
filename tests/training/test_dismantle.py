"""Backward dismantling: replaying the mutations rebuilds the ground truth exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.search.mutations import MUTATION_OPERATORS, Mutation, apply_mutation
from dgsr.training.dismantle import dismantle, mutation_path, mutation_sizes, replay
from dgsr.training.generator import GeneratorConfig, random_expression, random_tree

pytestmark = pytest.mark.timeout(60, method="thread")

SIZES = (1, 10, math.inf)


def check_path(expr: Expression, path: list[tuple[Expression, Mutation]], limit: float) -> None:
    state = Expression.empty()
    for before, m in path:
        assert before == state
        assert m.op in MUTATION_OPERATORS
        assert (m.op == "root") == (before.is_empty)
        assert m.size <= limit
        state = apply_mutation(state, m)  # accepted by the engine's own rules
        assert state.size > before.size  # mutations strictly grow (paper, Section 3.3)
    assert state == expr  # symbols and constants, bit for bit


@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(0, 28), d=st.integers(1, 10))
@settings(max_examples=1000, deadline=None)
def test_dismantle_then_replay_gives_back_unsimplified_trees(seed, n_ops, d):
    rng = np.random.default_rng(seed)
    expr = random_tree(rng, n_ops, d)  # raw trees: up to 57 nodes, nothing folded
    for limit in SIZES:
        check_path(expr, mutation_path(expr, rng, limit), limit)


def test_dismantle_then_replay_on_generated_expressions():
    rng = np.random.default_rng(0)
    config = GeneratorConfig(max_operators=40)
    for _ in range(200):
        expr = random_expression(rng, config)
        for limit in (1, 3, 10, math.inf):
            muts = dismantle(expr, rng, limit)
            assert replay(muts) == expr


def test_mutation_size_settings():
    rng = np.random.default_rng(1)
    sizes = {limit: [] for limit in SIZES}
    for _ in range(200):
        expr = random_expression(rng)
        for limit in SIZES:
            muts = dismantle(expr, rng, limit)
            sizes[limit] += mutation_sizes(muts)
            if limit == math.inf:
                assert muts == [Mutation(0, "root", expr)]
            if limit == 1:
                assert set(mutation_sizes(muts)) <= {0, 1}  # B is always a leaf
                assert len(muts) == sum(s != "c" and not s.startswith("x") for s in expr.symbols) + 1
    # "about 10": most mutations at @10 are far bigger than at @1 and never above 10
    assert max(sizes[10]) == 10
    assert np.median(sizes[10]) >= 5
    assert np.mean(sizes[1]) < 1


def test_figure2_example():
    expr = parse("6.67*x1*x2/sq(x0)")
    rng = np.random.default_rng(0)
    muts = dismantle(expr, rng, 1)
    assert muts[0].op == "root" and muts[0].operand.size == 1
    assert replay(muts) == expr
    assert len(muts) == 5  # 4 operators (mul, mul, div, sq) removed one by one, then the last leaf


def test_determinism_and_edge_cases():
    expr = parse("sin(x0) + x1*x2")
    a = dismantle(expr, np.random.default_rng(5), 1)
    b = dismantle(expr, np.random.default_rng(5), 1)
    assert a == b
    assert dismantle(Expression.empty(), np.random.default_rng(0)) == []
    leaf = Expression.variable(3)
    assert dismantle(leaf, np.random.default_rng(0), 1) == [Mutation(0, "root", leaf)]
    with pytest.raises(ValueError):
        dismantle(expr, np.random.default_rng(0), 0)
