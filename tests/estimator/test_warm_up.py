"""A fit's time budget is spent searching, not compiling: the kernels are made ready before it."""

import subprocess
import sys
import time

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.kernels import compiler
from dgsr.estimator import warm_up

pytestmark = pytest.mark.skipif(not compiler.AVAILABLE, reason="the compiled kernels are off (no numba or DGSR_NO_JIT)")


# Run in a fresh process: in the suite's own process earlier tests have compiled everything already.
_SCRIPT = """
import numpy as np
from dgsr import SymbolicRegressor
from dgsr.core.kernels import compiler
from dgsr.estimator.warm_up import warm_up_kernels

warm_up_kernels()
before = compiler.compiled_signatures()
rng = np.random.default_rng(3)
X = rng.uniform(1.0, 2.0, size=(300, 4))
targets = (2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2],
           1.0 / (1.0 + (X[:, 0] - 1.5) ** 2 + (X[:, 3] + 0.5) ** 2),
           np.exp(-0.8 * X[:, 0]) * np.cos(2.1 * X[:, 1] + 0.3))
for seed, y in enumerate(targets):
    SymbolicRegressor(max_time=60, max_evaluations=1500, random_state=seed).fit(X, y)
after = compiler.compiled_signatures()
print({name: (before.get(name, 0), n) for name, n in after.items() if n != before.get(name, 0)})
"""


def test_after_the_warm_up_a_timed_fit_compiles_nothing(tmp_path):
    script = tmp_path / "fit_after_warm_up.py"
    script.write_text(_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "{}"  # no kernel gained a signature during the fits


def test_it_runs_once_per_process(monkeypatch):
    warm_up.warm_up_kernels()
    calls = []
    monkeypatch.setattr("dgsr.search.mcts.run_search", lambda *a, **k: calls.append(1))
    assert warm_up.warm_up_kernels() == warm_up.WarmUp()
    assert calls == []


def test_the_first_timed_fit_of_a_process_warms_up_and_an_evaluation_bound_one_does_not(monkeypatch):
    seen = []
    monkeypatch.setattr("dgsr.estimator.regressor.warm_up_kernels", lambda announce=None: seen.append(1) or warm_up.WarmUp())
    X = np.random.default_rng(0).uniform(1.0, 2.0, size=(80, 2))
    SymbolicRegressor(max_time=None, max_evaluations=200, random_state=0).fit(X, X[:, 0] * X[:, 1])
    assert seen == []
    SymbolicRegressor(max_time=30, max_evaluations=200, random_state=0).fit(X, X[:, 0] * X[:, 1])
    assert seen == [1]


def test_a_slow_warm_up_is_announced_and_a_quick_one_is_not(monkeypatch):
    monkeypatch.setattr(warm_up, "_warmed", False)
    said = []
    monkeypatch.setattr(warm_up, "_run_warm_up", lambda: time.sleep(0.5))
    assert warm_up.warm_up_kernels(lambda: said.append("compiling"), announce_after=0.05).seconds >= 0.5
    assert said == ["compiling"]
    monkeypatch.setattr(warm_up, "_warmed", False)
    monkeypatch.setattr(warm_up, "_run_warm_up", lambda: None)
    warm_up.warm_up_kernels(lambda: said.append("again"), announce_after=5.0)
    time.sleep(0.1)
    assert said == ["compiling"]


def test_a_failing_warm_up_does_not_stop_the_fit(monkeypatch):
    monkeypatch.setattr(warm_up, "_warmed", False)

    def broken():
        raise RuntimeError("no compiler today")

    monkeypatch.setattr(warm_up, "_run_warm_up", broken)
    X = np.random.default_rng(1).uniform(1.0, 2.0, size=(80, 2))
    model = SymbolicRegressor(max_time=30, max_evaluations=300, random_state=0).fit(X, X[:, 0] * X[:, 1])
    assert model.score(X, X[:, 0] * X[:, 1]) > 0.99


@pytest.mark.parametrize("compiles", [True, False])
def test_compiling_is_not_counted_against_max_time_and_loading_is(monkeypatch, compiles):
    from dgsr.core import budget as budget_module

    budgets = []

    class Recorded(budget_module.Budget):
        def __init__(self, *args, **kwargs):
            budgets.append(kwargs.get("max_time"))
            super().__init__(*args, **kwargs)

    misses = iter([0, 5 if compiles else 0])
    monkeypatch.setattr(budget_module, "Budget", Recorded)
    monkeypatch.setattr(warm_up, "_warmed", False)
    monkeypatch.setattr(warm_up, "_run_warm_up", lambda: time.sleep(1.5))
    monkeypatch.setattr(compiler, "compile_misses", lambda: next(misses))
    X = np.random.default_rng(2).uniform(1.0, 2.0, size=(80, 2))
    SymbolicRegressor(max_time=4, max_evaluations=300, random_state=0,  # the whole budget to one search:
                          cv_max_rows=0).fit(X, X[:, 0] + X[:, 1])
    search_time = budgets[0]
    if compiles:  # the 1.5 s of compiling left the search's share of the 4 s whole
        assert search_time > 4 - 1.5
    else:  # the 1.5 s of loading came out of it
        assert search_time < 4 - 1.5


def test_a_ctrl_c_during_the_warm_up_reaches_the_user(monkeypatch):
    from types import SimpleNamespace

    from dgsr.search import mcts

    monkeypatch.setattr(warm_up, "_warmed", False)
    monkeypatch.setattr(mcts, "run_search", lambda *a, **k: SimpleNamespace(stop_reason="interrupted"))
    with pytest.raises(KeyboardInterrupt):
        warm_up.warm_up_kernels()
    assert warm_up._warmed is False  # the next fit warms up again
