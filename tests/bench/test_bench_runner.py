"""dgsr.bench.runner: process isolation, failures, resume, and the CLI, on a tiny generated suite.

The fake methods below are registered at import time, so the spawned worker processes, which
re-import this module by name, find them too.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
import sympy

from dgsr.bench.cli import add_subparsers, main
from dgsr.bench.methods import MethodResult, register_method
from dgsr.bench.runner import RESULTS_FILE, plan_runs, read_rows, run_benchmark
from tests.bench.test_bench_datasets import make_data_dir


def fake_least_squares(split, budget):
    """Linear least squares: exact on the fixture's `2*a + 3*b + 1`, so that one is a symbolic solution."""
    A = np.column_stack([split.X_train.to_numpy(), np.ones(len(split.y_train))])
    coef, *_ = np.linalg.lstsq(A, split.y_train, rcond=None)
    names = list(split.X_train.columns)
    model = sum(sympy.Float(c) * sympy.Symbol(v) for c, v in zip(coef, names)) + sympy.Float(coef[-1])
    pred = np.column_stack([split.X_test.to_numpy(), np.ones(len(split.X_test))]) @ coef
    return MethodResult(pred, model, n_evaluations=1.0, curve=[(1.0, 0.5), (10.0, 0.9)])


def fake_rewritten(split, budget):
    """Least squares, shown as SymPy cannot prove it: ``b*x**2/sqrt(x**2)`` is ``b*x`` only where
    ``x > 0``; the fitted form is the plain one."""
    fitted = fake_least_squares(split, budget)
    x = sympy.Symbol("x3")
    shown = fitted.model.subs(x, x**2 / sympy.sqrt(x**2))
    return MethodResult(fitted.predictions, shown, fitted_model=fitted.model)


def fake_rewritten_alone(split, budget):
    """The same shown form, without the fitted one."""
    result = fake_rewritten(split, budget)
    return MethodResult(result.predictions, result.model)


def fake_raise(split, budget):
    raise ValueError("boom")


def fake_hang(split, budget):
    time.sleep(10_000)


def fake_crash(split, budget):
    os._exit(3)


def fake_nan(split, budget):
    return MethodResult(np.full(len(split.X_test), np.nan))


class _SlowToSimplify:
    """A model that prints fine but never finishes converting to SymPy (stands in for a huge model)."""

    def __str__(self) -> str:
        return "slow"

    def _sympy_(self):
        time.sleep(10_000)


def fake_slow_post(split, budget):
    return MethodResult(np.full(len(split.X_test), float(np.mean(split.y_train))), _SlowToSimplify())


for _name, _fn in [("fake-ok", fake_least_squares), ("fake-rewritten", fake_rewritten),
                   ("fake-rewritten-alone", fake_rewritten_alone), ("fake-raise", fake_raise), ("fake-hang", fake_hang),
                   ("fake-crash", fake_crash), ("fake-nan", fake_nan), ("fake-slow-post", fake_slow_post)]:
    register_method(_name, _fn)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return make_data_dir(tmp_path)


@pytest.mark.timeout(60)
def test_rows_appended_then_resumed(tmp_path, data_dir):
    specs = plan_runs(data_dir=data_dir, suites=["feynman"], methods=["fake-ok"], seeds=[0], time_s=2)
    assert [s.dataset for s in specs] == ["feynman_clash", "feynman_lin"]
    out = tmp_path / "results"
    rows = run_benchmark(specs, out, jobs=2, progress=False)
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    stored = read_rows(out / RESULTS_FILE)
    assert len(stored) == 2
    by_name = {r["dataset"]: r for r in stored}
    lin = by_name["feynman_lin"]
    assert lin["r2_test"] == pytest.approx(1.0) and lin["solution"] is True
    assert lin["r2_shown"] == pytest.approx(lin["r2_test"])  # the shown formula, evaluated on the test rows
    assert lin["size"] == 8  # [+, *, 2, a, *, 3, b, 1]
    assert lin["n_train"] == 7500 and lin["n_test"] == 2500
    assert by_name["feynman_clash"]["solution"] is False
    # second invocation: everything is already there
    assert run_benchmark(specs, out, jobs=2, progress=False) == []
    assert len(read_rows(out / RESULTS_FILE)) == 2


@pytest.mark.timeout(150)
def test_failures_are_recorded_and_the_run_goes_on(tmp_path, data_dir):
    specs = plan_runs(data_dir=data_dir, suites=["blackbox"], seeds=[0], time_s=1,
                      methods=["fake-hang", "fake-slow-post", "fake-raise", "fake-crash", "fake-nan", "fake-ok"])
    start = time.monotonic()
    # The hard limit leaves a spawned worker time to import numpy/SymPy on a busy 2-core machine.
    rows = run_benchmark(specs, tmp_path / "out", jobs=2, hard_limit=12, progress=False)
    assert time.monotonic() - start < 120
    status = {r["method"]: r for r in rows}
    assert status["fake-hang"]["status"] == "timeout"
    assert status["fake-raise"]["status"] == "error" and "boom" in status["fake-raise"]["error"]
    assert status["fake-crash"]["status"] == "crash"
    assert status["fake-nan"]["status"] == "invalid" and status["fake-nan"]["r2_test"] is None
    assert status["fake-ok"]["status"] == "ok" and status["fake-ok"]["r2_test"] == pytest.approx(1.0)
    # killed while simplifying: the scored row is kept, marked as cut short
    slow = status["fake-slow-post"]
    # Either the hard limit kills it or post-processing's own time cap gives up first (a race
    # that depends on how fast the worker started); both keep the scored row.
    assert slow["status"] == "ok" and slow["r2_test"] is not None
    assert slow["post"].startswith("killed") or "time cap" in slow["post"], slow["post"]
    assert slow["size"] is None and slow["model"] == "slow"
    assert len(read_rows(tmp_path / "out" / RESULTS_FILE)) == 6
    # --retry-failed runs only the failures again
    again = run_benchmark([s for s in specs if s.method in ("fake-raise", "fake-ok")], tmp_path / "out",
                          jobs=2, retry_failed=True, progress=False)
    assert [r["method"] for r in again] == ["fake-raise"]


@pytest.mark.timeout(60)
def test_cli_run_and_report(tmp_path, data_dir, capsys):
    out = tmp_path / "res"
    code = main(["--data", str(data_dir), "--suite", "blackbox,strogatz", "--methods", "linear",
                 "--time", "1", "--seeds", "1", "--out", str(out), "--quiet"])
    assert code == 0
    rows = read_rows(out / RESULTS_FILE)
    assert sorted(r["dataset"] for r in rows) == ["bb_in", "strogatz_toy"]
    assert (out / "report.md").is_file() and (out / "fig3_pareto.png").is_file()
    assert main(["report", str(out)]) == 0
    assert main(["--data", str(data_dir), "--suite", "feynman", "--methods", "linear", "--seeds", "0,3",
                 "--out", str(out), "--dry-run"]) == 0
    assert "4 runs" in capsys.readouterr().out


def test_add_subparsers_passes_arguments_through():
    parser = argparse.ArgumentParser(prog="dgsr")
    add_subparsers(parser.add_subparsers(dest="command"))
    ns = parser.parse_args(["bench", "--suite", "feynman", "--quick"])
    assert ns.command == "bench" and ns.bench_args == ["--suite", "feynman", "--quick"]
    ns = parser.parse_args(["bench", "report", "results/"])
    assert ns.bench_args == ["report", "results/"] and callable(ns.func)


def test_results_file_is_json_lines(tmp_path):
    (tmp_path / RESULTS_FILE).write_text(json.dumps({"method": "m"}) + "\n" + '{"torn')
    assert read_rows(tmp_path / RESULTS_FILE) == [{"method": "m"}]


@pytest.mark.timeout(120)
def test_cli_classic_suite_checks_solutions_and_reports_them(tmp_path, data_dir):
    out = tmp_path / "classic"
    code = main(["--data", str(data_dir), "--suite", "classic", "--datasets", "korns_1,nguyen_8",
                 "--methods", "fake-ok", "--time", "1", "--seeds", "1", "--out", str(out), "--quiet"])
    assert code == 0
    rows = {r["dataset"]: r for r in read_rows(out / RESULTS_FILE)}
    assert set(rows) == {"korns_1", "nguyen_8"} and all(r["suite"] == "classic" for r in rows.values())
    # least squares is the law on korns_1 (1.57 + 24.3*x3) and not on nguyen_8 (sqrt(x))
    assert rows["korns_1"]["r2_test"] > 0.999999 and rows["korns_1"]["solution"] is True
    assert rows["nguyen_8"]["solution"] is False
    report = (out / "report.md").read_text()
    assert "## Classic GP laws" in report and "| fake-ok | 50.0 |" in report


@pytest.mark.timeout(90)
def test_a_shown_form_sympy_cannot_prove_is_checked_as_fitted(tmp_path, data_dir):
    out = tmp_path / "rewritten"
    code = main(["--data", str(data_dir), "--suite", "classic", "--datasets", "korns_1",
                 "--methods", "fake-ok,fake-rewritten,fake-rewritten-alone", "--time", "1", "--seeds", "1",
                 "--out", str(out), "--quiet"])
    assert code == 0
    rows = {r["method"]: r for r in read_rows(out / RESULTS_FILE)}
    assert "sqrt" in rows["fake-rewritten"]["model"]  # the shown form is the rewritten one
    assert rows["fake-rewritten"]["solution"] is True and rows["fake-rewritten"]["solution_form"] == "fitted"
    assert rows["fake-rewritten-alone"]["solution"] is False
    assert rows["fake-ok"]["solution"] is True and rows["fake-ok"]["solution_form"] == "shown"
    report = (out / "report.md").read_text()
    section = report.split("## Exact on the fitted form")[1]
    assert "fake-rewritten: 1" in section and "| fake-rewritten | korns_1 |" in section
    assert "fake-ok" not in section
