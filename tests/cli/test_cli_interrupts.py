"""``dgsr fit`` under Ctrl-C and with a bad --out; every subcommand's bad arguments end in one
line and a non-zero status (issue 11, items 3, 4 and 8)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import dgsr.cli.app as cli
import dgsr.search.tree as search
from dgsr.estimator import display, polish, regressor
from tests.ctrl_c import CTRL_C_SHAPES, interrupted_at_call

pytestmark = pytest.mark.timeout(120, method="thread")

# Candidates valued as proposed (no inner fits): the search then leaves part of the 600
# evaluations to polishing and tidying, the phases these tests interrupt.
FAST = ["--policy", "random", "--inner-fit-steps", "0", "--evals", "600", "--time", "30", "--quiet"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 5, 80), "b": rng.uniform(1, 5, 80)})
    df["y"] = 1.7 * df["a"] * df["b"] + 0.3
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def _interrupting(shape):
    """A stand-in that is interrupted by a Ctrl-C of ``shape`` as soon as it is called."""
    return lambda *_args, **_kwargs: shape()


# Each Ctrl-C test runs with both shapes a Ctrl-C arrives in (tests/ctrl_c.py): a plain
# KeyboardInterrupt, and the SystemError of one that landed while compiled code returned.
ctrl_c_shapes = pytest.mark.parametrize("shape", CTRL_C_SHAPES, ids=["python", "compiled"])


def _fit_and_check(path, out, capsys) -> str:
    # Issue 26, item 5: an interrupted fit exits 130 (not 0), writes its best result, and its
    # front.csv says why it stopped.
    assert cli.main(["fit", str(path), "--out", str(out), *FAST]) == 130
    captured = capsys.readouterr()
    err = captured.err
    assert "Interrupted (Ctrl-C)" in err and "best result reached so far" in err
    assert "interrupted" in captured.out.splitlines()[-1]
    est = pickle.loads((out / "model.pkl").read_bytes())
    assert est.stop_reason_ == "interrupted"
    front = pd.read_csv(out / "front.csv")
    assert front["selected"].sum() == 1
    assert set(front["stop_reason"]) == {"interrupted"}
    return err


@ctrl_c_shapes
def test_ctrl_c_during_simplification_still_writes_the_outputs(tmp_path, table, capsys, monkeypatch, shape):
    monkeypatch.setattr(display, "simplify", _interrupting(shape))
    err = _fit_and_check(table, tmp_path / "run", capsys)
    assert "during simplification" in err


@ctrl_c_shapes
def test_ctrl_c_during_polishing_still_writes_the_outputs(tmp_path, table, capsys, monkeypatch, shape):
    monkeypatch.setattr(polish, "fit_constants", _interrupting(shape))
    calls = []
    monkeypatch.setattr(display, "simplify", lambda e, timeout, probes=(): calls.append(e) or e)
    err = _fit_and_check(table, tmp_path / "run", capsys)
    assert "during constant polishing" in err
    assert not calls  # the rest of the fit skipped simplification


@ctrl_c_shapes
def test_ctrl_c_during_tidying_still_writes_the_outputs(tmp_path, table, capsys, monkeypatch, shape):
    monkeypatch.setattr(polish, "tidy_constants", _interrupting(shape))
    _fit_and_check(table, tmp_path / "run", capsys)


@ctrl_c_shapes
def test_ctrl_c_during_the_search_writes_the_best_so_far(tmp_path, table, capsys, monkeypatch, shape):
    # The 10th iteration: well inside the 600 evaluations (rounding can end a search near 30).
    monkeypatch.setattr(search.Trial, "iterate", interrupted_at_call(search.Trial.iterate, 10, shape))
    monkeypatch.setattr(polish, "fit_constants", lambda *a, **k: pytest.fail("polished after Ctrl-C"))
    err = _fit_and_check(table, tmp_path / "run", capsys)
    assert "during the search" in err


@ctrl_c_shapes
def test_a_second_ctrl_c_aborts_at_once(tmp_path, table, capsys, monkeypatch, shape):
    monkeypatch.setattr(polish, "fit_constants", _interrupting(shape))  # first Ctrl-C: polishing
    monkeypatch.setattr(display, "complexity", _interrupting(shape))  # second: while building the table
    out = tmp_path / "run"
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 130
    assert not (out / "model.pkl").exists()


def test_a_system_error_that_is_no_ctrl_c_is_a_bug_not_an_interrupt(tmp_path, table, capsys, monkeypatch):
    def broken(*_args, **_kwargs):
        raise SystemError("a bug in an extension")

    monkeypatch.setattr(display, "simplify", broken)
    assert cli.main(["fit", str(table), "--out", str(tmp_path / "run"), *FAST]) == 1
    err = capsys.readouterr().err
    assert "SystemError: a bug in an extension" in err and "interrupted" not in err


@pytest.mark.parametrize("kind", ["file", "under_file"])
def test_bad_out_is_an_error_before_the_search(tmp_path, table, capsys, monkeypatch, kind):
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    out = blocker if kind == "file" else blocker / "sub"
    monkeypatch.setattr(regressor.SymbolicRegressor, "fit", lambda *a, **k: pytest.fail("searched first"))
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dgsr: error:") and "--out" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def model_file(tmp_path, table):
    out = tmp_path / "m"
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 0
    return out / "model.pkl"


def _bad_invocations(tmp, table, model):
    missing = str(tmp / "missing.csv")
    return [
        ["fit", missing], ["fit", str(table), "--time", "-1"], ["fit", str(table), "--evals", "0"],
        ["fit", str(table), "--target", "nope"], ["fit", str(table), "--policy", "nonsense"],
        ["fit", "--example", "nope"], ["fit"],
        ["predict", str(model), str(table), "--index", "99"], ["predict", missing, str(table)],
        ["predict", str(table), str(table)], ["predict", str(model), missing],
        ["example", "nope"],
        ["search", "--workers", "0", str(table)], ["search", missing],
        ["pretrain", "--steps", "-3", "--out", str(tmp / "pt")],
        ["data", "--help-me"], ["data", "sample", "--n", "-1"], ["bench", "--no-such-flag"],
        ["bench", "--data", str(tmp / "no-such-folder")], ["fit", str(table), "--seed", "x"],
    ]


def test_every_subcommand_with_bad_arguments_ends_in_one_line(tmp_path, table, model_file, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # default output folders land here
    for argv in _bad_invocations(tmp_path, table, model_file):
        try:
            status = cli.main(argv)
        except SystemExit as stop:  # argparse: usage line + one error line, status 2
            status = stop.code
        err = capsys.readouterr().err
        assert status not in (0, None), argv
        assert "Traceback" not in err, (argv, err)
        lines = [line for line in err.strip().splitlines() if not line.startswith(("usage:", " "))]
        assert len(lines) == 1, (argv, err)
        assert lines[0].startswith(("dgsr: error:", "dgsr ")), (argv, err)
