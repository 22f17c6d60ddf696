"""dgsr.bench.report: Pareto ranks, aggregation and the written report, on hand-made rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dgsr.bench.report import learning_curves, load_results, pareto_ranks, summarize, write_report
from dgsr.bench.runner import RESULTS_FILE


def test_pareto_ranks_by_hand():
    #            A          B         C          D          E (= A)    F (NaN)
    accuracy = [0.90,      0.80,     0.85,      0.70,      0.90,      math.nan]
    size = [10.0,          5.0,      20.0,      30.0,      10.0,      3.0]
    # A, E and B: nobody is at least as accurate and at least as small while strictly better.
    # C is dominated by A; once A, B, E are removed nothing dominates C. D is dominated by C.
    assert pareto_ranks(accuracy, size) == [1, 1, 2, 3, 1, 0]
    assert pareto_ranks([], []) == []


def _row(method, suite, dataset, seed, r2, size, solution=None, status="ok", curve=None):
    return {"method": method, "suite": suite, "dataset": dataset, "seed": seed, "noise": 0.0, "time": 2.0,
            "evals": None, "status": status, "r2_test": r2, "size": size, "solution": solution, "curve": curve}


def _rows():
    rows = []
    # method "a": black-box per-dataset means 0.5, 0.7, 0.9 -> median 0.7; sizes 10, 20, 30 -> median 20
    for ds, (r0, r1), s in [("b1", (0.4, 0.6), 10), ("b2", (0.6, 0.8), 20), ("b3", (0.9, 0.9), 30)]:
        rows += [_row("a", "blackbox", ds, 0, r0, s, curve=[[1, 0.1], [100, 0.5]]),
                 _row("a", "blackbox", ds, 1, r1, s, curve=[[10, 0.3], [100, 0.3]])]
    # Feynman for "a": f1 solved in both seeds (exact once), f2 R² 0.995 in seed 0 and failed in seed 1
    rows += [_row("a", "feynman", "f1", 0, 0.9999, 5, True), _row("a", "feynman", "f1", 1, 0.9995, 7, False),
             _row("a", "feynman", "f2", 0, 0.995, 9, False), _row("a", "feynman", "f2", 1, None, None, None, "timeout")]
    # method "b": better black-box accuracy but bigger; no Feynman solved
    for ds in ("b1", "b2", "b3"):
        rows.append(_row("b", "blackbox", ds, 0, 0.95, 60))
    rows += [_row("b", "feynman", "f1", 0, 0.5, 40, False), _row("b", "feynman", "f2", 0, 0.2, 50, False)]
    return rows


def _write(tmp_path: Path, rows) -> Path:
    (tmp_path / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


@pytest.mark.timeout(30)
def test_aggregation_by_hand(tmp_path):
    summary = summarize(load_results(_write(tmp_path, _rows()))).set_index("method")
    a, b = summary.loc["a"], summary.loc["b"]
    assert a["runs"] == 10 and a["failures"] == 1
    assert a["bb_median_r2"] == pytest.approx(0.7) and a["bb_median_size"] == pytest.approx(20)
    # R² >= 0.99: f1 -> 2/2, f2 -> 1/2 (the timeout counts as unsolved) => mean 0.75
    assert a["feynman_r2_099"] == pytest.approx(75.0)
    # R² > 0.999: f1 -> 2/2 (0.9999, 0.9995), f2 -> 0 => 50 %; exact: f1 -> 1/2, f2 -> 0 => 25 %
    assert a["feynman_r2_0999"] == pytest.approx(50.0) and a["feynman_exact"] == pytest.approx(25.0)
    # sizes: f1 mean 6, f2 mean 9 (failed run left out) => median 7.5
    assert a["feynman_median_size"] == pytest.approx(7.5)
    assert b["bb_median_r2"] == pytest.approx(0.95) and b["feynman_r2_099"] == 0.0


@pytest.mark.timeout(30)
def test_retried_run_replaces_its_failure(tmp_path):
    rows = [_row("a", "blackbox", "b1", 0, None, None, status="error"), _row("a", "blackbox", "b1", 0, 0.8, 3)]
    summary = summarize(load_results(_write(tmp_path, rows)))
    assert summary.loc[0, "runs"] == 1 and summary.loc[0, "failures"] == 0


@pytest.mark.timeout(30)
def test_learning_curves_are_step_functions(tmp_path):
    df = load_results(_write(tmp_path, _rows()))
    grid, curves = learning_curves(df[df["suite"] == "blackbox"], grid_points=3)
    assert list(grid) == pytest.approx([1, 10, 100])
    mean, _, n = curves["a"]
    # at 1: the seed-0 runs (0.1) and the not-yet-started seed-1 runs (0: nothing found yet);
    # at 10: 3 runs at 0.1 and 3 at 0.3; at 100: 0.5 and 0.3
    assert list(n) == [6, 6, 6]
    assert mean == pytest.approx([0.05, 0.2, 0.4])


@pytest.mark.timeout(30)
def test_best_so_far_curve_never_goes_down_when_a_late_run_enters(tmp_path):
    # A run whose first point comes late and low: leaving it out until then made the mean drop.
    rows = [_row("a", "blackbox", "b1", 0, 0.9, 3, curve=[[1, 0.8], [1000, 0.9]]),
            _row("a", "blackbox", "b2", 0, 0.9, 3, curve=[[100, 0.05], [1000, 0.2]])]
    _, curves = learning_curves(load_results(_write(tmp_path, rows)), grid_points=50)
    mean = curves["a"][0]
    finite = mean[np.isfinite(mean)]
    assert len(finite) > 10 and np.all(np.diff(finite) >= 0)


@pytest.mark.timeout(60)
def test_write_report(tmp_path):
    report = write_report(_write(tmp_path, _rows()))
    text = report.read_text()
    assert "| a | 10 | 1 | 0.700 | 20.0 | 1 | 75.0 | 50.0 | 25.0 | 7.5 | 1 |" in text
    assert "timeout" in text
    for name in ("fig3_pareto.png", "fig4_curves.png", "summary.csv", "datasets.csv"):
        assert (tmp_path / name).stat().st_size > 0


def test_the_report_lists_runs_whose_shown_formula_is_not_what_was_fitted(tmp_path):
    rows = _rows()
    rows[0].update(r2_shown=rows[0]["r2_test"], model="x0")  # shown as fitted
    rows[2].update(r2_shown=0.0, model="0.45")  # a peak shown as its baseline
    text = write_report(_write(tmp_path, rows)).read_text()
    section = text.split("## Shown formula differs from the fit")[1]
    assert "In 1 runs" in section and "| a | b2 | 0 | 0.600000 | 0.000000 | 0.45 |" in section
    rows[2]["r2_shown"] = rows[2]["r2_test"]
    assert "Shown formula differs" not in write_report(_write(tmp_path, rows)).read_text()


def test_shown_r2_evaluates_the_shown_formula_on_the_test_rows():
    import pandas as pd

    from dgsr.bench.protocol import Split
    from dgsr.bench.runner import shown_r2

    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.5, 0.1, 0.2, 0.3]})
    y = (3 * X["a"] + X["b"]).to_numpy()
    split = Split(X_train=X, y_train=y, X_test=X, y_test=y)
    assert shown_r2("3*a + b", split) == pytest.approx(1.0)
    assert shown_r2("3*a", split) < 1.0
    assert shown_r2("3*c", split) is None  # a name that is no column: not evaluated
