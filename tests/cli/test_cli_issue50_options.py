"""``dgsr fit`` with PySR's rules on formulas and its batching options as flags (issue 50 items 5, 6), run as a user runs it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dgsr import SymbolicRegressor
from dgsr.cli.example import example_path
from dgsr.core.formula_rules import formula_rules
from tests.cli.dgsr_process import run_dgsr

pytestmark = pytest.mark.timeout(240, method="thread")


def test_fit_keeps_the_rules_writes_them_and_predicts(tmp_path):
    argv = ["--maxdepth", "4", "--constraints", '{"/": [-1, 3]}', "--complexity-of-operators", '{"*": 2}',
            "--nested-constraints", '{"sqrt": {"sqrt": 0}}']
    proc = run_dgsr("fit", "--example", "gravity", "--evals", "1500", "--time", "200", "--quiet", "--out", "run",
                    *argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    params = json.loads((tmp_path / "run" / "model.json").read_text())["params"]
    assert params["maxdepth"] == 4 and params["constraints"] == {"/": [-1, 3]}
    est = SymbolicRegressor.from_file(tmp_path / "run" / "model.json")
    rules = formula_rules(est.get_params())
    assert [rules.violation(e) for e in est.expressions_] == [None] * len(est.expressions_)
    front = pd.read_csv(tmp_path / "run" / "front.csv")
    assert front["complexity"].tolist() == [rules.complexity(e) for e in est.expressions_]
    assert any(c != e.size for c, e in zip(front["complexity"], est.expressions_))  # the weights count
    table = pd.read_csv(example_path("gravity"))
    table.drop(columns=["F"]).to_csv(tmp_path / "x.csv", index=False)
    pred = run_dgsr("predict", "run/model.json", "x.csv", "--out", "p.csv", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    assert pd.read_csv(tmp_path / "p.csv")["prediction"].tolist() == est.predict(table.drop(columns=["F"])).tolist()


@pytest.mark.parametrize("flag, value, message", [
    ("--constraints", '{"/": [-1', "--constraints must be a JSON object"),
    ("--nested-constraints", '{"sin": 3}', "--nested-constraints (at 'sin') must be a dict"),
    ("--maxdepth", "0", "--maxdepth must be a whole number >= 1"),
    ("--complexity-of-operators", '{"pow": 2}', "'pow' is not an operator"),
])
def test_a_malformed_rule_is_one_line_and_no_run_folder(tmp_path, flag, value, message):
    proc = run_dgsr("fit", "--example", "gravity", "--evals", "100", "--out", "run", flag, value, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_batching_flags_reach_the_model(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.uniform(1, 3, 3000), "b": rng.uniform(1, 3, 3000)})
    table["y"] = table.a * table.b + 1.5
    table.to_csv(tmp_path / "d.csv", index=False)
    proc = run_dgsr("fit", "d.csv", "--evals", "300", "--quiet", "--out", "run", "--batching", "off",
                    "--batch-size", "200", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    params = json.loads((tmp_path / "run" / "model.json").read_text())["params"]
    assert params["batching"] is False and params["batch_size"] == 200
    bad = run_dgsr("fit", "d.csv", "--evals", "300", "--out", "run2", "--batch-size", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "--batch-size must be a positive integer" in bad.stderr


def test_units_flag_marks_the_front_and_is_kept_in_the_model(tmp_path):
    proc = run_dgsr("fit", "--example", "gravity", "--evals", "800", "--time", "200", "--quiet", "--out", "run",
                    "--units", "m1=kg,m2=kg,r=m,F=N", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    front = pd.read_csv(tmp_path / "run" / "front.csv")
    assert {"dimensionally_consistent", "dimensional_constants"} <= set(front.columns)
    units = json.loads((tmp_path / "run" / "model.json").read_text())["units"]
    assert units == {"X": ["kg", "kg", "m"], "y": "N"}
    est = SymbolicRegressor.from_file(tmp_path / "run" / "model.json")
    assert est.equations_["dimensionally_consistent"].tolist() == front["dimensionally_consistent"].tolist()
    bad = run_dgsr("fit", "--example", "gravity", "--evals", "100", "--out", "run2", "--units", "m1=bananas",
                   cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "column 'm1'" in bad.stderr and "'bananas' is not a unit" in bad.stderr
    assert not (tmp_path / "run2").exists()
