"""``dgsr fit data.csv --target a,b`` fits one front per target, prints each, writes
``front_a.csv``, ``front_b.csv`` and one ``model.json``; ``dgsr predict`` writes one
``prediction_<target>`` column per target (docs/decisions/2026-11-28-several-targets.md)."""

from __future__ import annotations

import subprocess

import numpy as np
import pandas as pd
import pytest

from dgsr.cli.errors import CLIError
from dgsr.cli.targets import target_columns
from dgsr.estimator.regressor import SymbolicRegressor
from tests.cli.dgsr_process import run_dgsr

pytestmark = pytest.mark.timeout(300, method="thread")



def _dgsr(*argv: str, cwd) -> subprocess.CompletedProcess:
    return run_dgsr(*argv, cwd=cwd)


def test_fit_two_targets_writes_a_front_each_and_predict_a_column_each(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"p": rng.uniform(0.5, 3, 100), "q": rng.uniform(0.5, 3, 100)})
    df["a"], df["b"] = 2.5 * df.p * df.q, df.p + df.q**2
    df.to_csv(tmp_path / "data.csv", index=False)
    fit = _dgsr("fit", "data.csv", "--target", "a,b", "--evals", "6000", "--quiet", "--out", "run", cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    assert "Pareto front for a" in fit.stdout and "Pareto front for b" in fit.stdout
    assert "selected (→, model_selection='cv'): a = 2.5*p*q" in fit.stdout
    assert "selected (→, model_selection='cv'): b = p + q**2" in fit.stdout
    for name in ("front_a.csv", "front_b.csv", "model.json", "model.pkl"):
        assert (tmp_path / "run" / name).exists(), name
    assert not (tmp_path / "run" / "front.csv").exists()
    front_a = pd.read_csv(tmp_path / "run" / "front_a.csv")
    assert front_a.loc[front_a.selected, "equation"].item() == "2.5*p*q"
    model = SymbolicRegressor.from_file(tmp_path / "run" / "model.json")
    assert model.n_outputs_ == 2 and model.target_name_ == ["a", "b"]

    predicted = _dgsr("predict", "run/model.json", "data.csv", "--out", "pred.csv", cwd=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    out = pd.read_csv(tmp_path / "pred.csv")
    np.testing.assert_allclose(out[["prediction_a", "prediction_b"]].to_numpy(), df[["a", "b"]].to_numpy(),
                               rtol=1e-9)
    printed = _dgsr("predict", "run/model.pkl", "data.csv", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    first = [float(v) for v in printed.stdout.splitlines()[0].split(",")]
    assert first == out[["prediction_a", "prediction_b"]].iloc[0].tolist()


def test_target_option_names_one_column_or_several():
    columns = ["x", "a", "b", "c,d"]
    assert target_columns(None, columns, "f.csv") == ["c,d"]
    assert target_columns("c,d", columns, "f.csv") == ["c,d"]  # a column whose name holds a comma
    assert target_columns("a, b", columns, "f.csv") == ["a", "b"]
    with pytest.raises(CLIError, match="'z'"):
        target_columns("a,z", columns, "f.csv")
    with pytest.raises(CLIError, match="twice"):
        target_columns("a,a", columns, "f.csv")
