"""The command line as a user meets it, third hostile round (issue 48, CLI items): a closed pipe,
SIGTERM and Ctrl-C at start-up, columns of a model fitted on an array, output paths, CSV
surprises, a fast ``--version``. Each test runs ``dgsr`` in a fresh process where it can."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import dgsr
import dgsr.cli.app as cli
from tests.cli.dgsr_process import dgsr_command, dgsr_env
from tests.cli.test_cli_issue26 import _snapshot

pytestmark = [pytest.mark.timeout(240, method="thread"),
              pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and pipes")]

FAST = ["--policy", "random", "--evals", "300", "--time", "30", "--quiet"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 5, 40), "b": rng.uniform(1, 5, 40)})
    df["y"] = 1.7 * df["a"] * df["b"] + 0.3
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def _dgsr(*argv: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*dgsr_command(), *argv], check=False, capture_output=True, text=True, cwd=cwd,
                          env=dgsr_env(), timeout=180, **kwargs)


def _one_error_line(proc: subprocess.CompletedProcess, status: int = 2) -> str:
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dgsr: error:") and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def _default_sigint() -> None:
    # A test runner started in the background has SIGINT ignored, and a child inherits that; a
    # command typed at a terminal has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# ---------------------------------------------------------------- item 1: `dgsr fit ... | head -1`
def test_fit_into_a_closed_pipe_writes_every_file_and_exits_141(tmp_path, table):
    out = tmp_path / "run"
    proc = subprocess.Popen([*dgsr_command(), "fit", str(table), "--out", str(out), *FAST],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dgsr_env(), cwd=tmp_path)
    proc.stdout.close()  # the reader is gone before the first line: every write meets a broken pipe
    err = proc.stderr.read().decode()
    proc.wait(timeout=180)
    assert proc.returncode == 141, err
    assert "Traceback" not in err
    for name in ("front.csv", "model.pkl", "front.png"):
        assert (out / name).is_file(), name
    assert "wrote" in err and str(out / "model.pkl") in err  # the last line went where it is still read


# ---------------------------------------------------------------- item 2: columns of an array model
@pytest.fixture
def array_model(tmp_path):
    """A model fitted in Python on a numpy array (no column names: x0, x1), saved as dgsr fit does."""
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(1, 5, 40), rng.uniform(20, 30, 40)])
    est = dgsr.SymbolicRegressor(policy="random", max_evaluations=400, max_time=30, max_size=20, random_state=0,
                                 verbose=False)
    est.fit(X, 2.0 * X[:, 0] + 1.0)
    path = tmp_path / "array_model.pkl"
    path.write_bytes(pickle.dumps(est))
    return path, est, X


def test_predict_takes_an_array_models_columns_by_name(tmp_path, array_model):
    path, est, X = array_model
    expected = est.predict(X)
    assert not np.allclose(expected, est.predict(X[:, ::-1]))  # the order matters to this model
    swapped = tmp_path / "swapped.csv"
    pd.DataFrame({"x1": X[:, 1], "x0": X[:, 0]}).to_csv(swapped, index=False)
    extra = tmp_path / "extra.csv"
    pd.DataFrame({"id": np.arange(len(X)) * 7.0, "x0": X[:, 0], "x1": X[:, 1]}).to_csv(extra, index=False)
    for data in (swapped, extra):
        proc = _dgsr("predict", str(path), str(data), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_allclose([float(v) for v in proc.stdout.split()], expected, rtol=1e-12)


def test_predict_uses_unnamed_columns_in_order_only_when_their_count_is_exact(tmp_path, array_model):
    path, est, X = array_model
    exact = tmp_path / "exact.csv"
    pd.DataFrame({"p": X[:, 0], "q": X[:, 1]}).to_csv(exact, index=False)
    proc = _dgsr("predict", str(path), str(exact), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose([float(v) for v in proc.stdout.split()], est.predict(X), rtol=1e-12)
    assert "'p' as x0" in proc.stderr and "'q' as x1" in proc.stderr  # said which columns were used
    more = tmp_path / "more.csv"
    pd.DataFrame({"id": np.arange(len(X)) * 1.0, "p": X[:, 0], "q": X[:, 1]}).to_csv(more, index=False)
    line = _one_error_line(_dgsr("predict", str(path), str(more), cwd=tmp_path))
    assert "x0, x1" in line and "3 column" in line


def test_predict_help_says_how_columns_are_found():
    text = subprocess.run([*dgsr_command(), "predict", "--help"], check=True, capture_output=True, text=True,
                          env=dgsr_env(), timeout=120).stdout
    assert "by name" in text and "x0" in text


# ---------------------------------------------------------------- item 3: SIGTERM is a first Ctrl-C
def test_sigterm_in_a_real_fit_writes_the_best_so_far_and_exits_143(tmp_path, table):
    out = tmp_path / "run"
    proc = subprocess.Popen([*dgsr_command(), "fit", str(table), "--out", str(out), "--policy", "random",
                             "--evals", "50000000", "--time", "120"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dgsr_env(), cwd=tmp_path)
    seen = b""
    while b"evals" not in seen:  # the progress line: the search is running
        chunk = proc.stderr.read(1)
        assert chunk, seen
        seen += chunk
    proc.send_signal(signal.SIGTERM)  # a batch scheduler's time limit
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, (stdout, stderr)
    assert b"Traceback" not in stderr and b"SIGTERM" in stderr
    last = stdout.decode().strip().splitlines()
    assert "SIGTERM" in last[-1] and "143" in last[-1]
    assert "stopped by SIGTERM" in last[-2] and "stopped by interrupted" not in stdout.decode()
    front = pd.read_csv(out / "front.csv")
    assert set(front["stop_reason"]) == {"interrupted"} and front["selected"].sum() == 1
    assert (out / "model.pkl").is_file() and (out / "front.png").is_file()


def test_the_sigterm_handler_is_scoped_to_the_command(capsys):
    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        assert cli.main(["example", "--path", "gravity"]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_readme_lists_exit_status_143():
    readme = Path(dgsr.__file__).resolve().parents[2] / "README.md"
    assert "143" in readme.read_text()


# ---------------------------------------------------------------- item 4: a signal during start-up
# The CLI's entry point, with a real signal sent to itself as `module` starts to import: the
# user's Ctrl-C while scipy (the estimator's imports) or pandas (the data) loads.
_SIGNAL_AT_IMPORT = """
import os, signal, sys
class Trap:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[2]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        return None
sys.meta_path.insert(0, Trap())
from dgsr.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.parametrize(("sig", "status", "line"), [("SIGINT", 130, "dgsr: interrupted"),
                                                     ("SIGTERM", 143, "dgsr: terminated (SIGTERM)")])
@pytest.mark.parametrize("module", ["scipy", "pandas"])
def test_a_signal_during_start_up_is_one_line(tmp_path, table, sig, status, line, module):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_AT_IMPORT, sig, module, "fit", str(table),
                           "--out", str(out), *FAST], check=False, capture_output=True, text=True, env=dgsr_env(),
                          cwd=tmp_path, timeout=180, preexec_fn=_default_sigint)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.strip() == line
    assert not out.exists()


# ---------------------------------------------------------------- item 5: folders only when writing
def test_a_failed_fit_leaves_no_folder(tmp_path):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": ["x", "y", "z", "w"]}).to_csv(bad, index=False)
    out = tmp_path / "new" / "run"
    _one_error_line(_dgsr("fit", str(bad), "--out", str(out), *FAST, cwd=tmp_path))
    assert not (tmp_path / "new").exists()


def test_an_empty_out_is_refused(tmp_path, table):
    before = _snapshot(tmp_path)
    for command in (["fit", str(table), *FAST], ["predict", str(table), str(table)]):
        line = _one_error_line(_dgsr(*command, "--out", "", cwd=tmp_path))
        assert "--out is empty" in line
    assert _snapshot(tmp_path) == before


# ---------------------------------------------------------------- items 6 and 7: output files
@pytest.fixture
def model(tmp_path, table):
    out = tmp_path / "m"
    assert cli.main(["fit", str(table), "--out", str(out), *FAST]) == 0
    return out / "model.pkl"


def test_predict_refuses_an_existing_out_file_unless_forced(tmp_path, table, model):
    mine = tmp_path / "mine.csv"
    mine.write_text("my own file\n")
    line = _one_error_line(_dgsr("predict", str(model), str(table), "--out", str(mine), cwd=tmp_path))
    assert str(mine) in line and "--force" in line
    assert mine.read_text() == "my own file\n"
    proc = _dgsr("predict", str(model), str(table), "--out", str(mine), "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "prediction" in pd.read_csv(mine).columns


def test_out_that_is_a_folder_names_the_folder(tmp_path, table, model):
    folder = tmp_path / "preds"
    folder.mkdir()
    line = _one_error_line(_dgsr("predict", str(model), str(table), "--out", str(folder), cwd=tmp_path))
    assert str(folder) in line and "folder" in line and ".tmp" not in line and "Errno" not in line
    assert list(folder.iterdir()) == []


def _small_file_limit() -> None:
    import resource

    # A full disk, as the writer meets it: a write that fails (EFBIG here) in the middle of a file.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


def test_a_full_disk_names_the_file_being_written(tmp_path, table, model):
    rng = np.random.default_rng(5)
    big = tmp_path / "big.csv"
    pd.DataFrame({"a": rng.uniform(1, 5, 5000), "b": rng.uniform(1, 5, 5000)}).to_csv(big, index=False)
    out = tmp_path / "pred.csv"
    proc = subprocess.run([*dgsr_command(), "predict", str(model), str(big), "--out", str(out)], check=False,
                          capture_output=True, text=True, env=dgsr_env(), cwd=tmp_path, timeout=180,
                          preexec_fn=_small_file_limit)
    line = _one_error_line(proc)
    assert f"cannot write {out}:" in line and ".tmp" not in line
    assert not out.exists() and not list(tmp_path.glob(".pred.csv.*"))  # no half file, no temporary left


# ---------------------------------------------------------------- item 8: messages name the flag
def test_index_out_of_range_names_the_flag(tmp_path, table, model):
    line = _one_error_line(_dgsr("predict", str(model), str(table), "--index", "99", cwd=tmp_path))
    assert "--index" in line and "equations_" not in line


def test_target_r2_has_one_domain_in_the_api_and_the_cli(tmp_path, table):
    from dgsr.estimator.fit_config import config_from
    from dgsr.estimator.input_checks import validate_params

    validate_params(config_from(dgsr.SymbolicRegressor(target_r2=-5).get_params()))  # any finite value up to 1
    for bad in (-np.inf, np.nan, 1.5):
        with pytest.raises(ValueError, match="finite number <= 1"):
            validate_params(config_from(dgsr.SymbolicRegressor(target_r2=bad).get_params()))
    line = _one_error_line(_dgsr("fit", str(table), "--target-r2=-inf", "--out", str(tmp_path / "r"), *FAST,
                                 cwd=tmp_path))
    assert "--target-r2 must be a finite number <= 1, got -inf" in line
    proc = _dgsr("fit", str(table), "--target-r2=-5", "--out", str(tmp_path / "r"), *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_huge_max_size_is_an_error_before_any_warning(tmp_path, table):
    line = _one_error_line(_dgsr("fit", str(table), "--max-size", "1000000000", "--out", str(tmp_path / "r"),
                                 *FAST, cwd=tmp_path))
    assert "--max-size must be in 1..60" in line
    with pytest.raises(ValueError, match="max_size must be in 1..60"):
        from dgsr.estimator.fit_config import config_from
        from dgsr.estimator.input_checks import validate_params

        validate_params(config_from(dgsr.SymbolicRegressor(max_size=10**9).get_params()))


# ---------------------------------------------------------------- item 9: CSV surprises
@pytest.mark.parametrize(("text", "says"), [
    ("a,a,y\n1,2,3\n4,5,6\n2,1,3\n", "two columns named 'a'"),
    ("1.5,2,3\n4,5,6\n7,8,9\n", "all numbers"),
    (",a,y\n0,1,2\n1,3,4\n2,5,6\n", "has no name"),
])
def test_a_surprising_header_is_refused(tmp_path, text, says):
    path = tmp_path / "odd.csv"
    path.write_text(text)
    line = _one_error_line(_dgsr("fit", str(path), "--out", str(tmp_path / "r"), *FAST, cwd=tmp_path))
    assert says in line and str(path) in line
    assert not (tmp_path / "r").exists()


def test_a_trailing_comma_column_is_dropped_with_a_note(tmp_path, table):
    df = pd.read_csv(table)
    path = tmp_path / "trailing.csv"
    path.write_text("a,b,y,\n" + "".join(f"{r.a},{r.b},{r.y},\n" for r in df.itertuples()))
    out = tmp_path / "r"
    proc = _dgsr("fit", str(path), "--out", str(out), *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ignored column(s) 4" in proc.stderr
    est = pickle.loads((out / "model.pkl").read_bytes())
    assert list(est.feature_names_in_) == ["a", "b"]  # y is the target, not an empty column


# ---------------------------------------------------------------- item 10: python -m dgsr, a fast --version
@pytest.mark.parametrize("flag", ["--version", "--help"])
@pytest.mark.parametrize("entry", [["-m", "dgsr"], ["-c", "import sys; from dgsr.cli import main; sys.exit(main())"]],
                         ids=["python-m", "entry-point"])
def test_version_and_help_import_no_heavy_module(flag, entry):
    proc = subprocess.run([sys.executable, "-X", "importtime", *entry, flag], check=False,
                          capture_output=True, text=True, env=dgsr_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    if flag == "--version":
        assert proc.stdout.strip() == f"dgsr {dgsr.__version__}"
    else:
        assert "fit" in proc.stdout and "predict" in proc.stdout
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    for heavy in ("numba", "sympy", "torch", "scipy", "pandas", "sklearn"):
        assert heavy not in imported, heavy


def test_the_command_list_says_what_each_command_says_of_itself():
    def helps(parser):
        return {a.dest: a.help for a in parser._subparsers._group_actions[0]._choices_actions}

    listed = helps(cli.build_parser([]))
    for name in (*cli.BUILTINS, *cli.PLUGINS):
        full = helps(cli.build_parser([name]))
        if name in full:  # a plug-in that is not installed is absent
            assert listed[name] == full[name], name


# ---------------------------------------------------------------- item 11: how results read
def test_a_constant_models_r2_prints_without_a_minus_sign(capsys):
    import sympy

    from dgsr.cli.tables import print_front

    front = pd.DataFrame({"complexity": [1], "loss": [2.5], "r2": [-2.2e-16], "score": [-0.0],
                          "sympy": [sympy.Float(3.25)]})
    est = SimpleNamespace(equations_=front, best_index_=0, model_selection="best")
    print_front(est, "y")
    printed = capsys.readouterr().out
    assert "0.000000" in printed and "-0.000000" not in printed and "-0.000" not in printed


def test_subtracting_a_negative_constant_reads_as_adding():
    from dgsr.core.display import format_for_columns
    from dgsr.core.parser import parse

    assert format_for_columns(parse("x0 - (-1.0000000000000002)"), ["b"]) == "b + 1.0000000000000002"
    assert format_for_columns(parse("x0 + (-2.5)*x1"), ["b", "c"]) == "b - 2.5*c"
    assert format_for_columns(parse("x0 - (-1.5)*sin(x1)**2"), ["b", "c"]) == "b + 1.5*sin(c)**2"
    # A column whose name holds the pattern is left as it is written.
    assert format_for_columns(parse("x0*x1"), ["a - (-1)", "c"]) == "`a - (-1)`*c"


def test_the_stop_reason_reads_as_words():
    from dgsr.cli.fit import _summary
    from dgsr.cli.targets import Target

    for reason in ("time", "evaluations", "target", "interrupted", "constant_target", "exhausted", "trials"):
        fitted = SimpleNamespace(stop_reason_=reason, n_evaluations_=10.0)
        line = _summary([Target("y", fitted, "front")], ["run/front.csv"], False)[0]
        assert line.startswith("stopped by ") and f"by {reason} " not in line, line
