"""The constant-target warning says what is constant (issue 48, rough item): with one non-zero
``sample_weight`` it said "y is constant" of a y that was not."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


def _fit(y, w):
    X = np.arange(len(y), dtype=float)[:, None]
    with pytest.warns(UserWarning) as caught:
        est = SymbolicRegressor(policy="random", max_evaluations=500, max_time=None,
                                random_state=0).fit(X, y, sample_weight=w)
    assert est.stop_reason_ == "constant_target"
    return " ".join(str(w.message) for w in caught)


def test_one_weighted_row():
    message = _fit(np.arange(20.0), np.eye(20)[3])
    assert "only one row has a non-zero sample_weight (y = 3 there)" in message
    assert "y is constant" not in message


def test_constant_on_the_weighted_rows():
    y = np.arange(20.0)
    y[:5] = 7.0
    w = np.r_[np.ones(5), np.zeros(15)]
    assert "y is constant (7) on the 5 rows with a non-zero sample_weight" in _fit(y, w)


def test_a_constant_y_is_still_called_so():
    assert "y is constant (2)" in _fit(np.full(20, 2.0), None)
