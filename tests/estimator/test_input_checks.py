"""Every bad input to ``SymbolicRegressor.fit`` fails at the start with a message that says what is wrong.

These tests never reach the search: validation runs first, so each one takes milliseconds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import DataConversionWarning

from dgsr.estimator.input_checks import validate_training_data
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(30, method="thread")


def _est(**kw) -> SymbolicRegressor:
    return SymbolicRegressor(policy="random", max_evaluations=100, max_time=5, **kw)


def _fit_error(X, y, match: str, exc: type = ValueError, **kw) -> None:
    with pytest.raises(exc, match=match):
        _est(**kw).fit(X, y)


def test_nan_in_X_names_row_and_column():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 2.0, np.nan, 4.0]})
    _fit_error(X, [1, 2, 3, 4], r"X contains NaN.*1 row\(s\), first at row 2, column 'b'")


def test_inf_in_X_and_y():
    X = np.ones((4, 2))
    X[3, 0] = np.inf
    _fit_error(X, [1, 2, 3, 4], r"X contains inf.*row 3, column 'x0'")
    _fit_error(np.ones((4, 2)), [1.0, -np.inf, 3.0, 4.0], r"y contains inf.*row 1")


def test_nan_in_y():
    _fit_error(np.ones((4, 2)), [1.0, np.nan, np.nan, 4.0], r"y contains NaN.*2 row\(s\), first at row 1")


def test_non_numeric_columns_are_named():
    X = pd.DataFrame({"mass": [1.0, 2.0, 3.0], "colour": ["red", "blue", "red"], "when": pd.date_range("2020", periods=3)})
    with pytest.raises(ValueError, match="Non-numeric column") as info:
        _est().fit(X, [1.0, 2.0, 3.0])
    assert "'colour'" in str(info.value) and "'when'" in str(info.value) and "'mass'" not in str(info.value)


def test_numeric_object_column_is_accepted():
    # Object columns that hold numbers convert (scikit-learn's check_dtype_object asks for this).
    X = pd.DataFrame({"a": np.array([1.0, 2.0, 3.0], dtype=object)})
    data = validate_training_data(_est(), X, [1.0, 2.0, 3.0])
    assert data.X.dtype == np.float64 and data.names == ("a",)


def test_string_target():
    _fit_error(np.ones((3, 1)), ["a", "b", "c"], "target y must be numeric")


def test_mismatched_lengths():
    _fit_error(np.ones((5, 2)), np.ones(4), r"inconsistent numbers of samples: \[5, 4\]")


def test_too_few_rows():
    _fit_error(np.ones((1, 3)), [1.0], r"1 sample\(s\).*minimum of 2")


def test_empty_arrays():
    _fit_error(np.empty((0, 3)), [], r"0 sample\(s\)")
    _fit_error(np.empty((5, 0)), np.arange(5.0), r"0 feature\(s\)")


def test_1d_X():
    _fit_error(np.arange(5.0), np.arange(5.0), "Expected 2D array")


def test_complex_data():
    _fit_error(np.ones((3, 2)) * (1 + 1j), np.ones(3), "Complex data not supported")
    _fit_error(np.ones((3, 2)), np.ones(3) * 1j, "Complex data not supported")


def test_y_with_several_columns():
    # fit takes several targets (tests/estimator/test_multi_output.py); each output's fit, and this
    # single-output check, still refuse a 2-D y, and a y of three dimensions is refused by fit.
    with pytest.raises(ValueError, match=r"y should be a 1d array.*\(4, 2\)"):
        validate_training_data(_est(), np.ones((4, 2)), np.ones((4, 2)))
    _fit_error(np.ones((4, 2)), np.ones((4, 2, 2)), "Found array with dim 3")


def test_column_vector_y_warns_and_is_accepted():
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        data = validate_training_data(_est(), np.arange(6.0).reshape(3, 2), np.array([[1.0], [2.0], [3.0]]))
    np.testing.assert_array_equal(data.y, [1.0, 2.0, 3.0])


def test_y_none():
    _fit_error(np.ones((3, 2)), None, "requires y")


def test_dataframe_names_and_dtypes():
    X = pd.DataFrame({"m": np.array([1, 2, 3], dtype=np.int32), "g": np.array([1.5, 2.5, 3.5], dtype=np.float32)})
    est = _est()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean DataFrame must not warn
        data = validate_training_data(est, X, pd.Series([1, 2, 3]))
    assert data.names == ("m", "g")
    assert data.X.dtype == np.float64 and data.y.dtype == np.float64
    assert list(est.feature_names_in_) == ["m", "g"] and est.n_features_in_ == 2


@pytest.mark.parametrize(
    "params, match",
    [
        ({"max_time": -1}, "max_time must be a positive"),
        ({"max_time": float("nan")}, "max_time must be a positive"),
        ({"max_evaluations": 0}, "max_evaluations must be a positive integer"),
        ({"max_evaluations": 2.5}, "max_evaluations must be a positive integer"),
        ({"max_time": None, "max_evaluations": None}, "At least one of max_time and max_evaluations"),
        ({"n_samples": 0}, "n_samples must be a positive integer"),
        ({"p_uct": -0.1}, "p_uct must be a non-negative"),
        ({"max_features": 0}, "max_features must be a positive integer"),
        ({"constant_fitting": "sometimes"}, "constant_fitting must be None or one of"),
        ({"model_selection": "simplest"}, "model_selection must be one of"),
        ({"target_r2": 1.5}, "target_r2 must be None or a finite number <= 1"),
        ({"policy": "clever"}, "policy must be 'semantic', 'learned', 'neural', 'random'"),
    ],
)
def test_bad_parameters(params, match):
    base = {"policy": "random", "max_evaluations": 100, "max_time": 5}
    base.update(params)
    with pytest.raises(ValueError, match=match):
        SymbolicRegressor(**base).fit(np.arange(10.0).reshape(5, 2), np.arange(5.0))


def test_predict_checks_columns_and_finiteness():
    est = _est()
    # Fitted state by hand: the checks in predict do not depend on how the front was found.
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0, 2.0]})
    validate_training_data(est, X, [1.0, 2.0, 3.0])
    from dgsr.estimator.input_checks import validate_predict_data

    with pytest.raises(ValueError, match="X contains NaN.*column 'b'"):
        validate_predict_data(est, pd.DataFrame({"a": [1.0], "b": [np.nan]}))
    with pytest.raises(ValueError, match="features"), pytest.warns(UserWarning, match="feature names"):
        validate_predict_data(est, np.ones((2, 3)))
    with pytest.raises(ValueError, match="Non-numeric column"):
        validate_predict_data(est, pd.DataFrame({"a": [1.0], "b": ["x"]}))
