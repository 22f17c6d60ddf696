"""``n_jobs`` beyond the CPUs is capped, and pool workers die with their parent (issue 48, item 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.search import parallel, unit_runners
from dgsr.search.workers import available_cpus

pytestmark = pytest.mark.timeout(300, method="thread")


def test_n_jobs_above_the_cpus_is_capped_with_a_warning(monkeypatch):
    started: list[int] = []
    real = unit_runners.spawn_pool

    def spy(n_workers, *args, **kwargs):
        started.append(n_workers)
        return real(n_workers, *args, **kwargs)

    monkeypatch.setattr(unit_runners, "spawn_pool", spy)
    monkeypatch.setattr(parallel, "UNIT_EVALUATIONS", 500)  # 4 units of a 2,000-evaluation search
    X = np.random.default_rng(0).uniform(-2, 2, (100, 2))
    y = X[:, 0] * X[:, 1]
    kw = {"policy": "random", "max_evaluations": 2000, "max_time": None, "random_state": 0}
    with pytest.warns(UserWarning, match=r"n_jobs=1000 is more than the \d+ CPUs") as caught:
        capped = SymbolicRegressor(n_jobs=1000, **kw).fit(X, y)
    assert any(w.filename == __file__ for w in caught)  # the warning points at the caller's line
    assert started and max(started) <= min(available_cpus(), 4)
    one = SymbolicRegressor(n_jobs=1, **kw).fit(X, y)
    assert [e.expression.key() for e in capped._front] == [e.expression.key() for e in one._front]


def test_no_more_processes_than_units_or_cpus():
    assert parallel.local_processes(1000, 60_000) == min(available_cpus(), 3)
    assert parallel.local_processes(1000, None) == available_cpus()
    assert parallel.local_processes(2, 10) == 1


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        out |= {int(c) for c in task.read_text().split()}
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has exited (nobody reaped it yet)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from dgsr import SymbolicRegressor
        X = np.random.default_rng(0).uniform(-2, 2, (200, 2))
        SymbolicRegressor(policy="random", n_jobs=2, max_time=200, max_evaluations=10**8,
                          random_state=0).fit(X, X[:, 0] * X[:, 1] + np.sin(X[:, 0]))
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(workers) < 2:
            workers = {c for c in _children(parent.pid) if b"LokyProcess" in Path(f"/proc/{c}/cmdline").read_bytes()}
            time.sleep(0.2)
        assert len(workers) >= 2, "the fit did not start its workers"
        time.sleep(2.0)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers outlived their killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for w in workers:  # the test's own processes, should the check have failed
            if _alive(w):
                os.kill(w, signal.SIGKILL)
