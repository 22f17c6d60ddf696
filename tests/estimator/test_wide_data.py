"""More than 10 columns: the random policy searches all of them; only a policy with a variable
limit (the neural one: 10) pre-selects, and then says so (issue 12, item 2)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.policies.random import RandomPolicy

pytestmark = pytest.mark.timeout(120, method="thread")


def _wide(n_columns: int, target, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(1, 3, size=(200, n_columns)), columns=[f"f{i}" for i in range(n_columns)])
    return X, target(X)


@pytest.mark.parametrize("n_columns, target, used, evals", [
    (14, lambda X: 2.5 * X["f12"] * X["f13"], {"f12", "f13"}, 6000),
    (50, lambda X: 3 * X["f49"] ** 2 + X["f49"], {"f49"}, 3000),
    (200, lambda X: 3 * X["f199"] ** 2, {"f199"}, 3000),
])
def test_random_policy_searches_every_column(n_columns, target, used, evals):
    X, y = _wide(n_columns, target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pre-selection warning: nothing was dropped
        # Valued as proposed: with inner fits, near-exact approximations through other columns
        # compete for the same budget, and this test is about which columns are searched.
        est = SymbolicRegressor(policy="random", max_evaluations=evals, max_time=None, random_state=0,
                                inner_fit_steps=0, cv_max_rows=0).fit(X, y)  # the whole budget to one search
    assert est.selected_features_ == list(X.columns)
    best = est.equations_.iloc[est.best_index_]
    assert best["r2"] > 1 - 1e-9  # exact, where pre-selection to 10 columns cannot be
    assert {s.name for s in best["sympy"].free_symbols} == used
    assert np.allclose(est.predict(X), y, rtol=1e-6)


class _TwoVariablePolicy(RandomPolicy):
    """The random policy, declaring a variable limit as the neural policy does."""

    max_variables = 2


def test_a_policy_with_a_variable_limit_preselects_and_says_so():
    X, y = _wide(14, lambda X: X["f13"] ** 2 + 3 * X["f11"])
    with pytest.warns(UserWarning, match=r"X has 14 columns, more than the 2 variables .*: f11, f13\."):
        est = SymbolicRegressor(policy=_TwoVariablePolicy(), max_evaluations=500, max_time=None,
                                random_state=0).fit(X, y)
    assert est.selected_features_ == ["f11", "f13"]
    assert est.predict(X).shape == (200,)


def test_the_neural_policy_declares_its_limit():
    pytest.importorskip("torch")
    from dgsr.core.operators import MAX_VARIABLES
    from dgsr.neural.policy import NeuralPolicy

    assert NeuralPolicy.max_variables == MAX_VARIABLES == 10


def test_max_features_above_ten_is_accepted_and_none_is_the_default():
    assert SymbolicRegressor().max_features is None
    X, y = _wide(14, lambda X: 2 * X["f13"])
    with pytest.warns(UserWarning, match="more than max_features=12"):
        est = SymbolicRegressor(policy="random", max_features=12, max_evaluations=300, max_time=None,
                                random_state=0).fit(X, y)
    assert len(est.selected_features_) == 12 and "f13" in est.selected_features_


@pytest.mark.parametrize("n_columns", [14, 50])
def test_semantic_policy_searches_every_column(n_columns):
    X, y = _wide(n_columns, lambda X: 2.5 * X[f"f{n_columns - 1}"] * X[f"f{n_columns - 2}"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = SymbolicRegressor(policy="semantic", max_evaluations=3000, max_time=None, random_state=0).fit(X, y)
    assert est.selected_features_ == list(X.columns)
    best = est.equations_.iloc[est.best_index_]
    assert best["r2"] > 1 - 1e-9
    assert {s.name for s in best["sympy"].free_symbols} == {f"f{n_columns - 2}", f"f{n_columns - 1}"}
