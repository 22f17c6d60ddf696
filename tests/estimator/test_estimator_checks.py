"""scikit-learn's estimator checks (docs/DESIGN.md, "Estimator"), every one, with a tiny search budget.

``max_evaluations`` binds long before ``max_time``, so results are reproducible for a fixed
``random_state``, which the idempotence and dtype-invariance checks rely on.
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dgsr.estimator.regressor import SymbolicRegressor

# The one check we cannot pass by design: integer weights must give exactly the model fitted on
# repeated rows, but the search draws its rows and subsets at random, so the two searches differ
# (each is still weighted correctly; tests/test_features_api.py checks that property itself).
_EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data":
        "a stochastic search: weighted and repeated rows give different (equally valid) searches",
}


@parametrize_with_checks([SymbolicRegressor(policy="random", max_evaluations=200, max_time=30)],
                         expected_failed_checks=lambda est: _EXPECTED_FAILURES)
@pytest.mark.timeout(120, method="thread")
def test_sklearn_compatible(estimator, check):
    check(estimator)
