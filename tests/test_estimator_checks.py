"""scikit-learn's estimator checks (DESIGN §4 habit 9), every one, with a tiny search budget.

``max_evaluations`` binds long before ``max_time``, so results are reproducible for a fixed
``random_state``, which the idempotence and dtype-invariance checks rely on.
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dgsr.regressor import SymbolicRegressor


@parametrize_with_checks([SymbolicRegressor(policy="random", max_evaluations=200, max_time=30)])
@pytest.mark.timeout(120, method="thread")
def test_sklearn_compatible(estimator, check):
    check(estimator)
