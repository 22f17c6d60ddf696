"""``warm_start=True`` on changed data (issue 48, item 3): a warm refit is never less accurate than
a cold fit of the same budget, and nothing it keeps carries losses from the old rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")

_PARAMS = {"policy": "random", "max_evaluations": 6000, "max_time": None, "random_state": 0}


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(-2, 2, (200, 2))
    return X, X[:, 0] * X[:, 1] + np.sin(X[:, 0])


def _fit(est: SymbolicRegressor, X: np.ndarray, y: np.ndarray) -> SymbolicRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _changed() -> list[tuple[np.ndarray, np.ndarray]]:
    X, y = _rows(0)
    X_new, y_new = _rows(1)
    return [(X, y + 0.5), (X, 3.0 * y + np.cos(X[:, 1])), (X_new, y_new)]


@pytest.mark.parametrize("case", range(3), ids=["shifted y", "other law", "new rows"])
def test_a_warm_refit_on_changed_data_is_as_good_as_a_cold_fit(case):
    X, y = _rows(0)
    X2, y2 = _changed()[case]
    warm = _fit(SymbolicRegressor(warm_start=True, **_PARAMS), X, y)
    _fit(warm, X2, y2)
    cold = _fit(SymbolicRegressor(**_PARAMS), X2, y2)
    assert warm.equations_["r2"].max() >= cold.equations_["r2"].max() - 1e-12
    assert warm.score(X2, y2) >= cold.score(X2, y2) - 1e-3
    # Every loss the warm fit keeps for the next one is a loss on these rows.
    rows_y = warm._scaling.scale_y(y2)
    columns = as_columns(warm._scaling.scale_X(X2))
    for entry in warm._archive[1].front():
        mse = float(np.mean((evaluate_columns(entry.expression, columns) - rows_y) ** 2))
        assert entry.mse == pytest.approx(mse, rel=1e-6, abs=1e-12), entry.expression


def test_a_warm_refit_on_the_same_rows_keeps_what_it_found():
    X, y = _rows(0)
    est = _fit(SymbolicRegressor(warm_start=True, **_PARAMS), X, y)
    first = est.equations_["r2"].max()
    _fit(est, X, y)
    assert est.equations_["r2"].max() >= first - 1e-12
