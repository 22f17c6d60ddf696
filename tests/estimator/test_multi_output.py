"""Several targets (issue 50, item 3): a 2-D ``y`` fits one front per column, as PySR does;
``predict`` gives ``(n, k)``, ``equations_``/``sympy()``/``latex()`` lists, ``score`` scikit-learn's
uniform average of R², and pickles and model files keep every output (docs/decisions/2026-11-28-several-targets.md)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sympy
from sklearn.exceptions import DataConversionWarning
from sklearn.metrics import r2_score

import dgsr
from dgsr.estimator.multi_output import output_budget, output_seeds
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(600, method="thread")

SRC = str(Path(dgsr.__file__).resolve().parents[1])
EVALS = 6000  # 3000 per target: enough for both laws below


def _data(n: int = 120, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"p": rng.uniform(0.5, 3, n), "q": rng.uniform(0.5, 3, n)})
    Y = pd.DataFrame({"force": 2.5 * X.p * X.q, "sum": X.p + X.q**2})
    return X, Y


@pytest.fixture(scope="module")
def fitted() -> tuple[SymbolicRegressor, pd.DataFrame, pd.DataFrame]:
    X, Y = _data()
    est = SymbolicRegressor(max_evaluations=EVALS, max_time=None, random_state=0).fit(X, Y)
    return est, X, Y


def test_two_planted_laws_are_recovered_one_per_target(fitted):
    est, _, _ = fitted
    p, q = sympy.symbols("p q")
    found = est.sympy()
    assert isinstance(found, list) and len(found) == 2
    for expr, law in zip(found, (2.5 * p * q, p + q**2)):
        assert sympy.simplify(expr - law) == 0, (expr, law)
    assert est.n_outputs_ == 2 and len(est.estimators_) == 2
    assert est.target_name_ == ["force", "sum"]
    html = est._repr_html_()  # a notebook shows both fronts, each headed by its target
    assert "target <b>force</b>" in html and "target <b>sum</b>" in html and html.count("<table") == 2


def test_predict_has_one_column_per_target_and_attributes_are_lists(fitted):
    est, X, Y = fitted
    pred = est.predict(X)
    assert pred.shape == (len(X), 2)
    np.testing.assert_allclose(pred, Y.to_numpy(), rtol=1e-9)
    tables = est.equations_
    assert isinstance(tables, list) and len(tables) == 2
    assert all(isinstance(t, pd.DataFrame) and "equation" in t.columns for t in tables)
    latex = est.latex()
    assert isinstance(latex, list) and len(latex) == 2 and all(isinstance(s, str) for s in latex)
    for attribute in ("expression_", "expressions_", "best_index_", "selected_features_", "n_evaluations_",
                      "stop_reason_"):
        assert isinstance(getattr(est, attribute), list) and len(getattr(est, attribute)) == 2, attribute
    # The budget is split evenly: each target gets half of max_evaluations.
    assert all(o.max_evaluations == EVALS // 2 for o in est.estimators_)
    assert sum(est.n_evaluations_) <= EVALS * 1.05
    # one row of each front (index per output) and the first row of both
    first = est.predict(X, index=[0, 0])  # each front's constant (snapped where the rows allow)
    assert first.shape == (len(X), 2) and np.all(np.ptp(first, axis=0) == 0)
    assert np.all(np.abs(first[0] - Y.mean().to_numpy()) < 0.2 * Y.std().to_numpy())


def test_score_is_scikit_learns_uniform_average_of_r2(fitted):
    est, X, Y = fitted
    rng = np.random.default_rng(5)
    noisy = Y + rng.normal(0, [0.5, 2.0], Y.shape)  # unequal R² per target, so the average matters
    expected = r2_score(noisy, est.predict(X), multioutput="uniform_average")
    assert est.score(X, noisy) == pytest.approx(expected, rel=1e-12)
    assert expected < 0.99
    weights = rng.uniform(0.5, 2, len(X))
    assert est.score(X, noisy, weights) == pytest.approx(r2_score(noisy, est.predict(X), sample_weight=weights))


def test_exports_give_every_target_side_by_side(fitted):
    est, X, _ = fitted
    f = est.to_numpy()
    np.testing.assert_allclose(f(X), est.predict(X), rtol=1e-12)
    assert f(X.iloc[3]).shape == (2,)
    np.testing.assert_allclose(f(X.to_numpy()[:5]), est.predict(X)[:5], rtol=1e-12)


def test_seeds_are_derived_per_target_and_deterministic():
    assert output_seeds(0, 3) == output_seeds(0, 3)
    assert len(set(output_seeds(0, 3))) == 3 and output_seeds(0, 3) != output_seeds(1, 3)
    assert output_seeds(None, 2) == [None, None]
    assert output_budget(1001, 60.0, 2) == {"max_evaluations": 500, "max_time": 30.0}
    assert output_budget(None, None, 3) == {"max_evaluations": None, "max_time": None}


def test_a_single_column_y_is_one_target_as_before():
    X, Y = _data(60)
    kwargs = {"max_evaluations": 800, "max_time": None, "random_state": 3, "policy": "random"}
    flat = SymbolicRegressor(**kwargs).fit(X, Y["force"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataConversionWarning)
        column = SymbolicRegressor(**kwargs).fit(X, Y[["force"]].to_numpy())
    assert column.n_outputs_ == 1 and not hasattr(column, "estimators_")
    assert column.predict(X).shape == (len(X),)
    assert [str(e) for e in column.expressions_] == [str(e) for e in flat.expressions_]


def test_n_jobs_gives_each_target_the_same_front():
    X, Y = _data(60)
    kwargs = {"max_evaluations": 1600, "max_time": None, "random_state": 4, "policy": "random"}
    one = SymbolicRegressor(n_jobs=1, **kwargs).fit(X, Y)
    two = SymbolicRegressor(n_jobs=2, **kwargs).fit(X, Y)
    assert all(o.n_jobs == 2 for o in two.estimators_)
    assert [[str(e) for e in es] for es in two.expressions_] == [[str(e) for e in es] for es in one.expressions_]


_RELOAD = """
import pickle, sys
import numpy as np, pandas as pd
from dgsr import SymbolicRegressor
X = pd.read_csv(sys.argv[1])
for name, est in (("json", SymbolicRegressor.from_file(sys.argv[2])),
                  ("pkl", pickle.load(open(sys.argv[3], "rb")))):
    assert est.n_outputs_ == 2 and len(est.equations_) == 2, name
    np.save(sys.argv[4] + name + ".npy", est.predict(X))
    print(name, [str(s) for s in est.sympy()])
"""


def test_pickle_and_model_file_round_trip_in_a_fresh_process(fitted, tmp_path):
    est, X, _ = fitted
    X.to_csv(tmp_path / "X.csv", index=False)
    est.save(tmp_path / "model.json")
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(est))
    env = {**os.environ, "PYTHONPATH": SRC}
    run = subprocess.run([sys.executable, "-c", _RELOAD, str(tmp_path / "X.csv"), str(tmp_path / "model.json"),
                          str(tmp_path / "model.pkl"), str(tmp_path / "pred_")],
                         capture_output=True, text=True, env=env, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    expected = est.predict(X)
    for name in ("json", "pkl"):
        assert np.load(tmp_path / f"pred_{name}.npy").tobytes() == expected.tobytes(), name
    assert f"json {[str(s) for s in est.sympy()]}" in run.stdout
    loaded = SymbolicRegressor.from_file(tmp_path / "model.json")
    assert [t["equation"].tolist() for t in loaded.equations_] == [t["equation"].tolist() for t in est.equations_]
