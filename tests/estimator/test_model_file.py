"""The versioned JSON model file: ``est.save(path)`` and ``SymbolicRegressor.from_file(path)`` give
back an estimator with the same predictions (bit for bit), table, SymPy and LaTeX, in this process
and in a fresh one; files of a newer schema and files that are no model file are refused with one
clear error; pickles record the dgsr version that wrote them."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn.base

import dgsr
from dgsr.estimator import display, pickle_version
from dgsr.estimator.model_file import ONE_OUTPUT_SCHEMA, SCHEMA_VERSION, ModelFileError
from dgsr.estimator.pickle_version import DgsrVersionWarning
from dgsr.estimator.regressor import SymbolicRegressor

# SymPy's time cap uses SIGALRM, as pytest-timeout's signal method does.
pytestmark = pytest.mark.timeout(180, method="thread")
SRC = str(Path(dgsr.__file__).resolve().parents[1])


def _frame(seed: int = 0, n: int = 80) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a b": rng.uniform(1, 3, n), "mass": rng.uniform(0.5, 2, n), "z": rng.uniform(-1, 1, n)})
    return X, pd.Series(X["a b"] * np.sin(X["mass"]) + 0.5 * X["mass"], name="force")


def _fit(X, y, **params) -> SymbolicRegressor:
    return SymbolicRegressor(policy="random", max_evaluations=1500, max_time=None, random_state=0,
                             **params).fit(X, y)


@pytest.fixture(scope="module")
def fitted() -> tuple[SymbolicRegressor, pd.DataFrame, pd.Series]:
    X, y = _frame()
    return _fit(X, y), X, y


def _same_results(a: SymbolicRegressor, b: SymbolicRegressor, X, y) -> None:
    """Everything a user reads from a fitted estimator is the same, predictions bit for bit."""
    for index in (None, *range(len(a.expressions_))):
        assert a.predict(X, index=index).tobytes() == b.predict(X, index=index).tobytes()
        assert a.sympy(index) == b.sympy(index) and str(a.sympy(index)) == str(b.sympy(index))
        assert a.latex(index) == b.latex(index)
    assert a.score(X, y) == b.score(X, y)
    assert a.expressions_ == b.expressions_ and a.expression_ == b.expression_
    assert a.best_index_ == b.best_index_
    pd.testing.assert_frame_equal(a.equations_, b.equations_)
    assert str(a.equations_) == str(b.equations_)
    assert a.equations_.selected_row == b.equations_.selected_row


def test_a_saved_model_reads_back_with_the_same_results(fitted, tmp_path):
    est, X, y = fitted
    path = est.save(tmp_path / "model.json")
    assert path == tmp_path / "model.json" and [p.name for p in tmp_path.iterdir()] == ["model.json"]
    loaded = SymbolicRegressor.from_file(path)
    _same_results(est, loaded, X, y)
    assert loaded.get_params() == est.get_params()
    assert list(loaded.feature_names_in_) == ["a b", "mass", "z"] and loaded.n_features_in_ == 3
    assert loaded.selected_features_ == est.selected_features_ and loaded.target_name_ == "force"
    assert (loaded.n_evaluations_, loaded.stop_reason_, loaded.history_) == \
        (est.n_evaluations_, est.stop_reason_, est.history_)
    np.testing.assert_array_equal(loaded.validation_loss_, est.validation_loss_)
    # The columns are checked by name, as the original checks them.
    for other in (X.rename(columns={"mass": "m"}), X[["z", "mass", "a b"]]):
        for model in (est, loaded):
            with pytest.raises(ValueError, match="feature names"):
                model.predict(other)


def test_the_file_names_its_format_versions_and_formulas(fitted, tmp_path):
    est, _, _ = fitted
    doc = json.loads(est.save(tmp_path / "model.json").read_text())
    assert (doc["format"], doc["schema_version"], doc["dgsr_version"]) == ("dgsr-model", ONE_OUTPUT_SCHEMA,
                                                                           dgsr.__version__)
    assert doc["selected"] == est.best_index_ and len(doc["front"]) == len(est.expressions_)
    for entry, expr, row in zip(doc["front"], est.expressions_, est.equations_.itertuples()):
        assert entry["complexity"] == row.complexity and entry["loss"] == row.loss and entry["r2"] == row.r2
        assert entry["equation"] == expr.format(est.selected_features_)
        assert entry["sympy"] is not None
    assert doc["params"]["policy"] == "random" and "params_not_saved" not in doc


def test_the_loaded_table_shows_the_stored_sympy_forms_without_simplifying_again(fitted, tmp_path, monkeypatch):
    """SymPy's simplification runs under a time cap, so running it again could stop elsewhere:
    the file keeps the forms the original showed, and a loaded model shows those."""
    est, _, _ = fitted
    path = est.save(tmp_path / "model.json")
    calls = []
    monkeypatch.setattr(display, "simplify", lambda expr, timeout, probes=(): calls.append(expr) or expr)
    loaded = SymbolicRegressor.from_file(path)
    assert loaded.equations_["sympy"].tolist() == est.equations_["sympy"].tolist() and calls == []
    doc = json.loads(path.read_text())
    doc["front"][0]["sympy"] = None  # a form the writer could not store: simplified again when read
    path.write_text(json.dumps(doc))
    again = SymbolicRegressor.from_file(path)
    assert again.equations_["sympy"].iloc[1:].tolist() == est.equations_["sympy"].iloc[1:].tolist()
    assert len(calls) in (1, 2) and len({str(c) for c in calls}) == 1  # that row, with and without the signs


def test_a_fresh_process_predicts_bit_for_bit(fitted, tmp_path):
    est, X, _ = fitted
    model = est.save(tmp_path / "model.json")
    X.to_csv(tmp_path / "X.csv", index=False)
    code = (
        "import sys, numpy as np, pandas as pd\n"
        "from dgsr import SymbolicRegressor\n"
        f"est = SymbolicRegressor.from_file({str(model)!r})\n"
        f"X = pd.read_csv({str(tmp_path / 'X.csv')!r})\n"
        f"np.save({str(tmp_path / 'pred.npy')!r}, est.predict(X))\n"
        "print('|'.join(est.equations_['equation']))\n"
        "print(est.latex())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=170, check=False,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.returncode == 0, out.stderr
    X_read = pd.read_csv(tmp_path / "X.csv")
    assert np.load(tmp_path / "pred.npy").tobytes() == est.predict(X_read).tobytes()
    table, latex = out.stdout.rstrip("\n").split("\n")
    assert table.split("|") == est.equations_["equation"].tolist()
    assert latex == est.latex()


def test_an_array_fit_far_outside_the_float_range_round_trips(tmp_path):
    """No column names, and data scaled by powers of two for the search: both come back."""
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(1, 3, 60), rng.uniform(1, 3, 60) * 1e-200])
    y = (X[:, 0] * np.sin(X[:, 1] * 1e200) + 2.5) * 1e250
    with pytest.warns(UserWarning, match="overflow float64"):
        est = SymbolicRegressor(max_evaluations=800, max_time=None, random_state=0).fit(X, y)
    assert est._scaling.y_exponent != 0 and any(est._scaling.x_exponents)
    loaded = SymbolicRegressor.from_file(est.save(tmp_path / "m.json"))
    _same_results(est, loaded, X, y)
    assert not hasattr(loaded, "feature_names_in_") and loaded.selected_features_ == ["x0", "x1"]


def test_a_constant_target_model_round_trips(tmp_path):
    X, _ = _frame(n=30)
    with pytest.warns(UserWarning, match="constant"):
        est = _fit(X, pd.Series(np.full(30, 4.25)))
    loaded = SymbolicRegressor.from_file(est.save(tmp_path / "m.json"))
    _same_results(est, loaded, X, np.full(30, 4.25))
    assert loaded.stop_reason_ == "constant_target" and loaded.selected_features_ == []


def test_parameters_json_cannot_hold_are_named_and_left_at_their_default(fitted, tmp_path):
    est, X, _ = fitted
    clone = pickle.loads(pickle.dumps(est))
    clone.set_params(random_state=np.random.default_rng(5), operators=("add", "mul"))
    doc = json.loads(clone.save(tmp_path / "m.json").read_text())
    assert "Generator" in doc["params_not_saved"]["random_state"]
    assert doc["params"]["operators"] == ["add", "mul"]
    loaded = SymbolicRegressor.from_file(tmp_path / "m.json")
    assert loaded.random_state is None and loaded.operators == ["add", "mul"]
    assert loaded.predict(X).tobytes() == est.predict(X).tobytes()


def test_a_newer_schema_is_refused_naming_the_file_and_the_versions(fitted, tmp_path):
    est, _, _ = fitted
    doc = json.loads(est.save(tmp_path / "model.json").read_text())
    doc["schema_version"] = SCHEMA_VERSION + 1
    doc["dgsr_version"] = "99.0.0"
    future = tmp_path / "future.json"
    future.write_text(json.dumps(doc))
    with pytest.raises(ModelFileError) as err:
        SymbolicRegressor.from_file(future)
    text = str(err.value)
    assert str(future) in text and f"schema version {SCHEMA_VERSION + 1}" in text
    assert "dgsr 99.0.0" in text and f"dgsr {dgsr.__version__}" in text and "upgrade" in text


@pytest.mark.parametrize("content", ['{"weights": [1, 2, 3]}', "[1, 2]", "x0,x1\n1,2\n", '{"format": "dgsr-model"}',
                                     "\x80\x04binary"])
def test_a_file_that_is_no_model_file_is_refused_with_one_error(tmp_path, content):
    path = tmp_path / "other.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(ModelFileError, match="is not a dgsr model file") as err:
        SymbolicRegressor.from_file(path)
    assert str(path) in str(err.value) and f"dgsr {dgsr.__version__}" in str(err.value)


def test_a_damaged_model_file_is_refused_naming_what_is_wrong(fitted, tmp_path):
    est, _, _ = fitted
    doc = json.loads(est.save(tmp_path / "model.json").read_text())
    for damage, words in ((lambda d: d.pop("scaling"), "missing field 'scaling'"),
                          (lambda d: d["front"][0]["search"].update(symbols=["nosuch"], constants=[]), "unknown symbol"),
                          (lambda d: d.update(selected=len(d["front"])), "is not a row"),
                          (lambda d: d["front"][0]["search"].update(constants=["one"]), "expected a number")):
        broken = json.loads(json.dumps(doc))
        damage(broken)
        path = tmp_path / "damaged.json"
        path.write_text(json.dumps(broken))
        with pytest.raises(ModelFileError, match="damaged dgsr model file") as err:
            SymbolicRegressor.from_file(path)
        assert words in str(err.value) and str(path) in str(err.value)


# ---------------------------------------------------------------- pickles: the version that wrote them
def test_a_pickle_of_this_version_loads_silently(fitted):
    est, X, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone = pickle.loads(pickle.dumps(est))
    assert clone.predict(X).tobytes() == est.predict(X).tobytes()
    assert "_dgsr_version" not in clone.__dict__


def test_a_pickle_of_another_version_names_the_version_that_wrote_it(fitted, monkeypatch):
    est, X, _ = fitted
    monkeypatch.setattr(pickle_version, "_dgsr_version", lambda: "0.9.0")
    data = pickle.dumps(est)
    monkeypatch.undo()
    with pytest.warns(DgsrVersionWarning, match=r"pickled by dgsr 0\.9\.0 .* loaded by dgsr ") as record:
        clone = pickle.loads(data)
    assert dgsr.__version__ in str(record[0].message) and "from_file" in str(record[0].message)
    assert clone.predict(X).tobytes() == est.predict(X).tobytes()  # a warning, not a refusal


def test_a_pickle_without_a_version_says_so(fitted):
    est, _, _ = fitted
    state = est.__getstate__()
    assert state.pop("_dgsr_version") == dgsr.__version__
    clone = SymbolicRegressor.__new__(SymbolicRegressor)
    with pytest.warns(DgsrVersionWarning, match="recorded no version"):
        clone.__setstate__(state)


def test_a_pickle_written_before_a_parameter_existed_takes_its_default_and_refits(fitted):
    est, X, y = fitted
    state = est.__getstate__()
    for added_since in ("snap_constants", "reduce_units", "dimensionless_constants_only", "batch_size"):
        state.pop(added_since)
    clone = SymbolicRegressor.__new__(SymbolicRegressor)
    clone.__setstate__(state)
    assert clone.predict(X).tobytes() == est.predict(X).tobytes()
    params = clone.get_params()
    assert params["snap_constants"] is True and params["dimensionless_constants_only"] is False
    assert params["reduce_units"] is True
    assert params["batch_size"] == 1000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refit = sklearn.base.clone(clone).set_params(max_evaluations=300, max_time=None).fit(X, y)
    assert np.all(np.isfinite(refit.predict(X)))
