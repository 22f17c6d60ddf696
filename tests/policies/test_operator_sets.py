"""Every policy works with any non-empty operator set, binary operators only included (issue 26,
item 1; CONTRACTS §1): the fit ends, proposes only allowed operators, and predicts finite values."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.operators import OPERATORS, resolve_operators

SETS = [["+", "-", "*", "/"], ["+", "*"], ["+"], ["/"], ["sin"], ["exp", "log"], ["sq", "inv"], ["+", "sin"]]


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(60, 2))
    return X, X[:, 0] * X[:, 1] + X[:, 0]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("policy", ["semantic", "random", "neural"])
def test_every_policy_fits_with_restricted_operator_sets(policy):
    X, y = _data()
    for operators in SETS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = SymbolicRegressor(operators=operators, policy=policy, max_evaluations=500, max_time=60,
                                    random_state=0).fit(X, y)
            pred = est.predict(X)
        assert np.isfinite(pred).all(), (policy, operators)
        allowed = set(resolve_operators(operators))
        for expression in est.expressions_:
            used = {s for s in expression.symbols if s in OPERATORS}
            assert used <= allowed, (policy, operators, expression)


def test_binary_only_operator_set_recovers_a_rational_law():
    X, y = _data()
    est = SymbolicRegressor(binary_operators=["+", "-", "*", "/"], max_evaluations=3000, random_state=0).fit(X, y)
    assert est.equations_["r2"].iloc[est.best_index_] > 0.999999
    assert {s for s in est.expression_.symbols if s in OPERATORS} <= {"add", "sub", "mul", "div"}
