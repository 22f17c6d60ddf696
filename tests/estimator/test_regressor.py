"""SymbolicRegressor: names, pickling, determinism, the predict fallback, feature pre-selection."""

from __future__ import annotations

import math
import pickle
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.core.pareto import front_scores
from dgsr.core.parser import parse
from dgsr.estimator.features import select_features
from dgsr.estimator.front import FrontEntry, tidy_constants
from dgsr.estimator.regressor import SymbolicRegressor

# The thread method: SymPy's time cap in dgsr.core.simplify uses SIGALRM, as pytest-timeout's signal
# method does.
pytestmark = pytest.mark.timeout(120, method="thread")


def _est(**kw) -> SymbolicRegressor:
    params = {"policy": "random", "max_evaluations": 2000, "max_time": 30, "random_state": 0}
    params.update(kw)
    return SymbolicRegressor(**params)


@pytest.fixture(scope="module")
def product_data() -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"mass": rng.uniform(1, 4, 200), "height": rng.uniform(0.5, 3, 200)})
    return X, 3.0 * X["mass"] * X["height"]


@pytest.fixture(scope="module")
def fitted(product_data) -> SymbolicRegressor:
    X, y = product_data
    return _est().fit(X, y)


def test_column_names_in_equations_and_sympy(fitted, product_data):
    table = fitted.equations_
    assert list(table.columns[:6]) == ["complexity", "loss", "r2", "score", "equation", "sympy"]
    names = {"mass", "height"}
    for eq, expr in zip(table["equation"], table["sympy"]):
        assert "x0" not in eq and "x1" not in eq
        assert {s.name for s in expr.free_symbols} <= names
    assert any("mass" in eq for eq in table["equation"])
    assert {s.name for s in fitted.sympy().free_symbols} <= names
    assert fitted.selected_features_ == ["mass", "height"]
    assert list(fitted.feature_names_in_) == ["mass", "height"] and fitted.n_features_in_ == 2


def test_front_table_is_a_pareto_front_with_pysr_scores(fitted, product_data):
    t = fitted.equations_
    assert (np.diff(t["complexity"]) > 0).all(), "sorted by complexity, one row per size"
    assert (np.diff(t["loss"]) < 0).all(), "each larger expression is strictly more accurate"
    assert t["score"].iloc[0] == 0.0
    tiny = np.finfo(np.float64).tiny  # an exact fit has loss 0: scores floor it at the tiniest float
    for i in range(1, len(t)):
        expected = -(math.log(max(t["loss"].iloc[i], tiny)) - math.log(max(t["loss"].iloc[i - 1], tiny))) / (
            t["complexity"].iloc[i] - t["complexity"].iloc[i - 1])
        assert t["score"].iloc[i] == pytest.approx(expected)
    # The loss column is the MSE of the row's expression on the training data.
    X, y = product_data
    for expr, loss in zip(fitted.expressions_, t["loss"]):
        mse = float(np.mean((evaluate(expr, X.to_numpy()) - y.to_numpy()) ** 2))
        assert mse == pytest.approx(loss, rel=1e-9, abs=1e-12)
    assert fitted.stop_reason_ in ("evaluations", "time", "target")


def test_predict_index_sympy_latex(fitted, product_data):
    X, y = product_data
    n = len(fitted.equations_)
    for i in range(n):
        pred = fitted.predict(X, index=i)
        mse = float(np.mean((pred - y.to_numpy()) ** 2))
        assert mse == pytest.approx(fitted.equations_["loss"].iloc[i], rel=1e-9, abs=1e-12)
    np.testing.assert_array_equal(fitted.predict(X), fitted.predict(X, index=fitted.best_index_))
    with pytest.raises(IndexError, match="row of equations_"):
        fitted.predict(X, index=n)
    assert isinstance(fitted.sympy(0), sympy.Expr)
    latex = fitted.latex()
    assert isinstance(latex, str) and ("mass" in latex or "height" in latex)


def test_model_selection_accuracy_picks_lowest_loss(product_data):
    X, y = product_data
    est = _est(model_selection="accuracy", max_evaluations=500).fit(X, y)
    assert est.best_index_ == int(np.argmin(est.equations_["loss"]))


def test_pickle_round_trip_predicts_identically(fitted, product_data):
    X, _ = product_data
    clone = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(clone.predict(X), fitted.predict(X))
    assert clone.equations_["equation"].tolist() == fitted.equations_["equation"].tolist()
    assert clone.expression_ == fitted.expression_


def test_same_seed_and_evaluations_give_the_same_front(product_data):
    X, y = product_data
    a = _est(max_evaluations=800, random_state=7).fit(X, y)
    b = _est(max_evaluations=800, random_state=7).fit(X, y)
    assert [e.expression for e in a._front] == [e.expression for e in b._front]
    assert a.equations_["loss"].tolist() == b.equations_["loss"].tolist()
    assert a.n_evaluations_ == b.n_evaluations_


def test_final_refit_uses_all_rows():
    # 5000 noise-free rows: the search fits constants on 256-row subsets; the final refit on all
    # rows must pin 2.5 and 1 down to rounding error.
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(5000, 1))
    y = 2.5 * X[:, 0] + 1.0
    est = _est(max_evaluations=3000).fit(X, y)
    assert est.equations_["loss"].min() < 1e-18


def test_max_time_bounds_fit():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 2, size=(300, 3))
    y = np.exp(X[:, 0]) * np.sin(X[:, 1]) / X[:, 2] ** 3 + X[:, 1] ** 0.5  # hard: the clock stops it
    start = time.perf_counter()
    est = _est(max_evaluations=None, max_time=2.0).fit(X, y)
    elapsed = time.perf_counter() - start
    assert est.stop_reason_ == "time"
    assert elapsed < 2.0 + 1.5  # the front's simplification may overrun a little on a loaded machine


def _hand_fitted(front: list[Expression], best: int, y_mean: float) -> SymbolicRegressor:
    """A fitted estimator built by hand (one input column 'x'), to test predict in isolation."""
    est = SymbolicRegressor(policy="random")
    est._front = [FrontEntry(e.size, e, float(i + 1), 0.0) for i, e in enumerate(front)]
    est.best_index_, est.expression_ = best, front[best]
    est._feature_index, est.selected_features_ = np.array([0]), ["x"]
    est._y_mean, est.n_features_in_ = y_mean, 1
    est.equations_ = pd.DataFrame({"sympy": [e.to_sympy(["x"]) for e in front]})
    return est


def test_predict_falls_back_row_by_row():
    # Front (loss = position + 1): sqrt(x), 1/x, log(x); training mean 7.
    front = [parse("sqrt(x0)"), parse("1/x0"), parse("log(x0)")]
    est = _hand_fitted(front, best=0, y_mean=7.0)
    X = np.array([[4.0], [-2.0], [0.0]])
    with pytest.warns(RuntimeWarning, match="undefined on 1 of 3 rows"):
        pred = est.predict(X)
    # sqrt: 2, NaN -> 1/x = -0.5, 0.
    np.testing.assert_allclose(pred, [2.0, -0.5, 0.0])
    # 1/x: 0.25, -0.5, inf -> sqrt(0) = 0 (the most accurate other expression finite there).
    with pytest.warns(RuntimeWarning, match="undefined on 1 of 3 rows"):
        pred = est.predict(X, index=1)
    np.testing.assert_allclose(pred, [0.25, -0.5, 0.0])
    # log: log 4; log(-2) NaN -> sqrt(-2) NaN too -> 1/x = -0.5; log 0 = -inf -> sqrt(0) = 0.
    with pytest.warns(RuntimeWarning, match="undefined on 2 of 3 rows"):
        pred = est.predict(X, index=2)
    np.testing.assert_allclose(pred, [math.log(4.0), -0.5, 0.0])


def test_predict_uses_training_mean_when_nothing_is_finite():
    front = [parse("log(x0)"), parse("sqrt(x0)")]
    est = _hand_fitted(front, best=0, y_mean=7.0)
    with pytest.warns(RuntimeWarning, match="the training mean"):
        pred = est.predict(np.array([[-1.0], [1.0]]))
    np.testing.assert_array_equal(pred, [7.0, 0.0])
    assert np.isfinite(pred).all()


def test_predict_is_silent_when_all_rows_are_finite():
    est = _hand_fitted([parse("log(x0)")], best=0, y_mean=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(est.predict(np.array([[1.0], [math.e]])), [0.0, 1.0])


def test_constant_target():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.warns(UserWarning, match="y is constant"):
        est = _est().fit(X, np.full(20, 4.25))
    np.testing.assert_array_equal(est.predict(X[:3]), [4.25, 4.25, 4.25])
    assert len(est.equations_) == 1 and float(est.sympy()) == 4.25
    assert est.stop_reason_ == "constant_target"


def test_select_features_finds_the_two_informative_columns():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1000, 12))
    # x3 enters squared (zero linear correlation with y on a symmetric range); x7 linearly.
    y = 4 * X[:, 3] ** 2 + X[:, 7]
    assert abs(np.corrcoef(X[:, 3], y)[0, 1]) < 0.1
    chosen = select_features(X, y, 2, rng=np.random.default_rng(0))
    assert chosen.tolist() == [3, 7]
    assert select_features(X, y, 12, rng=rng).tolist() == list(range(12))


def test_fit_preselects_features_and_says_which():
    rng = np.random.default_rng(0)
    names = [f"f{i}" for i in range(12)]
    X = pd.DataFrame(rng.uniform(-1, 1, size=(400, 12)), columns=names)
    y = 4 * X["f3"] ** 2 + X["f7"]
    with pytest.warns(UserWarning, match=r"12 columns, more than max_features=2.*: f3, f7\."):
        est = _est(max_features=2, max_evaluations=300).fit(X, y)
    assert est.selected_features_ == ["f3", "f7"]
    for expr in est.equations_["sympy"]:
        assert {s.name for s in expr.free_symbols} <= {"f3", "f7"}
    assert est.predict(X).shape == (400,) and est.n_features_in_ == 12


def test_verbose_prints_progress_to_stderr(capsys, product_data):
    X, y = product_data
    _est(verbose=True, max_evaluations=300).fit(X, y)
    err = capsys.readouterr().err
    assert "evals" in err and "best R²" in err


def test_front_scores_by_hand():
    entries = [FrontEntry(1, Expression.constant(0.0), 4.0, 0.0), FrontEntry(3, Expression.variable(0), 1.0, 0.0),
               FrontEntry(4, Expression.variable(0), 0.0, 1.0)]
    scores = front_scores(entries)
    assert scores[0] == 0.0
    assert scores[1] == pytest.approx(math.log(4.0) / 2)
    # A zero loss is floored at the smallest positive float, so the score stays finite.
    assert scores[2] == pytest.approx(-math.log(np.finfo(float).tiny))


def test_load_policy():
    from dgsr.estimator.policy_loading import load_policy
    from dgsr.policies.random import RandomPolicy

    assert isinstance(load_policy("random"), RandomPolicy)
    mine = RandomPolicy()
    assert load_policy(mine) is mine
    with pytest.raises(FileNotFoundError, match="not found"):
        load_policy("/nonexistent/weights.safetensors")
    with pytest.raises(ValueError, match="policy must be"):
        load_policy("clever")
    with pytest.raises(ValueError, match="policy must be"):
        load_policy(42)


def test_tidy_constants_drops_negligible_and_rounds_harmless_digits():
    from dgsr.core.evaluate import as_columns

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(100, 2))
    y = 6.674 * X[:, 0] * X[:, 1] + 0.5
    noisy = parse("6.67400000001*x0*(x1 + 1.2e-10) + 0.5")
    tidy, spent = tidy_constants(noisy, as_columns(X), y)
    assert tidy.constants == (6.674, 0.0, 0.5)
    assert spent >= 1 + 2
    # A constant that matters is neither zeroed nor rounded away from its fitted value.
    exact = parse("1.23456789*x0 + x1")
    kept, _ = tidy_constants(exact, as_columns(X), 1.23456789 * X[:, 0] + X[:, 1])
    assert kept.constants == (1.23456789,)
    # Constants that cancel each other are rounded together.
    cancelling = parse("x0*x1 - 206.01566485270715 + 206.01566485265974")
    tidy, _ = tidy_constants(cancelling, as_columns(X), X[:, 0] * X[:, 1])
    assert tidy.constants == (206.0, 206.0)
    # A snapped pi**2 (exact to the last bit) is not rounded to 9.87, which SymPy reads as another number.
    wave = parse("sqrt(x0**2 - 9.869604401089358)")
    far = 20 * X + 10  # where rounding to 9.87 costs less than the tolerance
    kept, _ = tidy_constants(wave, as_columns(far), np.sqrt(far[:, 0] ** 2 - np.pi**2))
    assert kept.constants == (np.pi**2,)


def test_tidy_constants_keeps_an_exact_fit_exact_and_rounds_within_noise():
    from dgsr.core.evaluate import as_columns

    rng = np.random.default_rng(1)
    X = rng.uniform(1, 3, size=(200, 2))
    small = 0.0459812345  # a term too small for its rounding to cost 1e-9 of var(y), and no simple value
    expr = parse(f"x0*x1 + {small!r}*x0")
    exact_y = X[:, 0] * X[:, 1] + small * X[:, 0]
    kept, _ = tidy_constants(expr, as_columns(X), exact_y)
    assert kept.constants == (small,)  # 0.04598 would no longer fit the rows to float noise
    noisy_y = exact_y + 0.01 * rng.standard_normal(len(exact_y))
    tidy, _ = tidy_constants(expr, as_columns(X), noisy_y)
    assert tidy.constants == (0.04598,)  # the noise hides that rounding
    # An expression undefined on the rows (a loss that is not finite) is left as it is, no error.
    undefined = parse("1.23456789*log(x0 - 5)")
    kept, _ = tidy_constants(undefined, as_columns(X), exact_y)
    assert kept.constants == undefined.constants


def test_plot_front_draws_every_front_entry_and_marks_the_selection(fitted):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = fitted.plot_front(target="F")
    # Front points: one collection, or two when some losses are drawn at the floor; the last marks the selection.
    points = np.concatenate([c.get_offsets() for c in ax.collections[:-1]])
    assert len(points) == len(fitted.equations_)
    assert sorted(points[:, 0]) == list(fitted.equations_["complexity"])
    marked = ax.collections[-1].get_offsets()
    assert marked[0, 0] == fitted.equations_["complexity"].iloc[fitted.best_index_]
    assert ax.get_yscale() == "log"
    plt.close(ax.figure)


@pytest.mark.parametrize("rule", ["best", "score", "balanced"])
def test_every_model_selection_rule_fits_and_picks_from_the_front(rule, product_data):
    from types import SimpleNamespace

    from dgsr.core.pareto import select

    X, y = product_data
    est = _est(model_selection=rule, max_evaluations=500).fit(X, y)
    front = est.equations_
    entries = [SimpleNamespace(size=r.complexity, mse=r.loss, r2=r.r2) for r in front.itertuples()]
    assert est.best_index_ == select(entries, rule)
    if rule == "balanced":  # within 0.01 of the top R² of the front
        assert front["r2"].iloc[est.best_index_] >= front["r2"].max() - 0.01
