"""Work units are created one at a time (issue 48, item 5): a huge ``max_evaluations`` must not
build its generators before the first unit runs, and the units' seeds stay what they were."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.budget import Budget
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.search import parallel

pytestmark = pytest.mark.timeout(300, method="thread")


def test_the_first_unit_is_ready_before_the_others_are_built():
    rng = np.random.default_rng(1)
    tasks = parallel._tasks(Budget(max_evaluations=2.0**32), rng)
    index, _, evals = next(tasks)
    assert index == 0 and evals == 2.0**32 / parallel.n_units(2.0**32)
    # Only the first unit's generator exists: 171,799 were built eagerly before.
    assert rng.bit_generator.seed_seq.n_children_spawned == 1


@pytest.mark.parametrize("max_evaluations", [60_000, 500_000])
def test_units_keep_the_seeds_they_had_when_built_all_at_once(max_evaluations):
    count = parallel.n_units(max_evaluations)
    eager = np.random.default_rng(7).spawn(count)
    lazy = list(parallel._tasks(Budget(max_evaluations=max_evaluations), np.random.default_rng(7)))
    assert [i for i, _, _ in lazy] == list(range(count))
    assert [e for _, _, e in lazy] == [max_evaluations / count] * count
    assert [g.integers(2**62) for _, g, _ in lazy] == [g.integers(2**62) for g in eager]


def test_a_huge_evaluation_budget_leaves_a_timed_search_its_time():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (200, 2))
    y = X[:, 0] * np.sin(X[:, 1]) + X[:, 1] ** 2
    SymbolicRegressor(policy="random", max_evaluations=2000, max_time=None, random_state=0).fit(X, y)  # warm
    # Relative to the same timed search with an ordinary budget, so that a busy machine (fewer
    # evaluations in the second for both) does not decide the test: before the fix the huge
    # budget's 86k unit generators took the whole second (49 evaluations against about 15,000).
    ordinary = SymbolicRegressor(policy="random", max_evaluations=10**6, max_time=1, random_state=5).fit(X, y)
    huge = SymbolicRegressor(policy="random", max_evaluations=2**31, max_time=1, random_state=5).fit(X, y)
    assert huge.stop_reason_ == "time"
    assert huge.n_evaluations_ > 0.2 * ordinary.n_evaluations_
