"""``to_numpy()`` of one row (issue 48, rough item): ``f(X[0])`` raised an IndexError."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


@pytest.fixture(scope="module")
def fitted() -> tuple[SymbolicRegressor, pd.DataFrame]:
    X = pd.DataFrame(np.random.default_rng(0).uniform(1, 3, (60, 2)), columns=["a", "b"])
    est = SymbolicRegressor(policy="random", max_evaluations=2000, max_time=None, random_state=0)
    return est.fit(X, 2.0 * X["a"] + X["b"]), X


def test_one_row_gives_its_value(fitted):
    est, X = fitted
    f = est.to_numpy()
    rows = f(X.to_numpy())
    value = f(X.to_numpy()[0])
    assert np.ndim(value) == 0 and value == pytest.approx(rows[0])
    assert f(X.iloc[0]) == pytest.approx(rows[0])  # a DataFrame row, found by its names


def test_a_row_of_the_wrong_length_is_refused(fitted):
    est, _ = fitted
    with pytest.raises(ValueError, match="1-D X is one row and needs 2 values"):
        est.to_numpy()(np.ones(3))
