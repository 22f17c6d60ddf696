"""The estimator only orchestrates (issue 49, item 1): ``fit_front`` fits without an estimator and
gives what ``SymbolicRegressor.fit`` gives, the fold searches run on one process without
fine-tuning whatever the user asked for, and no estimator function takes the estimator itself."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

import dgsr.estimator
from dgsr.estimator import fit_front as fit_front_module
from dgsr.estimator.budget_plan import plan_budget
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.fit_front import fit_front
from dgsr.estimator.fit_search import search_rows
from dgsr.estimator.input_checks import TrainingData
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")

ESTIMATOR_DIR = Path(dgsr.estimator.__file__).parent


def _noisy_line(seed: int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.uniform(1, 5, size=n)])
    return X, 3.0 * X[:, 0] + rng.normal(scale=2.0, size=n)


def _front(entries) -> list[tuple[str, float, int]]:
    return [(e.expression.key(), e.mse, e.size) for e in entries]


@pytest.mark.parametrize("selection", ["cv", "validation"])
def test_fit_front_without_an_estimator_gives_the_fit_s_front(selection):
    X, y = _noisy_line(3, n=60)
    params = {"max_time": None, "max_evaluations": 4000, "random_state": 7, "model_selection": selection}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(**params).fit(X, y)
        names = ("x0", "x1")
        result = fit_front(FitConfig(**params), search_rows(TrainingData(X, y, names), None), names)
    assert _front(result.entries) == _front(est._front)
    assert result.best_index == est.best_index_ and result.n_evaluations == est.n_evaluations_
    assert result.size_limit == est.size_limit_ and result.stop_reason == est.stop_reason_
    np.testing.assert_array_equal(result.validation_loss, est.validation_loss_)
    np.testing.assert_array_equal(result.predictions(X, result.best_index), est.predict(X, strict=True))


def test_the_fold_searches_run_on_one_process_without_fine_tuning(monkeypatch):
    from dgsr.search import parallel

    pytest.importorskip("torch")  # finetune=True asks for it before it finds the policy cannot be fine-tuned
    fold_configs: list[FitConfig] = []
    real_fit_front = fit_front_module.fit_front

    def spy(config, *args, **kwargs):  # the estimator's own fit calls it by its own name: only folds land here
        fold_configs.append(config)
        return real_fit_front(config, *args, **kwargs)

    processes: list[int] = []
    real_search = parallel.run_parallel_search

    def counting(*args, **kwargs):
        processes.append(kwargs["n_jobs"])
        return real_search(*args, **kwargs)

    monkeypatch.setattr(fit_front_module, "fit_front", spy)
    monkeypatch.setattr(parallel, "run_parallel_search", counting)
    X, y = _noisy_line(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SymbolicRegressor(max_time=None, max_evaluations=6000, random_state=3, n_jobs=2,
                                  finetune=True).fit(X, y)
    assert len(fold_configs) == 5 and model.n_evaluations_ <= 6000  # the whole-search check ran
    assert all(c.n_jobs == 1 and not c.finetune and c.model_selection == "balanced" for c in fold_configs)
    assert processes[0] == 2 and processes[1:] == [1] * 5  # the user's search, then the five folds


def test_every_carve_out_of_the_budget_is_in_one_plan():
    config = FitConfig(max_time=100.0, max_evaluations=10_000, model_selection="cv")
    plan = plan_budget(config, 40, start=0.0)
    assert plan.cv_evaluations == 400.0  # the "cv" check: at most 400
    assert plan.fold_evaluations == pytest.approx(0.5 * (9500 - 400))  # half of what the search would have had
    searchable = 10_000 * (1.0 - 0.05) - 400.0  # all but the polish's 5% and the check's 400
    assert plan.search_evaluation_limit() == int(searchable - plan.fold_evaluations)
    assert plan.search_evaluation_limit(spent=3000.0) == int(searchable - 3000.0)  # a continuation gets the folds' share
    assert plan.polish_reserve(continued=False) == 400.0 + plan.fold_evaluations
    assert plan.polish_reserve(continued=True) == 400.0
    assert plan.search_time_share == 0.5 and plan.fold_deadline == pytest.approx(97.0)
    big = plan_budget(config, 5000, start=0.0)  # above cv_max_rows: no check, no fold searches
    assert big.cv_evaluations == big.fold_evaluations == 0.0 and big.search_time_share == 1.0
    assert big.search_evaluation_limit() == int(10_000 * (1.0 - 0.05))


def _parameters(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                yield node, arg


def test_no_estimator_function_takes_the_estimator_as_any():
    offenders = []
    for path in sorted(ESTIMATOR_DIR.glob("*.py")):
        for func, arg in _parameters(ast.parse(path.read_text())):
            # The estimator itself only where its state is the subject, typed as what it is (the
            # model file, scikit-learn's validate_data): never an untyped ``est: Any``.
            untyped = arg.annotation is None or ast.unparse(arg.annotation) in ("Any", "'Any'")
            if arg.arg in ("est", "estimator", "model") and untyped:
                offenders.append(f"{path.name}:{func.lineno} {func.name}({arg.arg})")
    assert not offenders, offenders


def test_no_estimator_function_is_over_80_lines():
    long = []
    for path in sorted(ESTIMATOR_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long.append(f"{path.name}:{node.lineno} {node.name}")
    assert not long, long
