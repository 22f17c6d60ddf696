"""``n_evaluations_`` is a whole number (issue 48, rough item): it showed 19234.36000000158."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


def test_the_count_is_an_int_within_the_budget():
    X = np.random.default_rng(0).uniform(-2, 2, (300, 2))
    est = SymbolicRegressor(policy="random", max_evaluations=3000, max_time=None, random_state=0)
    est.fit(X, X[:, 0] * X[:, 1] + np.sin(X[:, 0]))
    assert type(est.n_evaluations_) is int and 0 < est.n_evaluations_ <= 3000


def test_a_constant_target_counts_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(policy="random", max_evaluations=300, max_time=None).fit(np.ones((5, 1)), np.ones(5))
    assert type(est.n_evaluations_) is int and est.n_evaluations_ == 0
