"""bench/srbench/regressor.py: the SRBench hooks, on a stand-in for a fitted estimator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sympy

SUBMISSION = Path(__file__).resolve().parents[2] / "bench" / "srbench" / "regressor.py"


def _load():
    spec = importlib.util.spec_from_file_location("dgsr_srbench_regressor", SUBMISSION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Fitted:
    """Quacks like a fitted dgsr.SymbolicRegressor with a 2-row front, fitted on a plain array."""

    feature_names_in_ = None
    equations_ = pd.DataFrame({"complexity": [1, 5]})

    def sympy(self, index=None):
        x0, x1 = sympy.symbols("x0 x1")
        return [x0, 2 * x0 + x1][1 if index is None else index]

    def predict(self, X, index=None):
        X = np.asarray(X, dtype=float)
        return [X[:, 0], 2 * X[:, 0] + X[:, 1]][1 if index is None else index]


@pytest.mark.timeout(30)
def test_submission_hooks():
    sub = _load()
    assert sub.hyper_params == [{}]
    assert sub.est.get_params()["max_evaluations"] == 500_000
    X = pd.DataFrame({"mass": [1.0, 2.0], "speed": [3.0, 4.0]})
    est = _Fitted()
    assert sympy.sympify(sub.model(est, X)) == 2 * sympy.Symbol("mass") + sympy.Symbol("speed")
    population = sub.get_population(est)
    assert len(population) == 2
    assert sub.model(population[0], X) == "mass"
    np.testing.assert_allclose(population[1].predict(X), [5.0, 8.0])
    assert sub.get_best_solution(est) is est
