"""``dgsr fit`` writes the JSON model file ``model.json`` beside ``model.pkl``, and ``dgsr predict``
reads either; a model file of a newer schema, or a JSON file that is no model, is one error line."""

from __future__ import annotations

import json
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dgsr
import dgsr.cli.app as cli
from dgsr.estimator.model_file import SCHEMA_VERSION
from dgsr.estimator.regressor import SymbolicRegressor
from tests.cli.dgsr_process import run_dgsr

# SymPy's time cap uses SIGALRM, as pytest-timeout's signal method does.
pytestmark = pytest.mark.timeout(300, method="thread")

FAST = ["--policy", "random", "--evals", "600", "--time", "60", "--quiet"]


def _dgsr(*argv: str, cwd) -> subprocess.CompletedProcess:
    return run_dgsr(*argv, cwd=cwd)


@pytest.fixture
def table(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"mass kg": rng.uniform(1, 5, 60), "h": rng.uniform(1, 5, 60)})
    df["E"] = 9.81 * df["mass kg"] * df["h"] + 0.3
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def test_fit_writes_model_json_and_predict_reads_it_bit_for_bit(tmp_path, table):
    out = tmp_path / "run"
    fit = _dgsr("fit", str(table), "--out", str(out), *FAST, cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert str(out / "model.json") in fit.stdout.splitlines()[-1]  # the files it reports
    model = SymbolicRegressor.from_file(out / "model.json")
    pickled = pickle.loads((out / "model.pkl").read_bytes())
    df = pd.read_csv(table)
    X = df[["mass kg", "h"]]
    assert model.predict(X).tobytes() == pickled.predict(X).tobytes()
    assert model.equations_["equation"].tolist() == pickled.equations_["equation"].tolist()

    predicted = _dgsr("predict", str(out / "model.json"), str(table), cwd=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    values = np.array([float(line) for line in predicted.stdout.split()])  # repr: exact
    assert values.tobytes() == model.predict(X).tobytes()
    from_pickle = _dgsr("predict", str(out / "model.pkl"), str(table), cwd=tmp_path)
    assert from_pickle.stdout == predicted.stdout


def test_predict_refuses_a_newer_model_file_and_a_json_that_is_no_model(tmp_path, table, capsys):
    out = tmp_path / "run"
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 0
    assert "model.json" in capsys.readouterr().out
    doc = json.loads((out / "model.json").read_text())
    doc["schema_version"] = SCHEMA_VERSION + 1
    future = tmp_path / "future.json"
    future.write_text(json.dumps(doc))
    other = tmp_path / "other.json"
    other.write_text('{"model": "not ours"}')
    for path, words in ((future, f"schema version {SCHEMA_VERSION + 1}"), (other, "is not a dgsr model file")):
        assert cli.main(["predict", str(path), str(table)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("dgsr: error: ")
        assert str(path) in err[0] and words in err[0] and f"dgsr {dgsr.__version__}" in err[0]


def test_a_folder_holding_only_a_model_json_holds_a_run(tmp_path, table, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.json").write_text("{}")
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 2
    assert "already holds a run (model.json)" in capsys.readouterr().err
