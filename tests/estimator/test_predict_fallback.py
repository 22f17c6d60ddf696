"""predict where the selected expression is undefined (issue 11, item 2; CONTRACTS §6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dgsr.core.parser import parse
from dgsr.estimator.front import FrontEntry
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(60, method="thread")


def _hand_fitted(front, best: int, y_mean: float) -> SymbolicRegressor:
    est = SymbolicRegressor(policy="random")
    est._front = [FrontEntry(e.size, e, float(i + 1), 0.0) for i, e in enumerate(front)]
    est.best_index_, est.expression_ = best, front[best]
    est._feature_index, est.selected_features_ = np.array([0]), ["x"]
    est._y_mean, est.n_features_in_ = y_mean, 1
    est.equations_ = pd.DataFrame({"equation": [e.format(["x"]) for e in front]})
    return est


def test_warning_names_the_rows_and_the_fallback_used():
    est = _hand_fitted([parse("sqrt(x0)"), parse("1/x0"), parse("log(x0)")], best=2, y_mean=7.0)
    X = np.array([[4.0], [-2.0], [0.0], [1.0]])
    with pytest.warns(RuntimeWarning) as record:
        pred = est.predict(X)
    message = str(record[0].message)
    # log(-2) -> 1/x (sqrt is NaN there too); log(0) -> sqrt(0) = 0, the most accurate one finite there.
    assert "undefined on 2 of 4 rows (rows 1, 2)" in message
    assert "row 0 of equations_ (sqrt(x)) on row 2" in message
    assert "row 1 of equations_ (1.0/x) on row 1" in message
    assert "strict=True" in message
    np.testing.assert_allclose(pred, [np.log(4.0), -0.5, 0.0, 0.0])


def test_warning_names_the_training_mean_when_nothing_is_finite():
    est = _hand_fitted([parse("log(x0)"), parse("sqrt(x0)")], best=0, y_mean=7.0)
    with pytest.warns(RuntimeWarning, match=r"the training mean \(7\) on row 0"):
        pred = est.predict(np.array([[-1.0], [1.0]]))
    np.testing.assert_array_equal(pred, [7.0, 0.0])


def test_strict_predict_returns_nan_on_undefined_rows():
    est = _hand_fitted([parse("sqrt(x0)"), parse("1/x0"), parse("log(x0)")], best=2, y_mean=7.0)
    X = np.array([[4.0], [-2.0], [0.0], [1.0]])
    with pytest.warns(RuntimeWarning, match=r"undefined on 2 of 4 rows \(rows 1, 2\); they are NaN"):
        pred = est.predict(X, strict=True)
    assert np.isnan(pred[1]) and np.isnan(pred[2])
    np.testing.assert_allclose(pred[[0, 3]], [np.log(4.0), 0.0])


def test_long_row_lists_are_cut():
    est = _hand_fitted([parse("sqrt(x0)"), parse("log(x0)")], best=1, y_mean=0.0)
    X = -np.arange(1.0, 31.0).reshape(-1, 1)
    with pytest.warns(RuntimeWarning, match=r"rows 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 20 more"):
        est.predict(X)
