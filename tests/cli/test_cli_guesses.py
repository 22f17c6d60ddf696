"""``dgsr fit --guess FORMULA`` (issue 50 item 4), run as a user runs it, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.cli.dgsr_process import run_dgsr

pytestmark = pytest.mark.timeout(240, method="thread")

TINY = ["--evals", "200", "--quiet", "--seed", "0"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 3, 200), "b": rng.uniform(1, 3, 200), "c": rng.uniform(0.5, 2, 200)})
    df["y"] = 1.7 * df.a * df.b * np.sin(df.c) / (df.a + df.b)
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def _dgsr(*argv: str, cwd) -> subprocess.CompletedProcess:
    return run_dgsr(*argv, cwd=cwd, timeout=180)


def test_fit_with_a_guess_selects_it_refitted_and_keeps_it_in_the_model_file(tmp_path, table):
    out = tmp_path / "run"
    proc = _dgsr("fit", str(table), "--out", str(out), "--guess", "2*a*b*sin(c)/(a+b)", "--guess", "a", *TINY,
                 cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    model = json.loads((out / "model.json").read_text())
    assert model["params"]["guesses"] == ["2*a*b*sin(c)/(a+b)", "a"]
    front = pd.read_csv(out / "front.csv")
    best = front.loc[front["selected"].astype(bool)]
    assert float(best["r2"].iloc[0]) > 1 - 1e-9, front
    assert "1.7" in str(best["equation"].iloc[0])


def test_a_bad_guess_is_one_error_line_and_no_run_folder(tmp_path, table):
    out = tmp_path / "run"
    proc = _dgsr("fit", str(table), "--out", str(out), "--guess", "a*d", *TINY, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["dgsr: error: guess 'a*d' cannot be used: unknown variable 'd' (the columns are a, b, c)."]
    assert not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX")
def test_the_flag_is_in_the_help(tmp_path):
    proc = _dgsr("fit", "--help", cwd=tmp_path)
    assert "--guess FORMULA" in proc.stdout
