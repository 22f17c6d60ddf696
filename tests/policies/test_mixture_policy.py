"""MixturePolicy: each member proposes its share of K; priors weighted, merged by child, normalised."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgsr.core.budget import Budget
from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.policies.mixture import MixturePolicy, apportion
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.mutations import Mutation, apply_mutation
from dgsr.search.policy import Proposal


class FixedPolicy:
    """Proposes the first k of a fixed list with the given priors; records what it was asked."""

    def __init__(self, proposals: list[Proposal], values: float | None = None):
        self.proposals = proposals
        self.asked: list[int] = []
        self.has_critic = values is not None
        self.max_variables = None
        self._values = values

    def prepare(self, X, y, rng):
        return "ctx"

    def propose(self, context, expression, k, rng):
        assert context == "ctx"
        self.asked.append(k)
        return self.proposals[:k]

    def value(self, context, expressions):
        return np.full(len(expressions), np.nan if self._values is None else self._values)


def _x(i: int) -> Expression:
    return parse(f"x{i}")


@given(k=st.integers(0, 64), weights=st.lists(st.floats(0.01, 10.0), min_size=1, max_size=5))
@settings(max_examples=200, deadline=None)
def test_apportion_sums_to_k_and_stays_within_one_of_the_exact_share(k, weights):
    shares = apportion(k, weights)
    exact = k * np.asarray(weights) / sum(weights)
    assert sum(shares) == k
    assert all(s >= 0 for s in shares)
    assert np.all(np.abs(np.asarray(shares) - exact) < 1.0)


def test_apportion_examples():
    assert apportion(16, [0.5, 0.5]) == [8, 8]
    assert apportion(16, [3, 1]) == [12, 4]
    assert apportion(5, [1, 1, 1]) == [2, 2, 1]   # the tie goes to the earlier members


def test_each_member_proposes_its_share_and_priors_are_weighted_then_normalised():
    expr = parse("x0")
    a = FixedPolicy([Proposal(Mutation(0, "add", _x(1)), 0.5), Proposal(Mutation(0, "mul", _x(1)), 0.3),
                     Proposal(Mutation(0, "sub", _x(1)), 0.2)])
    b = FixedPolicy([Proposal(Mutation(0, "sin"), 1.0)])
    mix = MixturePolicy([a, b], [3, 1])
    ctx = mix.prepare(np.zeros((4, 2)), np.zeros(4), np.random.default_rng(0))
    out = mix.propose(ctx, expr, 4, np.random.default_rng(0))
    assert a.asked == [3] and b.asked == [1]
    priors = {str(p.mutation): p.prior for p in out}
    assert len(out) == 4
    assert sum(priors.values()) == pytest.approx(1.0)
    # member weights 0.75 / 0.25 times each member's own priors (which sum to 1 in both members)
    assert priors["<0, add, x1>"] == pytest.approx(0.75 * 0.5)
    assert priors["<0, sin>"] == pytest.approx(0.25 * 1.0)


def test_a_child_proposed_by_two_members_is_kept_once_with_the_sum_of_its_priors():
    expr = parse("x0")
    same = Mutation(0, "add", _x(1))
    a = FixedPolicy([Proposal(same, 0.6), Proposal(Mutation(0, "cos"), 0.4)])
    b = FixedPolicy([Proposal(same, 0.5), Proposal(Mutation(0, "exp"), 0.5)])
    mix = MixturePolicy([a, b], [1, 1])
    ctx = mix.prepare(np.zeros((3, 2)), np.zeros(3), np.random.default_rng(0))
    out = mix.propose(ctx, expr, 4, np.random.default_rng(0))
    priors = {apply_mutation(expr, p.mutation).key(): p.prior for p in out}
    assert len(out) == len(priors) == 3
    assert priors[apply_mutation(expr, same).key()] == pytest.approx(0.5 * 0.6 + 0.5 * 0.5)
    assert priors[apply_mutation(expr, Mutation(0, "cos")).key()] == pytest.approx(0.5 * 0.4)


def test_values_come_from_the_first_member_with_a_critic():
    no_critic = FixedPolicy([])
    critic = FixedPolicy([], values=0.25)
    exprs = [parse("x0"), parse("x0 + 1")]
    ctx = np.zeros((3, 1)), np.zeros(3), np.random.default_rng(0)
    without = MixturePolicy([no_critic, FixedPolicy([])], [1, 1])
    assert not without.has_critic
    assert np.all(np.isnan(without.value(without.prepare(*ctx), exprs)))
    withc = MixturePolicy([no_critic, critic], [1, 1])
    assert withc.has_critic
    assert np.allclose(withc.value(withc.prepare(*ctx), exprs), 0.25)


@pytest.mark.parametrize("members, weights", [([], []), ([RandomPolicy()], [1, 1]), ([RandomPolicy()], [0.0]),
                                               ([RandomPolicy(), RandomPolicy()], [1, float("nan")])])
def test_bad_weights_are_rejected(members, weights):
    with pytest.raises(ValueError):
        MixturePolicy(members, weights)


def test_the_most_limited_member_sets_max_variables():
    limited = FixedPolicy([])
    limited.max_variables = 10
    assert MixturePolicy([RandomPolicy(), limited], [1, 1]).max_variables == 10
    assert MixturePolicy([RandomPolicy(), SemanticPolicy()], [1, 1]).max_variables is None


def test_a_search_with_a_mixture_finds_a_simple_law_and_is_reproducible():
    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 2.0, size=(120, 2))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 0])
    mix = MixturePolicy([SemanticPolicy(), RandomPolicy()], [0.5, 0.5])
    runs = [run_search(X, y, mix, config=SearchConfig(n_samples=8), rng=1,
                       budget=Budget(max_evaluations=3000, target_r2=0.999)) for _ in range(2)]
    best = [max(r.archive.front(), key=lambda e: e.r2) for r in runs]
    assert best[0].r2 >= 0.999
    assert best[0].expression.key() == best[1].expression.key()


def test_the_estimator_takes_a_mixture_as_its_policy():
    from dgsr import SymbolicRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 3.0, size=(80, 2))
    y = 3.0 * X[:, 0] / X[:, 1]
    est = SymbolicRegressor(policy=MixturePolicy([SemanticPolicy(), RandomPolicy()], [0.75, 0.25]),
                            max_evaluations=3000, max_time=60, random_state=0)
    est.fit(X, y)
    assert est.score(X, y) >= 0.999
    assert np.all(np.isfinite(est.predict(X)))
