"""Cross-validated selection on small data, and formulas whose waves the rows cannot show (issue 25:
no black-box set below R² 0 where linear regression is above it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.core.parser import parse
from dgsr.estimator.cross_validation import (
    CV_FOLDS,
    cross_validated_choice,
    fold_labels,
    out_of_fold_errors,
)
from dgsr.estimator.front import FrontEntry
from dgsr.estimator.model_selection import MODEL_SELECTION_RULES, choose_entry, undersampled_oscillation
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(180, method="thread")


def _entry(text: str, mse: float) -> FrontEntry:
    expr = parse(text)
    return FrontEntry(expr.size, expr, mse, 1.0 - mse)


# ---------------------------------------------------------------------- folds and out-of-fold errors
def test_folds_are_balanced_shuffled_and_reproducible():
    a = fold_labels(23, np.random.default_rng(4))
    b = fold_labels(23, np.random.default_rng(4))
    assert np.array_equal(a, b)
    counts = np.bincount(a, minlength=CV_FOLDS)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 23
    assert not np.array_equal(a, np.sort(a))


def test_out_of_fold_errors_of_a_line_are_leave_fold_out_least_squares():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, 40)
    y = 1.5 * x - 0.3 + rng.normal(0, 0.4, 40)
    labels = fold_labels(40, np.random.default_rng(1))
    # A start far from the fit: each fold's refit must move the constants to that fold's optimum.
    errors, spent = out_of_fold_errors([parse("0.1*x0 + 2.0")], as_columns(x[:, None]), y, labels,
                                       np.random.default_rng(2))
    expected = np.empty(40)
    for fold in range(CV_FOLDS):
        test = labels == fold
        slope, icpt = np.polyfit(x[~test], y[~test], 1)
        expected[test] = (slope * x[test] + icpt - y[test]) ** 2
    np.testing.assert_allclose(errors[0], expected, rtol=1e-6, atol=1e-10)
    assert spent > 0


def test_an_expression_undefined_on_a_held_out_row_gets_infinite_errors():
    x = np.linspace(0.5, 3.0, 20)
    x[7] = -1.0  # sqrt is undefined there
    y = np.sqrt(np.abs(x))
    labels = fold_labels(20, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning leaks
        errors, _ = out_of_fold_errors([parse("sqrt(x0)"), parse("1.0*x0")], as_columns(x[:, None]), y,
                                       labels, np.random.default_rng(0))
    assert np.isinf(errors[0]).all() and np.isfinite(errors[1]).all()


def test_the_pick_stands_unless_another_entry_is_better_beyond_noise():
    rng = np.random.default_rng(0)
    base = rng.exponential(1.0, size=200)
    errors = np.stack([base + 2.0, base + 0.3, base + rng.normal(0, 0.2, 200), base + 0.5])
    # Entry 2 is the lowest; entry 1 is worse by 0.3 on every row: beyond one standard error.
    assert cross_validated_choice(errors, 2) == 2
    assert cross_validated_choice(errors, 3) == 2
    # Within one standard error of the lowest: the pick stands even though it is not the lowest.
    errors[1] = base + rng.normal(0.0, 1.0, 200)
    if errors[1].mean() - errors[2].mean() <= np.std(errors[1] - errors[2], ddof=1) / np.sqrt(200):
        assert cross_validated_choice(errors, 1) == 1


def test_two_exact_fits_are_not_told_apart_by_rounding_noise():
    # Out-of-fold errors of two exact laws are float rounding (~1e-29); the smaller of them would
    # win the 1-SE comparison by noise alone and move the pick off the one "balanced" made.
    rng = np.random.default_rng(1)
    errors = np.stack([rng.exponential(50.0, 300), rng.exponential(1e-29, 300), rng.exponential(1.5e-29, 300)])
    errors[1] *= 0.5  # entry 1's mean is clearly below entry 2's at the noise's own scale
    assert cross_validated_choice(errors, 2) == 1  # no floor: the noise decides
    assert cross_validated_choice(errors, 2, floor=1e-15 * 160.0) == 2  # the floor: both exact, the pick stands


# ---------------------------------------------------------------------- undersampled waves
@pytest.mark.parametrize("formula, x, flagged", [
    ("tan(x0)", np.arange(80.0, 149.0, 2.0), True),              # tan at even integers: 1.6 rows per period
    ("sin(x0)", np.linspace(0, 60, 400), False),                   # 42 rows per period
    ("sin(40.0*x0)", np.linspace(0, 1, 20), True),                 # 6.4 periods over 20 rows
    ("sin(3.0*x0)", np.linspace(0, 1, 8), False),                  # less than one period
    ("2.0*x0 + 1.0", np.arange(10.0), False),                      # nothing periodic
    ("cos(x0*x0)", np.linspace(0, 10, 50), True),                  # 16 periods over 50 rows
])
def test_undersampled_oscillation(formula, x, flagged):
    assert undersampled_oscillation(parse(formula), as_columns(x[:, None])) is flagged


def test_an_aliased_pick_gives_way_to_the_rules_choice_among_the_rest():
    x = np.arange(80.0, 149.0)[:, None]
    front = [_entry("x0", 0.6), _entry("0.9*x0 + 1.0", 0.35), _entry("0.9*x0 + 0.8*tan(x0) + 1.0", 0.25)]
    assert choose_entry(front, None, x, "accuracy") == 1
    assert choose_entry(front, None, x, "balanced") == 1
    # On rows dense enough to show the wave, the same formula is a fair choice.
    dense = np.linspace(0.0, 1.2, 200)[:, None]
    assert choose_entry(front, None, dense, "accuracy") == 2


# ---------------------------------------------------------------------- the estimator
def _noisy_small(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(40, 3))
    return X, 2.0 * X[:, 0] - X[:, 1] + rng.normal(0, 1.0, 40)


def test_cv_is_a_rule_and_reports_out_of_fold_losses():
    assert "cv" in MODEL_SELECTION_RULES
    X, y = _noisy_small(0)
    kw = {"policy": "random", "max_evaluations": 3000, "max_time": None, "random_state": 3, "model_selection": "cv"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = SymbolicRegressor(**kw).fit(X, y)
        b = SymbolicRegressor(**kw).fit(X, y)
    assert a.validation_loss_ is not None and len(a.validation_loss_) == len(a.equations_)
    assert a.n_evaluations_ <= 3000 + 1e-9  # the check's refits are counted, within the budget
    # Out-of-fold losses are honest: never below the training loss of the refitted front on average.
    assert np.mean(a.validation_loss_) > np.mean(a.equations_["loss"])
    np.testing.assert_array_equal(a.validation_loss_, b.validation_loss_)  # deterministic for a seed
    assert a.best_index_ == b.best_index_ and str(a.expression_) == str(b.expression_)
    chosen = a.validation_loss_[a.best_index_]
    assert chosen <= np.min(a.validation_loss_) * 1.5


def test_cv_keeps_exact_recovery_and_is_skipped_on_large_data():
    rng = np.random.default_rng(8)
    X = rng.uniform(1, 5, size=(300, 2))
    y = 0.5 * X[:, 0] * X[:, 1] ** 2
    est = SymbolicRegressor(policy="random", max_evaluations=4000, max_time=None, random_state=0,
                            model_selection="cv").fit(X, y)
    chosen = est.equations_.iloc[est.best_index_]
    assert chosen["r2"] > 1 - 1e-12 and chosen["complexity"] <= 7
    X_big = rng.uniform(1, 5, size=(1500, 2))
    big = SymbolicRegressor(policy="random", max_evaluations=500, max_time=None, random_state=0,
                            model_selection="cv").fit(X_big, X_big[:, 0] + X_big[:, 1])
    assert big.validation_loss_ is None


def test_cv_from_a_script_without_a_main_guard(tmp_path):
    script = tmp_path / "fit_cv.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, warnings
        from dgsr import SymbolicRegressor
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        X = rng.uniform(-2, 2, size=(40, 3))
        y = 2.0 * X[:, 0] - X[:, 1] + rng.normal(0, 1.0, 40)
        est = SymbolicRegressor(policy="random", max_evaluations=1500, max_time=None, random_state=0,
                                model_selection="cv", n_jobs=2).fit(X, y)
        print("LOSSES", len(est.validation_loss_), np.isfinite(est.predict(X)).all())
    """))
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=170)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "LOSSES" in out.stdout and "True" in out.stdout
