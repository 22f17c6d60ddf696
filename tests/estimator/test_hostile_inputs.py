"""Inputs of the second hostile trial (issue 26, items 7, 9 and 10): tiny data leaks no numpy
warning, a target near 1e300 gives a usable front and score, and the messages say what is wrong."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dgsr import SymbolicRegressor

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("policy", ["semantic", "random"])
@pytest.mark.parametrize("rows", [2, 3])
def test_tiny_data_leaks_no_numpy_warning(policy, rows):
    X = np.array([[1.0, 2.0], [3.0, 5.0], [2.0, 1.0]])[:rows]
    y = np.array([1.0, 4.0, 2.0])[:rows]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SymbolicRegressor(policy=policy, max_evaluations=800, random_state=0).fit(X, y)
        pred = est.predict(X)
    assert np.isfinite(pred).all()
    leaked = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not leaked, [f"{w.filename}:{w.lineno} {w.message}" for w in leaked]
    # what the user does see is dgsr's own advice
    assert all("dgsr" in str(w.message) or "max_size" in str(w.message) or "rows" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_a_target_near_1e300_gives_a_finite_score_and_no_duplicate_rows():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(40, 2))
    y = 1e300 * X[:, 0] * X[:, 1]
    with pytest.warns(UserWarning, match="overflow float64"):
        est = SymbolicRegressor(policy="random", max_evaluations=1000, random_state=0, max_size=20).fit(X, y)
    score = est.score(X, y)
    assert np.isfinite(score) and score > 0.999999
    table = est.equations_
    assert table["r2"].iloc[-1] > 0.999999
    # one row per accuracy level: no two rows at R² 1 that differ only by float noise
    assert (table["r2"] > 1 - 1e-12).sum() == 1
    np.testing.assert_allclose(est.predict(X), y, rtol=1e-9)


def test_score_matches_scikit_learn_on_ordinary_targets():
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(1)
    X = rng.uniform(1, 3, size=(60, 2))
    y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(0, 0.1, 60)
    est = SymbolicRegressor(policy="random", max_evaluations=600, random_state=0).fit(X, y)
    w = rng.uniform(0.5, 2, 60)
    assert est.score(X, y) == pytest.approx(r2_score(y, est.predict(X)), rel=1e-12)
    assert est.score(X, y, sample_weight=w) == pytest.approx(r2_score(y, est.predict(X), sample_weight=w),
                                                              rel=1e-12)


def test_messages_say_what_is_wrong():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(30, 2))
    y = X[:, 0] * X[:, 1]
    est = SymbolicRegressor(policy="random", max_evaluations=300, random_state=0).fit(X, y)
    with_nan = X.copy()
    with_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN.*row 3.*before predicting"):
        est.predict(with_nan)
    with pytest.raises(ValueError, match="random_state must be None, a non-negative integer"):
        SymbolicRegressor(random_state="abc", max_evaluations=100).fit(X, y)
    with pytest.raises(ValueError, match="0 feature.*X has no columns"):
        SymbolicRegressor(max_evaluations=100).fit(pd.DataFrame(index=range(10)), np.arange(10.0))
