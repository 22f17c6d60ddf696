"""``dgsr fit --operators`` with user-defined operators (issue 50 item 1), run as a user runs it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.cli.dgsr_process import run_dgsr

pytestmark = pytest.mark.timeout(240, method="thread")


def test_fit_and_predict_with_a_defined_operator(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.uniform(-2, 2, 300), "b": rng.uniform(-2, 2, 300)})
    table["y"] = 2.0 * np.exp(-(1.3 * table.a) ** 2) + table.b
    table.to_csv(tmp_path / "d.csv", index=False)
    proc = run_dgsr("fit", "d.csv", "--evals", "6000", "--quiet", "--out", "run",
                    "--operators", "+,-,*,/,c_gauss(x) = exp(-x**2)", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    front = pd.read_csv(tmp_path / "run" / "front.csv")
    assert front["equation"].str.contains("c_gauss(", regex=False).any()
    table.drop(columns=["y"]).to_csv(tmp_path / "x.csv", index=False)
    pred = run_dgsr("predict", "run/model.json", "x.csv", "--out", "p.csv", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    np.testing.assert_allclose(pd.read_csv(tmp_path / "p.csv")["prediction"], table.y, rtol=1e-5, atol=1e-5)


def test_a_malformed_definition_is_one_line_and_no_run_folder(tmp_path):
    proc = run_dgsr("fit", "--example", "gravity", "--evals", "100", "--out", "run",
                    "--operators", "+,*,c_bad(x) = floor(x)", cwd=tmp_path)
    assert proc.returncode == 2
    assert "cannot define the operator 'c_bad(x) = floor(x)'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()
