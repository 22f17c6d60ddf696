"""Pareto archive and selection rules, budgets, and the random policy."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pytest

from dgsr.core.budget import Budget
from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoArchive, front_scores, select
from dgsr.core.parser import parse
from dgsr.policies.random import RandomPolicy
from dgsr.search.mutations import apply_mutation

pytestmark = pytest.mark.timeout(30, method="thread")


@dataclass
class E:
    size: int
    mse: float
    r2: float = float("nan")


def test_archive_keeps_best_per_size_and_a_non_dominated_front():
    archive = ParetoArchive()
    assert archive.add(parse("x0"), 4.0, 0.6)
    assert not archive.add(parse("x1"), 5.0, 0.5)  # same size, worse
    assert archive.add(parse("x1"), 3.0, 0.7)  # same size, better: replaces
    assert archive.add(parse("x0 + x1"), 3.5, 0.65)  # dominated by the size-1 entry
    assert archive.add(parse("x0*x1 + x0"), 1.0, 0.9)
    assert not archive.add(parse("x0*x0"), math.nan, 0.0)
    front = archive.front()
    assert [(e.size, e.mse) for e in front] == [(1, 3.0), (5, 1.0)]
    assert archive.best().size == 5


def test_selection_rules_on_a_hand_made_front():
    front = [E(1, 10.0), E(3, 1.0), E(5, 0.9), E(9, 0.5)]
    # scores: ln(10/1)/2 = 1.151, ln(1/0.9)/2 = 0.053, ln(0.9/0.5)/4 = 0.147
    assert front_scores(front) == pytest.approx([0.0, math.log(10) / 2, math.log(1 / 0.9) / 2, math.log(0.9 / 0.5) / 4])
    assert select(front, "accuracy") == 3
    assert select(front, "score") == 1
    # "best": among losses <= 1.5 * 0.5 = 0.75 only the last entry is eligible.
    assert select(front, "best") == 3
    front2 = [E(1, 10.0), E(3, 0.6), E(9, 0.5)]
    assert select(front2, "best") == 1  # within 1.5x of the lowest and a much larger score
    # "balanced": also within 0.01 of the highest R²; with var(y) = 1, R² = 1 - mse
    front3 = [E(1, 0.5, 0.5), E(3, 0.45, 0.55), E(11, 0.36, 0.64), E(13, 0.355, 0.645)]
    assert select(front3, "best") == 1  # 1.5 x 0.355 admits R² 0.55: a tenth of the variance lost
    assert select(front3, "balanced") == 2  # only the last two are within 0.01 of R² 0.645
    assert select(front2, "balanced") == select(front2, "best") == 1  # no R² known: as "best"
    with pytest.raises(ValueError, match="model_selection"):
        select(front, "shortest")
    with pytest.raises(ValueError, match="empty"):
        select([], "best")


def test_budget_reasons_and_cap():
    b = Budget(max_evaluations=10, target_r2=0.9).start()
    assert b.exhausted(0.5) is None
    assert b.exhausted(0.95) == "target"
    b.add(9.5)
    assert b.exhausted() is None
    b.add(0.5)
    assert b.exhausted() == "evaluations"
    t = Budget(max_time=0.05).start()
    assert t.cap(1.0) <= 0.05
    time.sleep(0.06)
    assert t.exhausted() == "time" and t.cap(1.0) == 0.0
    assert Budget().cap(1.0) == 1.0 and Budget().exhausted() is None
    with pytest.raises(ValueError):
        Budget(max_evaluations=0)


def test_random_policy_proposes_distinct_valid_mutations():
    policy = RandomPolicy()
    rng = np.random.default_rng(0)
    context = policy.prepare(np.zeros((5, 3)), np.zeros(5), rng)
    root = policy.propose(context, Expression.empty(), 8, rng)
    assert 1 <= len(root) <= 8
    assert all(p.mutation.op == "root" and p.mutation.node == 0 for p in root)
    expr = parse("sin(x0) + x1*x2")
    proposals = policy.propose(context, expr, 16, rng)
    assert len(proposals) == 16
    children = [apply_mutation(expr, p.mutation) for p in proposals]
    assert len({c.key() for c in children}) == 16
    assert sum(p.prior for p in proposals) == pytest.approx(1.0)
    assert all(v < 3 for c in children for v in c.variables)
    assert np.isnan(policy.value(context, children)).all()


def test_random_policy_stops_at_the_size_limit():
    policy = RandomPolicy(max_size=5)
    rng = np.random.default_rng(1)
    expr = parse("x0*x1 + x2")  # 5 nodes: nothing can grow
    assert policy.propose(policy.prepare(np.zeros((2, 3)), np.zeros(2), rng), expr, 8, rng) == []


def test_a_rewrite_of_one_function_does_not_join_the_front_on_float_rounding():
    from dgsr.core.evaluate import evaluate
    from dgsr.core.pareto import non_dominated
    from dgsr.estimator.front import FrontEntry, best_of_each_size

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (200, 3))
    y = 1.1 * X[:, 0] ** 2 * X[:, 1] / X[:, 2] ** 2 + rng.normal(0, 0.1, 200)
    trees = [parse(s) for s in ("x0**2*x1/x2**2", "x0*(x0*x1)/(x2*x2)", "1.1*x0*(x0*x1)/(x2*x2)")]
    mse = [float(np.mean((evaluate(t, X) - y) ** 2)) for t in trees]
    assert trees[0].size < trees[1].size < trees[2].size
    # the precondition that makes this a test: the larger rewrite is lower, by rounding only
    assert mse[1] < mse[0] and mse[1] == pytest.approx(mse[0], rel=1e-12)
    assert mse[2] < 0.9 * mse[0]
    archive = ParetoArchive()
    for t, m in zip(trees, mse):
        archive.add(t, m, 1.0 - m / float(np.var(y)))
    assert [e.size for e in archive.front()] == [trees[0].size, trees[2].size]
    # the estimator's refitted front goes through the same filter
    entries = [FrontEntry(t.size, t, m, 0.0) for t, m in zip(trees, mse)]
    assert [e.size for e in non_dominated(best_of_each_size(entries))] == [trees[0].size, trees[2].size]
