"""Progress, text display and plots (issue 12, items 6 and 7): a live progress bar, a front that
reads in 80 columns with the equation first, one number format, and an honest Pareto plot."""

from __future__ import annotations

import io
import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sympy
from rich.console import Console

import dgsr.cli.app as cli
from dgsr.cli.tables import print_front
from dgsr.core.display import equation_latex, equation_text, format_front, format_number
from dgsr.estimator.progress import ProgressLine, budget_fraction
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.search.mcts import SearchProgress

pytestmark = pytest.mark.timeout(120, method="thread")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gravity():
    """An exact law with a large constant (1197) and a long-named variable; loss ~1e-30 at the end."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"temperature": rng.uniform(1, 3, 200), "pressure": rng.uniform(1, 3, 200)})
    y = pd.Series(1197.0 * X["temperature"] * X["pressure"] + np.sin(X["temperature"]), name="energy")
    # The law has no inner constants; inner fits would only move the random search elsewhere.
    est = SymbolicRegressor(policy="random", max_evaluations=5000, max_time=None, random_state=0,
                            inner_fit_steps=0).fit(X, y)
    return est, X, y


# ------------------------------------------------------------------ numbers
@pytest.mark.parametrize("value,text", [(1197.0, "1197"), (6.674e-11, "6.674e-11"), (0.5, "0.5"),
                                        (-3.14159, "-3.142"), (-0.0, "0"), (123456.0, "1.235e5"),
                                        (4.93, "4.93")])
def test_format_number_has_4_significant_digits_and_no_bare_point(value, text):
    assert format_number(value) == text


def test_equation_text_and_latex_never_show_a_bare_trailing_point():
    x = sympy.Symbol("x")
    expr = sympy.Float(1197.0, 4) * x + sympy.Float(6.674e-11) * x**2 + sympy.Float(4.93021)
    text = equation_text(expr)
    assert "1197*x" in text and "6.674e-11" in text and "4.930" not in text and "4.93" in text
    assert not re.search(r"\d\.(?!\d)", text)  # no "1197." nor "1197.0"-style leftovers
    latex = equation_latex(expr)
    assert r"6.674 \cdot 10^{-11}" in latex and "1197 x" in latex and "1197." not in latex


def test_estimator_text_uses_4_digits_everywhere(gravity):
    est, _, _ = gravity
    for text in [*est.equations_["equation"], est.latex()]:
        assert not re.search(r"\d\.(?!\d)", text), text
        for number in re.findall(r"\d+\.\d+", text):
            assert len(number.replace(".", "").lstrip("0")) <= 4, text
    assert "1197" in est.equations_["equation"].iloc[est.best_index_]
    # sympy(precision=...) rounds the SymPy expression itself; None keeps full precision.
    full = est.sympy()
    three = est.sympy(precision=3)
    # A 3-digit SymPy Float prints at most 3 significant digits (its binary value need not be
    # a short decimal: 5.04e-14 is 5.0397...e-14 at 3-digit precision).
    assert all(len(str(f).lstrip("-").split("e")[0].replace(".", "").lstrip("0").rstrip("0")) <= 3
               for f in three.atoms(sympy.Float))
    assert any(f not in three.atoms(sympy.Float) for f in full.atoms(sympy.Float)) or not full.atoms(sympy.Float)


# ------------------------------------------------------------------ front table
def test_print_equations_fits_80_columns_equation_first(gravity, monkeypatch):
    est, _, _ = gravity
    monkeypatch.setenv("COLUMNS", "80")
    text = str(est.equations_)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    header = lines[0].split()
    assert header == ["equation", "complexity", "loss", "r2", "score"]
    assert f"→{est.best_index_}" in text  # the selected row is marked
    # Every equation is shown in full (wrapped, not cut): its words appear in order.
    body = " ".join(lines[1:])
    for eq in est.equations_["equation"]:
        for token in eq.split():
            assert token in body


def test_format_front_wraps_a_long_equation():
    long_eq = " + ".join(f"{i + 1.5:.4g}*sin(x{i})" for i in range(12))
    table = pd.DataFrame({"complexity": [1, 40], "loss": [2.0, 1e-3], "r2": [0.0, 0.999], "score": [0.0, 0.3],
                          "equation": ["2.1", long_eq]})
    lines = format_front(table, width=80, selected=1).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) > 3  # the long equation took several lines
    first, *rest = lines[2:]
    numbers = re.search(r"\s+40\s+0\.001\s+0\.999000\s+0\.300$", first)
    assert numbers and first.startswith("→1")  # numbers on the row's first line, the mark on it
    parts = [first[2:numbers.start()].strip()] + [line.strip() for line in rest]
    assert " ".join(parts) == long_eq  # wrapped, nothing cut


def test_readme_names_the_real_columns(gravity):
    est, _, _ = gravity
    readme = (ROOT / "README.md").read_text()
    line = next(line for line in readme.splitlines() if "print(est.equations_)" in line)
    named = re.findall(r"[a-z_0-9]+", line.split("#", 1)[1].split(":", 1)[1])
    assert named and set(named) <= set(est.equations_.columns)


def test_cli_front_table_fits_80_columns_with_real_headers(gravity, capsys, monkeypatch):
    est, _, _ = gravity
    monkeypatch.setenv("COLUMNS", "80")
    print_front(est, "energy")
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    header = next(line for line in out.splitlines() if "equation" in line)
    assert [h for h in re.split(r"[\s┃│]+", header) if h] == ["equation", "complexity", "loss", "r2", "score"]


# ------------------------------------------------------------------ progress
def test_progress_bar_on_a_terminal_shows_bar_time_evals_r2_size():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with ProgressLine(max_time=60, max_evaluations=500_000, console=console) as p:
        p.update(SearchProgress(30.0, 100_000, 0.998765, 9, 3), force=True)
    out = buf.getvalue()
    assert "━" in out and " 50%" in out  # half the time budget is spent (it binds before evaluations)
    assert "30.0/60 s" in out and "100,000/500,000 evals" in out and "best R² 0.99877 (size 9)" in out


def test_progress_in_a_log_prints_lines_as_it_goes():
    buf = io.StringIO()
    console = Console(file=buf, width=200)  # not a terminal
    with ProgressLine(max_time=None, max_evaluations=1000, console=console, log_interval=0.0) as p:
        for i in range(3):
            p.update(SearchProgress(float(i), 250.0 * (i + 1), 0.5, 3, 1), force=True)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 4  # three updates and the final line
    assert "[####" in lines[0] and " 25%" in lines[0] and " 75%" in lines[2]


def test_budget_fraction_takes_the_further_limit():
    p = SearchProgress(elapsed=6.0, evaluations=900.0, best_r2=0.0, best_size=1, trials=1)
    assert budget_fraction(p, 60, 1000) == pytest.approx(0.9)
    assert budget_fraction(p, 10, 10_000) == pytest.approx(0.6)
    assert budget_fraction(p, None, None) == 0.0
    assert budget_fraction(p, 1, None) == 1.0


def test_verbose_fit_draws_progress_on_stderr(capsys):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 2, (100, 2))
    SymbolicRegressor(policy="random", max_evaluations=300, max_time=None, random_state=0, verbose=True).fit(
        X, X[:, 0] * X[:, 1])
    err = capsys.readouterr().err
    assert "%" in err and "evals" in err and "best R²" in err and "size" in err


# ------------------------------------------------------------------ plots
def test_plot_front_is_honest_readable_and_keeps_the_target_name(gravity):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est, _, _ = gravity
    est = pickle.loads(pickle.dumps(est))  # the target's name survives pickling
    assert est.target_name_ == "energy"
    ax = est.plot_front()
    fig = ax.figure
    fig.canvas.draw()
    losses = est.equations_["loss"].to_numpy()
    assert losses.min() < 1e-12 * losses.max()  # the exact fit is below the floor...
    assert "drawn at" in ax.get_ylabel()  # ...and the axis says where it is drawn
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    selected = next(t for t in texts if t.startswith("selected"))
    # The true loss of the selected row (as the table says) and the formula, with the target's name.
    assert format_number(losses[est.best_index_]) in selected
    assert "energy = " in selected and "energy" in ax.get_title()
    # Integer ticks for sizes.
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    # The label box covers none of the front's points.
    box = legend.get_window_extent()
    sizes = est.equations_["complexity"].to_numpy(dtype=float)
    drawn = np.maximum(losses, float(re.search(r"below (\S+) drawn", ax.get_ylabel()).group(1)))
    for point in ax.transData.transform(np.column_stack([sizes, drawn])):
        assert not box.contains(*point)
    assert not ax.texts  # no free-floating annotation crossing the line
    plt.close(fig)


def test_cli_says_how_to_get_the_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    import sys

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 2, 50)})
    df["b"] = 2 * df["a"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    assert cli.main(["fit", str(path), "--policy", "random", "--evals", "200", "--quiet",
                     "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "pip install matplotlib" in out
    assert not (tmp_path / "run" / "front.png").exists()


def test_matplotlib_is_a_normal_dependency():
    tomllib = pytest.importorskip("tomllib")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("matplotlib") for d in deps)
