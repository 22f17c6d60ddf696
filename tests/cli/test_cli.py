"""The ``dgsr`` command line, end to end in a temporary folder with a tiny budget."""

from __future__ import annotations

import math
import pickle
import sys
import types

import numpy as np
import pandas as pd
import pytest

import dgsr.cli.app as cli
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.examples import EXAMPLES, generate

pytestmark = pytest.mark.timeout(120, method="thread")

FAST = ["--policy", "random", "--evals", "400", "--time", "30", "--quiet"]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"q": rng.uniform(1, 5, 150), "C": rng.uniform(1, 5, 150)})
    df["V"] = df["q"] / df["C"]
    path = tmp_path / "cap.csv"
    df.to_csv(path, index=False)
    return path, df


def test_fit_writes_front_and_model_then_predict(tmp_path, table, capsys):
    path, df = table
    out = tmp_path / "run"
    assert cli.main(["fit", str(path), "--out", str(out), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front for V" in printed and "→" in printed and "selected" in printed

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (out / "front.png").exists()
    else:
        assert (out / "front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    front = pd.read_csv(out / "front.csv")
    assert {"complexity", "loss", "r2", "score", "equation", "selected", "expression"} <= set(front.columns)
    assert front["selected"].sum() == 1
    est = pickle.loads((out / "model.pkl").read_bytes())
    assert isinstance(est, SymbolicRegressor) and list(est.feature_names_in_) == ["q", "C"]
    # The selected equation printed is the one the pickled model predicts with.
    assert front.loc[front["selected"], "equation"].item() == est.equations_["equation"].iloc[est.best_index_]

    new = tmp_path / "new.tsv"
    df.iloc[:5][["C", "q"]].to_csv(new, sep="\t", index=False)  # other order, TSV: columns matched by name
    preds = tmp_path / "preds.csv"
    assert cli.main(["predict", str(out / "model.pkl"), str(new), "--out", str(preds)]) == 0
    got = pd.read_csv(preds)
    np.testing.assert_allclose(got["prediction"], est.predict(df.iloc[:5][["q", "C"]]))

    capsys.readouterr()
    assert cli.main(["predict", str(out / "model.pkl"), str(new)]) == 0
    lines = capsys.readouterr().out.split()
    np.testing.assert_allclose([float(v) for v in lines], got["prediction"])


def test_fit_target_option_and_progress(tmp_path, table, capsys):
    path, _ = table
    # Target q from V and C; progress is on (no --quiet) and goes to stderr.
    args = ["fit", str(path), "--target", "q", "--out", str(tmp_path / "r"), "--policy", "random", "--evals", "300"]
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    assert "Pareto front for q" in captured.out
    assert "evals" in captured.err
    est = pickle.loads((tmp_path / "r" / "model.pkl").read_bytes())
    assert list(est.feature_names_in_) == ["C", "V"]
    assert est.model_selection == "cv"  # the estimator's default
    args += ["--selection", "accuracy", "--quiet", "--out", str(tmp_path / "a")]
    assert cli.main(args) == 0
    est = pickle.loads((tmp_path / "a" / "model.pkl").read_bytes())
    assert est.model_selection == "accuracy" and est.best_index_ == len(est.equations_) - 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit", "missing.csv"], "file not found: missing.csv"),
        (["fit"], "give either a data file or --example"),
        (["fit", "--example", "nope"], "no bundled example 'nope'"),
        (["example", "nope"], "no bundled example 'nope'"),
        (["predict", "nomodel.pkl", "x.csv"], "model file not found"),
    ],
)
def test_friendly_errors(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("dgsr: error:") and message in err and "Traceback" not in err


def test_bad_files_and_columns(tmp_path, table, capsys):
    path, df = table
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert cli.main(["fit", str(empty), *FAST]) == 2
    assert "is empty" in capsys.readouterr().err

    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n")
    assert cli.main(["fit", str(header_only), *FAST]) == 2
    assert "no rows" in capsys.readouterr().err

    assert cli.main(["fit", str(path), "--target", "W", *FAST]) == 2
    assert "target column 'W' not found" in capsys.readouterr().err

    words = tmp_path / "words.csv"
    pd.DataFrame({"name": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]}).to_csv(words, index=False)
    assert cli.main(["fit", str(words), *FAST]) == 2
    assert "Non-numeric column(s) in X: 'name'" in capsys.readouterr().err

    holes = tmp_path / "holes.csv"
    holes.write_text("a,y\n1,2\n,3\n4,5\n")
    assert cli.main(["fit", str(holes), *FAST]) == 2
    assert "X contains NaN" in capsys.readouterr().err

    # predict: a file without the model's columns, and a file that is not a model.
    out = tmp_path / "run"
    assert cli.main(["fit", str(path), "--out", str(out), *FAST]) == 0
    capsys.readouterr()
    only_q = tmp_path / "only_q.csv"
    df[["q"]].to_csv(only_q, index=False)
    assert cli.main(["predict", str(out / "model.pkl"), str(only_q)]) == 2
    assert "lacks the model's input column(s) 'C'" in capsys.readouterr().err
    assert cli.main(["predict", str(path), str(only_q)]) == 2
    assert "is not a model written by `dgsr fit`" in capsys.readouterr().err


def test_example_command(capsys):
    assert cli.main(["example"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXAMPLES)
    assert cli.main(["example", "gravity", "--path"]) == 0
    assert capsys.readouterr().out.strip() == str(EXAMPLES["gravity"].path)
    assert cli.main(["example", "gravity"]) == 0
    shown = capsys.readouterr().out.splitlines()
    ex = EXAMPLES["gravity"]
    header = next(i for i, line in enumerate(shown) if line.split() == [*ex.inputs, ex.target])
    assert len([line for line in shown[header + 1:] if line.strip()]) == 5 + 1  # 5 rows, then the hint


def test_fit_example(tmp_path, capsys):
    assert cli.main(["fit", "--example", "pendulum", "--out", str(tmp_path), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front for T" in printed
    est = pickle.loads((tmp_path / "model.pkl").read_bytes())
    assert list(est.feature_names_in_) == list(EXAMPLES["pendulum"].inputs)
    # The line naming the selection shows the selected row of the written front.
    front = pd.read_csv(tmp_path / "front.csv")
    selection_line = " ".join(printed[printed.index("selected (→"):].split())  # rich may wrap it
    assert " ".join(f"T = {front.loc[front['selected'], 'equation'].item()}".split()) in selection_line


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_bundled_examples_follow_their_laws(name):
    ex = EXAMPLES[name]
    df = pd.read_csv(ex.path)
    assert list(df.columns) == [*ex.inputs, ex.target] and len(df) == ex.rows
    cols = [df[c].to_numpy() for c in ex.inputs]
    if name == "gravity":
        law = 6.674 * cols[0] * cols[1] / cols[2] ** 2
    else:
        law = 2 * math.pi * np.sqrt(cols[0] / cols[1])
    np.testing.assert_allclose(df[ex.target], law, rtol=1e-9)
    _, rows = generate(name)  # the committed file is what the generator writes
    np.testing.assert_allclose(df.to_numpy(), rows, rtol=1e-9)


def test_a_module_in_the_plugin_table_adds_its_command(monkeypatch, capsys):
    plugin = types.ModuleType("dgsr_test_plugin")

    def add_subparser(sub):
        sub.add_parser("hello", help="say hello").set_defaults(func=lambda args: print("hello") or 0)

    plugin.add_subparser = add_subparser
    monkeypatch.setitem(sys.modules, "dgsr_test_plugin", plugin)
    monkeypatch.setitem(cli.PLUGINS, "hello", "dgsr_test_plugin")
    assert cli.main(["hello"]) == 0
    assert capsys.readouterr().out == "hello\n"


def test_plugins_are_optional(monkeypatch):
    monkeypatch.setitem(cli.PLUGINS, "nothing", "dgsr.no_such_module")
    parser = cli.build_parser(["nothing"])
    with pytest.raises(SystemExit):
        parser.parse_args(["nothing"])  # the command is simply absent
    assert cli.main(["example", "--path", "gravity"]) == 0


@pytest.mark.parametrize("steps", [0, 2])
def test_inner_fit_steps_reach_the_estimator(tmp_path, table, steps):
    path, _ = table
    out = tmp_path / f"run{steps}"
    assert cli.main(["fit", str(path), "--out", str(out), "--inner-fit-steps", str(steps), *FAST]) == 0
    assert pickle.loads((out / "model.pkl").read_bytes()).inner_fit_steps == steps


def test_fit_on_tiny_noisy_data_says_which_sizes_it_chose_among(tmp_path, capsys):
    # 40 noisy rows of y = 3*x0 (the data of tests/estimator/test_search_cv.py, seed 3), where
    # the folds' larger formulas predict worse: the CLI names the limit the choice respected.
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=40), rng.integers(80, 149, size=40).astype(float), rng.uniform(1, 5, size=40)])
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"] = 3.0 * X[:, 0] + rng.normal(scale=2.0, size=40)
    path = tmp_path / "tiny.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "run"
    assert cli.main(["fit", str(path), "--out", str(out), "--evals", "20000", "--time", "60", "--seed", "3",
                     "--quiet"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "Only 40 rows" in captured.err  # the tiny-data warning the check goes with
    est = pickle.loads((out / "model.pkl").read_bytes())
    assert est.size_limit_ is not None
    assert f"chosen among complexity <= {est.size_limit_}" in printed
    assert est.equations_["complexity"].iloc[est.best_index_] <= est.size_limit_
