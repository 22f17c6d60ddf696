"""``SearchConfig.roots`` (the estimator's ``guesses``): scored with fitted constants before the
first trial, and trials start from them in turn with the empty expression."""

from __future__ import annotations

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.parser import parse
from dgsr.policies.random import RandomPolicy
from dgsr.search.mcts import SearchConfig, run_search


class _Recording(RandomPolicy):
    """The random policy, remembering the expression each trial's first expansion starts from."""

    def __init__(self) -> None:
        super().__init__()
        self.first: list[str] = []
        self._fresh = False

    def prepare(self, X, y, rng):
        self._fresh = True
        return super().prepare(X, y, rng)

    def propose(self, context, expression, n, rng):
        if self._fresh:
            self.first.append(str(expression))
            self._fresh = False
        return super().propose(context, expression, n, rng)


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (100, 2))
    return X, 2.5 * X[:, 0] * X[:, 1] + 0.25


def test_a_root_joins_the_archive_with_its_constants_fitted_before_any_trial():
    X, y = _data()
    root = parse("7*x0*x1 + 1")
    result = run_search(X, y, RandomPolicy(), rng=0, config=SearchConfig(roots=(root,), max_trials=0),
                        budget=Budget(max_evaluations=1000))
    assert result.n_trials == 0 and result.best is not None and result.best.r2 > 1 - 1e-12
    empty = run_search(X, y, RandomPolicy(), rng=0, config=SearchConfig(max_trials=0),
                       budget=Budget(max_evaluations=1000))
    assert empty.best is None


def test_trials_start_from_the_roots_in_turn_with_the_empty_expression():
    X, y = _data()
    roots = (parse("x0*x1"), parse("x0 + x1"))
    policy = _Recording()
    run_search(X, y, policy, rng=0, config=SearchConfig(roots=roots, max_trials=6, iterations_per_trial=2),
               budget=Budget(max_evaluations=10_000))
    expected = [str(roots[0]), str(roots[1]), str(parse("x0").__class__.empty())] * 2
    assert policy.first == expected
