"""A Ctrl-C during a fit with ``n_jobs=2`` keeps what the running units found (issue 48, rough
item): it reported "0 evaluations" and kept only the linear model, where ``n_jobs=1`` kept the law."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(300, method="thread"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, sends signals")]

_SCRIPT = """
    import json, warnings
    import numpy as np
    from dgsr import SymbolicRegressor
    from dgsr.search import parallel
    parallel.UNIT_EVALUATIONS = 10**7  # units that run far past the Ctrl-C, as on a real budget
    X = np.random.default_rng(0).uniform(-2, 2, (300, 2))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SymbolicRegressor(policy="random", n_jobs=2, max_time=200, max_evaluations=2 * 10**7,
                                random_state=0).fit(X, y)
    print(json.dumps({"evaluations": est.n_evaluations_, "reason": est.stop_reason_,
                      "r2": float(est.equations_["r2"].max()), "warnings": [str(w.message) for w in caught]}))
"""


def _default_sigint() -> None:
    # A runner started in the background by a shell ignores SIGINT, and so would the fit (Python
    # keeps an ignored SIGINT ignored): give it the disposition of a program run in a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _handles_sigusr1(pid: int) -> bool:
    try:
        caught = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) >> (signal.SIGUSR1 - 1) & 1)


def _workers(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            try:
                if b"LokyProcess" in Path(f"/proc/{child}/cmdline").read_bytes():
                    out.append(int(child))
            except OSError:
                pass
    return out


@pytest.mark.parametrize("to_group", [False, True], ids=["kill -INT parent", "terminal Ctrl-C (process group)"])
def test_ctrl_c_keeps_what_the_running_units_found(tmp_path, to_group):
    script = tmp_path / "fit.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_default_sigint)  # noqa: PLW1509 - no threads here
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_workers(proc.pid)) < 2:
            time.sleep(0.2)
        workers = _workers(proc.pid)
        assert len(workers) >= 2, "the fit did not start its workers"
        # Started workers handle SIGUSR1 (their stop signal); on busy cores that can take 20 s.
        while time.monotonic() < deadline and not all(_handles_sigusr1(w) for w in workers):
            time.sleep(0.2)
        time.sleep(8.0)  # they load the kernels and search for a few seconds
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["reason"] == "interrupted"
    assert result["evaluations"] > 1000  # both units' work so far (before: 0)
    assert result["r2"] > 0.5  # more than the linear model (R² about 0.2 here)
