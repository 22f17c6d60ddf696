"""The command line keeps the user's files, tells the truth in its exit status and output files,
and speaks in its own flags (issue 26, items 4, 5, 8, 10, 11 and 12)."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dgsr.cli.app as cli
from dgsr.core.evaluate import evaluate
from dgsr.core.names import is_plain, quote
from dgsr.core.parser import parse
from tests.cli.dgsr_process import dgsr_command, dgsr_env

pytestmark = pytest.mark.timeout(240, method="thread")

FAST = ["--policy", "random", "--evals", "600", "--time", "30", "--quiet"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 5, 60), "b": rng.uniform(1, 5, 60)})
    df["y"] = 1.7 * df["a"] * df["b"] + 0.3
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


@pytest.fixture
def run_folder(tmp_path, table):
    out = tmp_path / "run"
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 0
    return out


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and modification time (folders by name)."""
    found = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        found[key] = (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else (b"<dir>", 0)
    return found


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dgsr: error:"), err
    return lines[0]


# ---------------------------------------------------------------- item 4: user files are kept
def test_predict_never_writes_over_its_model_or_data(tmp_path, table, run_folder, capsys):
    model = run_folder / "model.pkl"
    before = _snapshot(tmp_path)
    for target in (model, table, tmp_path / "." / "data.csv"):
        assert cli.main(["predict", str(model), str(table), "--out", str(target)]) == 2
        assert "--out" in _error_line(capsys)
    assert _snapshot(tmp_path) == before
    assert cli.main(["predict", str(model), str(table), "--out", str(tmp_path / "pred.csv")]) == 0
    assert "prediction" in pd.read_csv(tmp_path / "pred.csv").columns


def test_fit_refuses_a_folder_holding_a_run_unless_forced(tmp_path, table, run_folder, capsys):
    before = _snapshot(run_folder)
    assert cli.main(["fit", str(table), "--out", str(run_folder), *FAST]) == 2
    line = _error_line(capsys)
    assert "already holds a run" in line and "--force" in line
    assert _snapshot(run_folder) == before
    assert cli.main(["fit", str(table), "--out", str(run_folder), "--seed", "3", "--force", *FAST]) == 0
    assert pickle.loads((run_folder / "model.pkl").read_bytes()).random_state == 3
    # An empty folder, or one holding other files, is used as it is.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert cli.main(["fit", str(table), "--out", str(other), *FAST]) == 0
    assert (other / "notes.txt").read_text() == "mine" and (other / "front.csv").is_file()


def test_fit_never_writes_over_its_data_even_when_forced(tmp_path, table, capsys):
    out = tmp_path / "prev"
    out.mkdir()
    data = out / "front.csv"  # data kept where a run's front.csv would go
    shutil.copy(table, data)
    before = data.read_bytes()
    assert cli.main(["fit", str(data), "--out", str(out), "--force", *FAST]) == 2
    assert "input file" in _error_line(capsys)
    assert data.read_bytes() == before and not (out / "model.pkl").exists()


# ---------------------------------------------------------------- item 5: an interrupted fit says so
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_in_a_real_fit_exits_130_and_writes_the_best_so_far(tmp_path, table):
    import signal

    out = tmp_path / "run"
    # A test runner started in the background has SIGINT ignored, and a child inherits that (POSIX:
    # background jobs do not get the terminal's Ctrl-C); the child gets the default back, as a
    # command typed at a terminal has it.
    proc = subprocess.Popen([*dgsr_command(), "fit", str(table), "--out", str(out), "--policy", "random",
                             "--evals", "50000000", "--time", "120"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dgsr_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    seen = b""
    while b"evals" not in seen:  # the progress line: the search is running
        chunk = proc.stderr.read(1)
        assert chunk, seen
        seen += chunk
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert b"Traceback" not in stderr
    assert b"interrupted" in stdout.strip().splitlines()[-1]
    front = pd.read_csv(out / "front.csv")
    assert set(front["stop_reason"]) == {"interrupted"} and front["selected"].sum() == 1
    assert pickle.loads((out / "model.pkl").read_bytes()).stop_reason_ == "interrupted"


# ---------------------------------------------------------------- item 8: advice the CLI can follow
def test_tiny_data_advice_names_the_max_size_flag_which_exists(tmp_path, capsys):
    path = tmp_path / "tiny.csv"
    pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6], "y": [2.1, 3.9, 6.2, 8.1, 9.8, 12.2]}).to_csv(path, index=False)
    assert cli.main(["fit", str(path), "--out", str(tmp_path / "r"), *FAST]) == 0
    err = capsys.readouterr().err
    assert "--max-size 6" in err and "max_size" not in err and "equations_" not in err
    assert cli.main(["fit", str(path), "--out", str(tmp_path / "s"), "--max-size", "6", *FAST]) == 0
    assert "--max-size" not in capsys.readouterr().err  # the advice followed: no warning left
    est = pickle.loads((tmp_path / "s" / "model.pkl").read_bytes())
    assert est.max_size == 6 and all(c <= 6 for c in est.equations_["complexity"])


# ---------------------------------------------------------------- item 10: messages that say what is wrong
def test_a_folder_given_as_data_or_model_says_folder(tmp_path, table, run_folder, capsys):
    assert cli.main(["fit", str(tmp_path), *FAST]) == 2
    assert "is a folder, not a data file" in _error_line(capsys)
    assert cli.main(["predict", str(run_folder), str(table)]) == 2
    assert "is a folder, not a model file" in _error_line(capsys)
    assert cli.main(["predict", str(run_folder / "model.pkl"), str(tmp_path)]) == 2
    assert "is a folder, not a data file" in _error_line(capsys)


def test_a_text_file_named_model_pkl_is_not_a_model(tmp_path, table, capsys):
    fake = tmp_path / "model.pkl"
    fake.write_text("I am a text file\n")  # pickle reads "I" as its INT opcode: int() fails on the rest
    assert cli.main(["predict", str(fake), str(table)]) == 2
    line = _error_line(capsys)
    assert "is not a model written by `dgsr fit`" in line and "invalid literal" not in line


def test_a_semicolon_csv_is_read_with_its_separator(tmp_path, table, capsys):
    df = pd.read_csv(table)
    semi = tmp_path / "semi.csv"
    df.to_csv(semi, sep=";", index=False)
    decimal = tmp_path / "decimal.csv"
    df.to_csv(decimal, sep=";", decimal=",", index=False)
    for path, out in ((semi, "r1"), (decimal, "r2")):
        assert cli.main(["fit", str(path), "--out", str(tmp_path / out), *FAST]) == 0, capsys.readouterr().err
        est = pickle.loads((tmp_path / out / "model.pkl").read_bytes())
        assert list(est.feature_names_in_) == ["a", "b"]
        np.testing.assert_allclose(est.predict(df[["a", "b"]]), est.predict(pd.read_csv(table)[["a", "b"]]))


def test_empty_operator_list_is_refused(tmp_path, table, capsys):
    for value in ("", ",", " , "):
        assert cli.main(["fit", str(table), "--operators", value, "--out", str(tmp_path / "r"), *FAST]) == 2
        assert "--operators" in _error_line(capsys)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("flags", "named"), [(["--evals", "0"], "--evals"), (["--time", "-1"], "--time"),
                                              (["--k", "0"], "--k"), (["--max-size", "0"], "--max-size"),
                                              (["--target-r2", "2"], "--target-r2"), (["--seed", "-1"], "--seed"),
                                              (["--jobs", "0"], "--jobs"),
                                              (["--inner-fit-steps", "-1"], "--inner-fit-steps")])
def test_errors_name_the_cli_flags(tmp_path, table, capsys, flags, named):
    fast = [a for a in FAST if a not in ("--evals", "600", "--time", "30")]
    assert cli.main(["fit", str(table), "--out", str(tmp_path / "r"), *fast, *flags]) == 2
    line = _error_line(capsys)
    assert named in line, line
    assert "None" not in line, line
    for parameter in ("max_evaluations", "max_time", "n_samples", "max_size", "target_r2", "random_state", "n_jobs",
                      "inner_fit_steps"):
        assert parameter not in line, line


def test_cli_message_maps_parameters_to_flags():
    from dgsr.cli.fit import cli_message

    assert cli_message("inner_fit_steps must be a non-negative integer, got -1.") == \
        "--inner-fit-steps must be a non-negative integer, got -1."
    assert cli_message("max_evaluations must be a positive integer, got 0.") == \
        "--evals must be a positive integer, got 0."
    assert cli_message("or pass max_size=5 (no more nodes)") == "or pass --max-size 5 (no more nodes)"
    assert cli_message("policy must be 'semantic'") == "--policy must be 'semantic'"
    assert cli_message("the random policy cannot learn") == "the random policy cannot learn"
    assert cli_message("n_jobs must be None, a positive integer or a negative one, got 0.") == \
        "--jobs must be a positive integer or a negative one, got 0."
    assert cli_message("target_r2 must be None or a number <= 1, got 2.") == "--target-r2 must be a number <= 1, got 2."


# ---------------------------------------------------------------- item 11: `| head` is quiet


def test_predict_into_a_closed_pipe_exits_quietly(tmp_path, run_folder):
    rng = np.random.default_rng(2)
    big = tmp_path / "big.csv"
    pd.DataFrame({"a": rng.uniform(1, 5, 30_000), "b": rng.uniform(1, 5, 30_000)}).to_csv(big, index=False)
    proc = subprocess.Popen([*dgsr_command(), "predict", str(run_folder / "model.pkl"), str(big)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dgsr_env())
    first = proc.stdout.readline()  # `| head -1`: read one line, then go away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert float(first) == pytest.approx(float(first))
    assert err == "", err
    assert proc.returncode == 141


# ---------------------------------------------------------------- item 12: the user's names, unquoted
def test_sympy_names_that_never_print_are_plain():
    for name in ("S", "N", "O", "Q"):
        assert is_plain(name) and quote(name) == name
    for name in ("E", "I", "pi", "sin", "a b"):
        assert not is_plain(name)


def test_cli_front_and_front_csv_show_column_names_bare(tmp_path, capsys):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"S": rng.uniform(0.5, 5, 80), "E": rng.uniform(1, 3, 80), "a b": rng.uniform(1, 3, 80)})
    df["v"] = 2.5 * df["S"] / (0.7 + df["S"]) + df["E"]
    path = tmp_path / "mm.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "run"
    assert cli.main(["fit", str(path), "--out", str(out), "--policy", "random", "--evals", "3000",
                     "--time", "60", "--quiet"]) == 0
    printed = capsys.readouterr().out
    front = pd.read_csv(out / "front.csv")
    est = pickle.loads((out / "model.pkl").read_bytes())
    shown = " ".join(front["equation"]) + " ".join(front["expression"])
    assert "`S`" not in printed and "`E`" not in printed and "`S`" not in shown and "`E`" not in shown
    assert any("S" in e for e in front["expression"])
    assert "`S`" not in " ".join(est.equations_["equation"])  # Python's front: S is plain there too
    X = df[list(est.selected_features_)].to_numpy()
    for text, expr in zip(front["expression"], est.expressions_):
        # The same formula: a subtracted negative constant is shown added (issue 48, item 11), and
        # a function of constants alone (sqrt(3.65)) is shown as its value: never larger.
        back = parse(text, est.selected_features_)
        assert back.size <= expr.size
        np.testing.assert_allclose(evaluate(back, X), evaluate(expr, X), rtol=1e-12)
    for text in front["equation"]:
        parse(text, est.selected_features_)  # reads back with the plain names


def test_brackets_in_column_names_are_shown_not_read_as_markup(tmp_path, table, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich's width: no row wrapped
    df = pd.read_csv(table).rename(columns={"a": "m [kg]", "y": "F [N]"})
    path = tmp_path / "units.csv"
    df.to_csv(path, index=False)
    assert cli.main(["fit", str(path), "--out", str(tmp_path / "r"), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front for F [N]" in printed
    table_rows = [line for line in printed.splitlines() if "│" in line and "F [N] = " in line]
    assert table_rows and any("`m [kg]`" in row for row in table_rows)


def test_equation_for_columns_quotes_only_what_the_formula_also_prints():
    import sympy

    from dgsr.core.display import equation_text_for_columns, format_for_columns

    S, col_pi, E = sympy.Symbol("S"), sympy.Symbol("pi"), sympy.Symbol("E")
    assert equation_text_for_columns(2 * S / (S + 1.5)) == "2*S/(S + 1.5)"
    assert equation_text_for_columns(E * col_pi) == "E*pi"
    text = equation_text_for_columns(col_pi + sympy.pi * S)  # the constant pi is printed: the column is quoted
    assert text == "pi*S + `pi`"
    names = ["S", "E", "sin", "a b", "x1", "pi"]
    expr = parse("x0*sin(x1) + x2/x3 - x4*x5**2")
    plain = format_for_columns(expr, names)
    assert "`a b`" in plain and "`S`" not in plain and "`sin`" not in plain
    assert parse(plain, names) == expr


# ---------------------------------------------------------------- done: every subcommand, as the user runs it
def test_every_subcommand_with_hostile_arguments_in_a_subprocess(tmp_path, table, run_folder):
    """One line on stderr, no traceback, the documented exit status (2: a usage, file or data
    error), no file changed in the folder and no folder left behind (issue 48, item 12)."""
    model = run_folder / "model.pkl"
    text_model = tmp_path / "fake.pkl"
    text_model.write_text("not a pickle\n")
    mine = tmp_path / "mine.csv"
    mine.write_text("the user's own file\n")
    odd = {"dup.csv": "a,a,y\n1,2,3\n4,5,6\n", "nohead.csv": "1,2,3\n4,5,6\n7,8,9\n",
           "index.csv": ",a,y\n0,1,2\n1,3,4\n", "text_y.csv": "a,y\n1,x\n2,y\n3,z\n"}
    for name, text in odd.items():
        (tmp_path / name).write_text(text)
    new = str(tmp_path / "new")  # a folder that must not be made
    cases = [
        ["fit", str(table), "--out", str(run_folder), *FAST],  # a run is there
        ["fit", str(tmp_path), "--operators", ""],
        ["fit", str(table), "--evals", "many"],  # argparse's error, as one line too
        ["no-such-command"],
        ["predict", str(model), str(table), "--out", str(model)],
        ["predict", str(text_model), str(table)],
        ["example", "no-such-example"],
        ["search", str(run_folder), "--out", str(tmp_path / "s")],
        ["data", "sample", "--n", "-1"],
        ["pretrain", "--steps", "-3", "--out", str(tmp_path / "pt")],
        ["bench", "--data", str(tmp_path / "no-such-folder"), "--out", str(tmp_path / "b")],
        # issue 48
        ["fit", str(table), "--out", "", *FAST],  # not the current folder
        ["predict", str(model), str(table), "--out", ""],
        ["fit", str(table), "--out", new, "--target-r2=-inf", *FAST],
        ["fit", str(table), "--out", new, "--max-size", "1000000000", *FAST],
        ["fit", str(tmp_path / "text_y.csv"), "--out", new, *FAST],  # fails after the folder checks
        *(["fit", str(tmp_path / name), "--out", new, *FAST] for name in ("dup.csv", "nohead.csv", "index.csv")),
        ["predict", str(model), str(table), "--index", "99"],
        ["predict", str(model), str(table), "--out", str(mine)],  # not without --force
        ["predict", str(model), str(table), "--out", str(run_folder)],  # a folder
    ]
    before = _snapshot(tmp_path)
    for argv in cases:
        proc = subprocess.run([*dgsr_command(), *argv], check=False, capture_output=True, text=True, cwd=tmp_path,
                              env=dgsr_env(), timeout=180)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, (argv, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("dgsr: error:"), (argv, proc.stderr)
        assert _snapshot(tmp_path) == before, argv  # no file changed, no folder made
