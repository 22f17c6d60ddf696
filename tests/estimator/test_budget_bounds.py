"""Absurd budgets are refused with a message naming the parameter (issue 48, items 6 and 7):
``max_evaluations=10**20`` raised an OverflowError (exit 1 in the CLI), ``n_samples=10**7``
ran for minutes past ``max_time``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from dgsr.estimator.input_checks import MAX_EVALUATIONS, MAX_N_SAMPLES
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


def _rows() -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(0).uniform(-2, 2, (100, 2))
    return X, X[:, 0] * X[:, 1] + np.sin(X[:, 0])


@pytest.mark.parametrize("params, name", [
    ({"max_evaluations": 10**20}, "max_evaluations"),
    ({"max_evaluations": MAX_EVALUATIONS + 1}, "max_evaluations"),
    ({"n_samples": 10**7}, "n_samples"),
    ({"n_samples": MAX_N_SAMPLES + 1}, "n_samples"),
])
def test_huge_budgets_are_refused_naming_the_parameter(params, name):
    X, y = _rows()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=rf"^{name} must be at most"):
        SymbolicRegressor(policy="random", max_time=5, random_state=0, **params).fit(X, y)
    assert time.perf_counter() - start < 60  # refused up front, not after a search


@pytest.mark.parametrize("flag, value", [("--evals", "100000000000000000000"), ("--k", "10000000")])
def test_the_cli_refuses_them_as_a_usage_error(tmp_path, flag, value):
    X, y = _rows()
    data = tmp_path / "d.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", "import sys; from dgsr.cli.app import main; sys.exit(main())",
                          "fit", str(data), flag, value, "--time", "5", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=240, check=False)
    assert run.returncode == 2, run.stderr  # README: 2 is a usage error, 1 a bug
    assert f"{flag} must be at most" in run.stderr and "Traceback" not in run.stderr


def test_the_largest_n_samples_keeps_the_time_limit():
    X, y = _rows()
    SymbolicRegressor(policy="random", max_evaluations=300, max_time=None, random_state=0).fit(X, y)  # warm
    start = time.perf_counter()
    est = SymbolicRegressor(policy="random", n_samples=MAX_N_SAMPLES, max_time=2, max_evaluations=None,
                            random_state=0).fit(X, y)
    assert time.perf_counter() - start < 2 + 10  # generous: one expansion of 1,024 children is the step
    assert est.stop_reason_ == "time"
