"""The whole search cross-validated on small data: the size limit it supports, and what the
default ``"cv"`` selection does with it (issue 25: no black-box set below R² 0 where linear
regression is above it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.estimator import front_checks
from dgsr.estimator.fit_config import config_from
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.estimator.search_cv import (
    chosen_limit,
    fold_tested_limits,
    limit_errors,
    runs_search_cv,
)

pytestmark = pytest.mark.timeout(300, method="thread")


# ---------------------------------------------------------------------- the size limit, by hand
def test_each_limit_takes_the_largest_fold_entry_within_it():
    # Two folds of two rows each: fold 0 is rows 0 and 2, fold 1 rows 1 and 3.
    labels = np.array([0, 1, 0, 1])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    fronts = [(np.array([1, 5]), np.array([[0.0, 0.0], [1.0, 3.5]])),   # rows 0, 2
              (np.array([3, 9]), np.array([[2.0, 5.0], [2.0, 4.0]]))]   # rows 1, 3
    errors = limit_errors(fronts, labels, y, [1, 5, 9])
    # limit 1: fold 0 its size-1 entry (errors 1, 9), fold 1 nothing that small: its smallest (0, 1)
    np.testing.assert_array_equal(errors[0], [1.0, 0.0, 9.0, 1.0])
    # limit 5: fold 0 its size-5 entry (0, 0.25), fold 1 its size-3 entry (0, 1)
    np.testing.assert_array_equal(errors[1], [0.0, 0.0, 0.25, 1.0])
    # limit 9: fold 1 now its size-9 entry (0, 0)
    np.testing.assert_array_equal(errors[2], [0.0, 0.0, 0.25, 0.0])


def test_an_undefined_prediction_is_an_infinite_error():
    labels = np.array([0, 0])
    errors = limit_errors([(np.array([1, 4]), np.array([[0.0, 0.0], [1.0, np.nan]]))], labels,
                          np.array([1.0, 1.0]), [1, 4])
    assert np.isfinite(errors[0]).all()
    assert errors[1, 0] == 0.0 and errors[1, 1] == np.inf


def test_the_smallest_limit_within_one_standard_error_is_chosen():
    rng = np.random.default_rng(0)
    base = rng.uniform(1.0, 2.0, 50)
    # limit 3 clearly worse, limit 7 the best, limit 12 (the folds' largest formulas) clearly worse
    errors = np.vstack([base + 1.0, base, base + 0.5])
    assert chosen_limit(errors, [3, 7, 12], reached=12) == 7
    # limit 3 within noise of the best: the smaller one wins
    errors[0] = base + rng.normal(0.0, 0.5, 50)
    assert chosen_limit(errors, [3, 7, 12], reached=12) == 3
    # a limit whose formulas are undefined on a held-out row never wins
    errors[0, 4] = np.inf
    assert chosen_limit(errors, [3, 7, 12], reached=12) == 7


def test_no_limit_below_a_folds_smallest_entry_is_tested():
    # Every fold's smallest entry is the law at size 11: a limit of 6 would be credited with its error.
    folds = [np.array([11, 27]), np.array([11, 15, 38]), np.array([13, 29])]
    assert fold_tested_limits([6, 8, 11, 34], folds) == [13, 15, 27, 29, 34, 38]
    assert fold_tested_limits([1, 3], [np.array([1, 5]), np.array([2])]) == [2, 3, 5]


def test_no_limit_where_larger_was_better_as_far_as_the_folds_reached():
    base = np.random.default_rng(1).uniform(1.0, 2.0, 50)
    # The folds reached size 7; limits 7 and 12 answer with the same formulas (equal errors).
    errors = np.vstack([base + 1.0, base, base])
    assert chosen_limit(errors, [3, 7, 12], reached=7) is None
    # ... whereas a fold formula of size 12 that predicts worse than size 7 sets the limit
    errors[2] = base + 1.0
    assert chosen_limit(errors, [3, 7, 12], reached=12) == 7
    # nothing finite everywhere: no evidence, no limit
    assert chosen_limit(np.full((3, 50), np.inf), [3, 7, 12], reached=12) is None


def test_the_check_runs_only_under_cv_on_small_data():
    # the regime is the estimator's cv_max_rows, not a side effect of max_size
    assert runs_search_cv("cv", 40, max_rows=1000)
    assert runs_search_cv("cv", 1000, max_rows=1000)
    assert not runs_search_cv("cv", 1001, max_rows=1000)
    assert not runs_search_cv("cv", 200, max_rows=0)  # switched off
    assert not runs_search_cv("cv", 10, max_rows=1000)  # too few rows to hold out
    assert not runs_search_cv("balanced", 40, max_rows=1000)


# ---------------------------------------------------------------------- in fit
def _noisy_line(seed: int, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """y = 3*x0 plus noise of R² about 0.7, beside an integer column (80-148) a wave can hash and
    an irrelevant third column; fresh noise-free rows to test on."""
    rng = np.random.default_rng(seed)

    def columns(m: int) -> np.ndarray:
        return np.column_stack([rng.normal(size=m), rng.integers(80, 149, size=m).astype(float),
                                rng.uniform(1, 5, size=m)])

    X = columns(n)
    y = 3.0 * X[:, 0] + rng.normal(scale=2.0, size=n)
    X_new = columns(1000)
    return X, y, X_new, 3.0 * X_new[:, 0]


def _fit(X: np.ndarray, y: np.ndarray, seed: int, **params) -> SymbolicRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = {"max_time": None, "max_evaluations": 20_000, "random_state": seed, **params}
        return SymbolicRegressor(**settings).fit(X, y)


def _r2(model: SymbolicRegressor, X: np.ndarray, y: np.ndarray) -> float:
    return 1.0 - float(np.mean((model.predict(X) - y) ** 2) / np.var(y))


def test_the_limit_keeps_a_noise_fit_out_where_the_constants_check_alone_keeps_it(monkeypatch):
    X, y, X_new, y_new = _noisy_line(3)
    model = _fit(X, y, 3)
    chosen = model._front[model.best_index_]
    assert model.size_limit_ is not None and chosen.size <= model.size_limit_
    assert _r2(model, X_new, y_new) > 0.95
    assert model.n_evaluations_ <= 20_000  # the fold searches spend the same budget
    # The same search (the same budget split) without the limit: the out-of-fold refits of the
    # front's constants keep a formula that fits these 40 rows' noise, chosen on them.
    monkeypatch.setattr(front_checks, "size_limit", lambda *args, **kwargs: (None, 0.0, False))
    unlimited = _fit(X, y, 3)
    assert [e.expression for e in unlimited._front] == [e.expression for e in model._front]
    assert unlimited._front[unlimited.best_index_].size > model.size_limit_
    assert _r2(unlimited, X_new, y_new) < 0.9


def test_the_check_is_deterministic_for_a_seed():
    X, y, _, _ = _noisy_line(1)
    a, b = _fit(X, y, 5), _fit(X, y, 5)
    assert a.size_limit_ == b.size_limit_ and a.size_limit_ is not None
    assert a.expression_ == b.expression_
    # n_evaluations_ and the constants of a front entry with a redundant constant may differ a
    # little: the polish's least-squares solver can end on a different point of a flat valley
    # (docs/DESIGN.md, "Determinism from one process to the next").


def test_an_exact_law_on_few_rows_is_not_cut_down():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(40, 3))
    y = 2.5 * X[:, 0] * X[:, 1] / X[:, 2] + 1.0
    model = _fit(X, y, 0)
    assert model.size_limit_ is None  # an exact front fits no noise
    assert model.score(X, y) > 1 - 1e-9


def test_no_check_on_more_rows_than_cv_max_rows_or_under_other_rules():
    X, y, _, _ = _noisy_line(0, n=80)
    assert _fit(X, y, 0, max_evaluations=3_000, cv_max_rows=60).size_limit_ is None
    X, y, _, _ = _noisy_line(0)
    assert _fit(X, y, 0, model_selection="balanced").size_limit_ is None
    assert _fit(X, y, 0, model_selection="validation").size_limit_ is None


@pytest.mark.filterwarnings("ignore:Only 40 rows")
def test_a_ctrl_c_in_the_fold_searches_ends_the_fit_with_the_constants_check(monkeypatch):
    X, y, _, _ = _noisy_line(3)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(front_checks, "size_limit", interrupted)
    with pytest.warns(UserWarning, match="Interrupted .* cross-validation"):
        model = SymbolicRegressor(max_time=None, max_evaluations=20_000, random_state=3).fit(X, y)
    assert model.stop_reason_ == "interrupted" and model.size_limit_ is None
    assert np.isfinite(model.predict(X)).all()


def test_verbose_says_when_the_fold_searches_run(capsys):
    X, y, _, _ = _noisy_line(3)
    _fit(X, y, 3, verbose=True)
    assert "repeating the search on 5 folds" in capsys.readouterr().err


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_target_with_no_signal_gets_no_worse_than_linear_regression(seed):
    # 200 rows, 5 columns, y independent of X: a search's structures fit the noise of the rows
    # they were chosen on; the fold searches see that no size predicts held-out rows better.
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(5200, 5)), rng.normal(size=5200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SymbolicRegressor(max_time=None, max_evaluations=30_000, random_state=seed).fit(X[:200], y[:200])
    linear = LinearRegression().fit(X[:200], y[:200])
    ours, theirs = r2_score(y[200:], model.predict(X[200:])), r2_score(y[200:], linear.predict(X[200:]))
    assert ours >= theirs - 0.02, (ours, theirs, model.sympy())


def test_a_front_that_fits_without_noise_gives_the_folds_share_back_to_the_search():
    # 300 rows of an exact law: after the first half of the budget the front fits the rows to
    # within 1e-6 of their variance, so the fold searches would be skipped; the search goes on
    # with their half instead of leaving it unused.
    # (Without the single-index chains, the ratios of polynomials and the linearized operands,
    # which find this law exactly within 3,000 evaluations, where the search stops: nothing is
    # left to give back.)
    from dgsr.policies.semantic.policy import SemanticPolicy

    rng = np.random.default_rng(0)
    X = rng.uniform(0.1, 5, size=(300, 2))
    y = 6.3 * X[:, 0] / (0.9 + X[:, 0] * (1 + X[:, 1] / 0.6))
    policy = SemanticPolicy(index_chains=False, rational_operands=False, linearized_operands=False)
    model = _fit(X, y, 0, max_evaluations=20_000, policy=policy)
    searched = max(h["evaluations"] for h in model.history_)
    assert searched > 0.6 * 20_000 and model.size_limit_ is None
    assert model.score(X, y) > 1 - 1e-9
    # with noise the folds run, on their half of the budget
    noisy = y + 0.05 * np.std(y) * rng.normal(size=len(y))
    model = _fit(X, noisy, 0, max_evaluations=20_000, policy=policy)
    assert max(h["evaluations"] for h in model.history_) <= 0.55 * 20_000


def test_the_fold_searches_use_the_policy_without_its_chains():
    from dgsr.estimator.search_cv import fold_policy
    from dgsr.policies.semantic.policy import SemanticPolicy

    est = SymbolicRegressor(unary_operators=["exp"], binary_operators=["+", "*"])
    policy = fold_policy(config_from(est.get_params()))
    assert isinstance(policy, SemanticPolicy) and policy.inner_chains == 0
    assert policy.operators == frozenset({"exp", "add", "mul"})  # the user's operators kept
    own = SemanticPolicy(inner_chains=4, n_rows=50)
    copied = fold_policy(config_from(SymbolicRegressor(policy=own).get_params()))
    assert copied.inner_chains == 0 and copied.n_rows == 50 and own.inner_chains == 4
    assert fold_policy(config_from(SymbolicRegressor(policy="random").get_params())) == "random"
