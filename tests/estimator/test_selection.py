"""Model selection on held-out rows, the linear candidate, poles, tiny data (issue 12, items 1 and 3)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.estimator.front import FrontEntry
from dgsr.estimator.model_selection import (
    has_pole,
    linear_candidate,
    one_se_eligible,
    prefer_pole_free,
    probe_points,
    validation_choice,
    validation_split,
)
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(120, method="thread")


def _est(**kw) -> SymbolicRegressor:
    params = {"policy": "random", "max_evaluations": 2000, "max_time": None, "random_state": 0}
    params.update(kw)
    return SymbolicRegressor(**params)


# ---------------------------------------------------------------------- the validation rule
def test_one_standard_error_rule_picks_the_smallest_entry_within_noise():
    rng = np.random.default_rng(0)
    base = rng.exponential(1.0, size=400)
    wobble = np.where(np.arange(400) % 2 == 0, 0.5, -0.5)  # mean 0, standard error 0.025
    errors = np.stack([
        base + 5.0,             # a front sorted by size: the smallest is far worse
        base + wobble + 0.01,   # worse than the best by 0.0105 on average: within one standard error
        base,                   # worse than the best by 0.0005 on every row: significantly worse
        base - 0.0005,          # the lowest mean, the largest expression
    ])
    assert validation_choice(errors, "min") == 3
    assert validation_choice(errors, "1se") == 1
    assert list(one_se_eligible(errors, 3)) == [False, True, False, True]


def test_non_finite_validation_errors_are_never_chosen():
    errors = np.array([[np.inf, np.inf], [2.0, 2.0], [1.0, 1.0]])
    assert validation_choice(errors, "1se") == 2
    assert validation_choice(np.full((2, 3), np.inf)) == 0


def test_validation_split_is_reproducible_and_refuses_tiny_data():
    a = validation_split(100, np.random.default_rng(3))
    b = validation_split(100, np.random.default_rng(3))
    assert a is not None and all(np.array_equal(u, v) for u, v in zip(a, b))
    search, val = a
    assert len(val) == 25 and len(search) == 75 and not set(search) & set(val)
    assert validation_split(20, np.random.default_rng(0)) is None  # 5 validation rows: too few


def test_estimator_selects_on_held_out_rows_and_refits_on_all(recwarn):
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"m": rng.uniform(1, 4, 300), "h": rng.uniform(0.5, 3, 300)})
    y = 3.0 * X["m"] * X["h"]
    est = _est(model_selection="validation").fit(X, y)
    loss = est.validation_loss_
    assert loss is not None and len(loss) == len(est.equations_)
    # exact recovery is kept: the law has the lowest validation loss, and nothing smaller is as good
    assert est.equations_["r2"].iloc[est.best_index_] > 1 - 1e-9
    assert loss[est.best_index_] <= loss.min() * (1 + 1e-6) + 1e-20
    assert np.allclose(est.predict(X), y)


def test_validation_on_noisy_linear_data_does_not_lose_to_linear_regression():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(5)
    beta = rng.normal(size=8)
    X = rng.normal(size=(600, 8))
    y = X @ beta + rng.normal(0, 2.0, 600)  # R² of the truth about 0.6, like diabetes
    X_train, y_train, X_test, y_test = X[:400], y[:400], X[400:], y[400:]
    est = _est(model_selection="validation").fit(X_train, y_train)
    linear = LinearRegression().fit(X_train, y_train)

    def r2(pred):
        return 1 - np.mean((y_test - pred) ** 2) / np.var(y_test)

    assert r2(est.predict(X_test)) >= r2(linear.predict(X_test)) - 0.02


def test_too_few_rows_for_a_validation_split_fall_back_with_a_warning():
    X = np.linspace(1, 2, 30).reshape(-1, 1)
    with pytest.warns(UserWarning, match="needs at least 10 validation rows"):
        est = _est(model_selection="validation", max_evaluations=300).fit(X, 2 * X[:, 0])
    assert est.validation_loss_ is None


# ---------------------------------------------------------------------- the linear candidate
def test_linear_candidate_is_least_squares_and_on_the_front():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 5))
    y = X @ np.array([1.5, -2.0, 0.3, 0.0, 4.0]) + 0.7 + rng.normal(0, 0.5, 200)
    expr = linear_candidate(X, y, max_size=60)
    coef = np.linalg.lstsq(np.column_stack([X, np.ones(200)]), y, rcond=None)[0]
    assert expr is not None and expr.size == 21
    assert np.allclose(evaluate(expr, X), np.column_stack([X, np.ones(200)]) @ coef)
    assert linear_candidate(X, y, max_size=20) is None  # 21 nodes do not fit
    est = _est(max_evaluations=300, model_selection="accuracy").fit(X, y)
    ols_mse = np.mean((np.column_stack([X, np.ones(200)]) @ coef - y) ** 2)
    assert est.equations_["loss"].min() <= ols_mse * (1 + 1e-9)


def test_weighted_linear_candidate_ignores_zero_weight_rows():
    X = np.arange(10.0).reshape(-1, 1)
    y = 2 * X[:, 0] + 1
    y[-1] = 100.0
    w = np.ones(10)
    w[-1] = 0.0
    expr = linear_candidate(X, y, 60, w)
    assert np.allclose(evaluate(expr, X[:-1]), y[:-1])


# ---------------------------------------------------------------------- poles
@pytest.mark.parametrize("formula, low, high, pole", [
    ("1/(x0 - 2)", 0.0, 4.0, True),     # the denominator changes sign inside the box
    ("1/(x0 + 5)", 0.0, 4.0, False),
    ("sqrt(x0 - 1)", 0.0, 4.0, True),   # undefined on part of the box
    ("tan(x0)", 0.0, 1.0, False),
    ("tan(x0)", 0.0, 2.0, True),        # cos(x0) crosses 0 at pi/2
    ("x0/(x0*x0 + 1)", -3.0, 3.0, False),
    # denominators that touch zero without changing sign: the test looks inside them
    ("1/(x0 - 2.1)**2", 0.0, 4.0, True),
    ("x0/sqrt((x0 - 2.1)**2)", 0.0, 4.0, True),
    ("1/(sq(x0 - 2.1)*sq(x0 + 7))", 0.0, 4.0, True),
    ("inv((x0 - 2.1)**2/(x0 + 5))", 0.0, 4.0, True),
    ("1/((x0 - 2.1)**2 + 0.5)", 0.0, 4.0, False),
    ("1/(x0 + 5)**2", 0.0, 4.0, False),
    ("1/(x0*(x0 - 4.5) + 9)", 0.0, 4.0, False),
])
def test_pole_inside_the_data_range(formula, low, high, pole):
    X = np.linspace(low, high, 7).reshape(-1, 1)  # a few training rows; probes fill the box
    assert has_pole(parse(formula), probe_points(X)) is pole


def test_pole_is_found_between_training_rows_of_two_variables():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1, 15), rng.uniform(0, 1, 15)])
    expr = parse("x0/(x1 - x0 + 0.0123)")
    assert has_pole(expr, probe_points(X))


def _entry(text: str, mse: float) -> FrontEntry:
    expr = parse(text)
    return FrontEntry(expr.size, expr, mse, 1.0 - mse)


@pytest.mark.parametrize("pole_formula", ["1/(x0 - 2)", "1/(x0 - 2.1)**2"])
def test_an_equally_good_pole_free_entry_is_preferred(pole_formula):
    X = np.linspace(0, 4, 20).reshape(-1, 1)
    front = [_entry("x0", 1.0), _entry(pole_formula, 0.1), _entry("x0*x0*0.5 + x0", 0.1005)]
    index, pole = prefer_pole_free(front, 1, probe_points(X))
    assert (index, pole) == (2, False)
    # not equally good (more than 1% worse): the pole stays, flagged
    front[2] = _entry("x0*x0*0.5 + x0", 0.2)
    assert prefer_pole_free(front, 1, probe_points(X)) == (1, True)


def test_tiny_data_warns_and_a_kept_pole_is_reported():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 4, size=(15, 1))
    y = 1.0 / (X[:, 0] - 2.0)  # the data itself has a pole in range: nothing pole-free is as good
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # "balanced": on training loss nothing pole-free is as good. (Under "cv" the out-of-fold
        # errors next to the pole are so spread that log(x0) is within one standard error.)
        est = _est(max_evaluations=1500, model_selection="balanced").fit(X, y)
    messages = [str(w.message) for w in caught]
    assert any("Only 15 rows for expressions of up to max_size=60" in m for m in messages)
    assert has_pole(est.expression_, probe_points(X))  # the law itself: no pole-free formula is as good
    assert any("has a pole" in m for m in messages)
    assert np.isfinite(est.predict(X)).all()


def test_no_tiny_data_warning_with_enough_rows_or_a_small_max_size():
    X = np.linspace(1, 2, 40).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _est(max_evaluations=200, max_size=30).fit(X, 3 * X[:, 0])


def test_constant_expression_has_no_pole():
    assert not has_pole(Expression.constant(2.0), probe_points(np.zeros((3, 2))))


# ---------------------------------------------------------------------- the default rule
def test_default_rule_does_not_lose_to_linear_regression_on_diabetes():
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    est = SymbolicRegressor(policy="random", max_evaluations=3000, max_time=None, random_state=0)
    assert est.model_selection == "cv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X_train, y_train)
    linear = LinearRegression().fit(X_train, y_train)
    assert est.score(X_test, y_test) >= linear.score(X_test, y_test) - 0.01


def test_default_rule_keeps_exact_recovery():
    rng = np.random.default_rng(8)
    X = pd.DataFrame({"m": rng.uniform(1, 5, 400), "v": rng.uniform(1, 5, 400)})
    y = 0.5 * X["m"] * X["v"] ** 2
    est = SymbolicRegressor(policy="random", max_evaluations=4000, max_time=None, random_state=0).fit(X, y)
    chosen = est.equations_.iloc[est.best_index_]
    assert chosen["r2"] > 1 - 1e-12 and chosen["complexity"] <= 7


def test_the_pole_preference_cannot_bring_back_a_rejected_wave():
    # Integer rows: sin(3*x0) takes a hash of values there (an undersampled wave). The pick has a
    # pole; the wave is the smallest pole-free entry as good as it, and the old order (waves,
    # then poles by size) took it back. The masks come first now: the choice is x0*x0.
    from dgsr.estimator.model_selection import choose_entry, undersampled_oscillation

    X = np.arange(1.0, 41.0).reshape(-1, 1)
    front = [_entry("3.5", 10.0), _entry("1/(x0 - 20.5)", 1.0), _entry("sin(3*x0)", 1.005),
             _entry("0.01*x0*x0 + 1", 1.008)]
    assert undersampled_oscillation(front[2].expression, X.T)
    assert has_pole(front[1].expression, probe_points(X))
    assert prefer_pole_free(front, 1, probe_points(X))[0] == 2  # the step alone would take the wave
    assert choose_entry(front, 1, X, "balanced") == 3
