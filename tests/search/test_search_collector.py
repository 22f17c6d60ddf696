"""The garbage collector's thresholds during a search (dgsr.runtime.collector, held by
dgsr.search.scope): raised while it runs, across every unit of a parallel search, put back after."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np

from dgsr.runtime import collector


def test_a_search_runs_with_them_and_restores_them(thresholds):
    from dgsr.core.budget import Budget
    from dgsr.policies.random import RandomPolicy
    from dgsr.search.mcts import run_search

    seen = []
    X = np.random.default_rng(0).normal(size=(40, 2))
    run_search(X, X[:, 0] * 2.0, RandomPolicy(), rng=0, budget=Budget(max_evaluations=200),
               on_progress=lambda p: seen.append(gc.get_threshold()))
    assert len(seen) >= 2 and all(t == collector.SEARCH_THRESHOLDS for t in seen[:-1])  # the last: after the search
    assert gc.get_threshold() == (700, 10, 10)


def test_finished_trees_are_freed_without_the_collector(thresholds):
    from dgsr.core.budget import Budget
    from dgsr.policies.random import RandomPolicy
    from dgsr.search.mcts import SearchConfig, run_search
    from dgsr.search.tree import Node

    def live_nodes() -> int:
        return sum(1 for o in gc.get_objects() if type(o) is Node)

    X = np.random.default_rng(0).normal(size=(40, 2))
    gc.collect()
    before = live_nodes()
    gc.disable()  # nothing but reference counting frees objects from here on
    try:
        result = run_search(X, X[:, 0] * 2.0 + np.sin(X[:, 1]), RandomPolicy(), rng=0,
                            config=SearchConfig(iterations_per_trial=20), budget=Budget(max_evaluations=1500))
        assert result.n_trials >= 3  # several trees were built and dropped
        assert live_nodes() == before
    finally:
        gc.enable()


def test_one_raised_threshold_spans_every_unit_of_a_search(thresholds):
    from dgsr.core.budget import Budget
    from dgsr.policies.random import RandomPolicy
    from dgsr.search import parallel
    from dgsr.search.mcts import SearchConfig

    seen = []
    real = parallel._run_unit

    def unit(*args, **kwargs):
        seen.append(gc.get_threshold())  # between units too: no restore, no collection of it all
        return real(*args, **kwargs)

    X = np.random.default_rng(1).normal(size=(40, 2))
    with mock.patch.object(parallel, "_run_unit", unit), mock.patch.object(parallel, "UNIT_EVALUATIONS", 300):
        parallel.run_parallel_search(X, X[:, 0] + X[:, 1] ** 2, RandomPolicy(), config=SearchConfig(),
                                     rng=np.random.default_rng(0), budget=Budget(max_evaluations=900), n_jobs=1)
    assert len(seen) == 3 and all(t == collector.SEARCH_THRESHOLDS for t in seen)
    assert gc.get_threshold() == (700, 10, 10)
