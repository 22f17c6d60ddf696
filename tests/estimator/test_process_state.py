"""A fit leaves the process as it found it: the collector's thresholds, the SIGINT, SIGALRM and
SIGTERM handlers, the warning display and the BLAS threads."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.estimator.regressor import SymbolicRegressor
from tests.process_state import own_process_state, process_state  # noqa: F401  (a fixture)

pytestmark = pytest.mark.timeout(300, method="thread")


def test_a_fit_leaves_the_process_state_as_it_found_it(own_process_state):  # noqa: F811
    X = np.random.default_rng(0).uniform(1, 3, size=(60, 2))
    y = X[:, 0] / X[:, 1]
    est = SymbolicRegressor(policy="random", max_evaluations=400, max_time=30, random_state=0)
    est.fit(X, y)
    _ = est.equations_  # the display's simplification runs under a time cap (SIGALRM)
    assert process_state() == own_process_state


def test_a_fit_interrupted_by_an_exception_leaves_it_too(own_process_state, monkeypatch):  # noqa: F811
    from dgsr.search import tree

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(tree.Trial, "iterate", boom)
    X = np.random.default_rng(0).uniform(1, 3, size=(60, 2))
    with pytest.raises(RuntimeError, match="boom"):
        SymbolicRegressor(policy="random", max_evaluations=400, random_state=0).fit(X, X[:, 0])
    assert process_state() == own_process_state
