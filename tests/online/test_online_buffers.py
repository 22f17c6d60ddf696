"""Expert-iteration buffers: shortest solution path kept, critic targets, FIFO order (Section 3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.budget import Budget
from dgsr.core.evaluate import evaluate, r2_score
from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.online.buffers import ExpertBuffers, FIFOBuffer, Points, shortest_path
from dgsr.policies.random import RandomPolicy
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.mutations import Mutation, apply_mutation

NAMES = ["x0", "x1"]


def _points() -> Points:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20, 2))
    return Points(X, X[:, 0] + X[:, 1])


def _path(*infix: str) -> list[tuple[Expression, Mutation]]:
    """A path that builds each expression of ``infix`` with one root mutation from the empty one."""
    return [(Expression.empty(), Mutation(0, "root", parse(s, NAMES))) for s in infix]


@pytest.mark.timeout(60, method="thread")
def test_shortest_solution_sequence_is_kept():
    long, short, other = _path("x0", "x1", "x0"), _path("x1"), _path("x0", "x1")
    assert shortest_path([None, long, short, other]) == short
    assert shortest_path([None, []]) is None
    buffers = ExpertBuffers()
    added = buffers.add_trial(_points(), [long, None, short, other], [])
    assert added == (1, 0)
    assert [item.mutation for item in buffers.mutations] == [m for _, m in short]
    # a tie keeps the first
    buffers.add_trial(_points(), [_path("x0"), _path("x1")], [])
    assert list(buffers.mutations)[-1].mutation.operand == parse("x0", NAMES)


@pytest.mark.timeout(60, method="thread")
def test_critic_targets_are_clipped_and_non_finite_ones_dropped():
    buffers = ExpertBuffers()
    e = parse("x0*x1", NAMES)
    added = buffers.add_trial(_points(), [], [
        (e, 0.4),             # kept as given (the search already applied the visit threshold)
        (e, 1.0),
        (e, float("nan")),    # not a target
        (e, float("inf")),
        (e, 1.7),             # clipped to [0, 1]
        (e, -0.2),
    ])
    assert added == (0, 4)
    assert [item.target for item in buffers.critic] == [0.4, 1.0, 1.0, 0.0]


@pytest.mark.timeout(60, method="thread")
def test_fifo_drops_oldest_and_round_trips():
    buf: FIFOBuffer[int] = FIFOBuffer(3)
    buf.extend(range(5))
    assert list(buf) == [2, 3, 4] and buf.total_added == 5
    draws = buf.sample(50, np.random.default_rng(0))
    assert set(draws) == {2, 3, 4}
    assert FIFOBuffer(2).sample(4, np.random.default_rng(0)) == []
    copy: FIFOBuffer[int] = FIFOBuffer(1)
    copy.load_state_dict(buf.state_dict())
    assert list(copy) == [2, 3, 4] and copy.capacity == 3
    copy.extend([5])
    assert list(copy) == [3, 4, 5]
    with pytest.raises(ValueError):
        FIFOBuffer(0)


class _CriticPolicy(RandomPolicy):
    """Random mutations with a constant critic (0.25), so node values are not all 1."""

    has_critic = True

    def value(self, context, expressions):
        return np.full(len(expressions), 0.25)


def _search_records(min_visits: int):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(100, 2))
    y = X[:, 0] * X[:, 1] + X[:, 0]
    config = SearchConfig(n_samples=8, iterations_per_trial=60, constant_fitting="never", max_trials=2,
                          record_training_data=True, min_visits=min_visits)
    result = run_search(X, y, _CriticPolicy(), config=config, rng=1, budget=Budget(max_evaluations=5000))
    return X, y, result.trials


@pytest.mark.timeout(60, method="thread")
def test_search_records_feed_the_buffers():
    X, y, trials = _search_records(min_visits=10**6)  # no node is visited that often
    solved = [t for t in trials if t.solution_path]
    assert solved, "the random policy should solve x0*x1 + x0 in 60 iterations"
    buffers = ExpertBuffers()
    for t in trials:
        buffers.add_trial(Points(X, y), [t.solution_path], t.critic_targets)
        # with the threshold out of reach only nodes on solution paths give critic targets
        assert all(target == 1.0 for _, target in t.critic_targets)
    # the kept sequence replays from the empty expression to a solution
    path = solved[0].solution_path
    expr = Expression.empty()
    for state, mutation in path:
        assert state == expr
        expr = apply_mutation(expr, mutation)
    pred = evaluate(expr, X)
    scaled = np.polyval(np.polyfit(pred, y, 1), pred)  # the search scores a*f + b (linear scaling)
    assert r2_score(y, scaled) >= 0.99
    assert len(buffers.mutations) == sum(len(t.solution_path or []) for t in trials)
    _, _, loose = _search_records(min_visits=1)
    assert any(target < 1.0 for t in loose for _, target in t.critic_targets)
