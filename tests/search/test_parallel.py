"""n_jobs: independent work units on several processes (or Ray), merged into one front, with the
same result for any n_jobs at a fixed seed and max_evaluations (issue 12, item 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dgsr.core.budget import Budget
from dgsr.core.parser import parse
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.search import parallel
from dgsr.search.mutations import Mutation
from tests.ctrl_c import CTRL_C_SHAPES, interrupted_at_call

pytestmark = pytest.mark.timeout(300, method="thread")


@pytest.fixture
def small_units(monkeypatch):
    # 1,000 evaluations per unit, so a 4,000-evaluation fit has 4 units (the default is 25,000)
    monkeypatch.setattr(parallel, "UNIT_EVALUATIONS", 1000)


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.uniform(1, 3, 300), "b": rng.uniform(-1, 1, 300), "c": rng.uniform(0, 2, 300)})
    return X, np.asarray(X["a"] * np.cos(X["b"]) + 0.5 * X["c"] ** 2)


def _fit(X, y, **kw) -> SymbolicRegressor:
    params = {"policy": "random", "max_evaluations": 4000, "max_time": None, "random_state": 7}
    params.update(kw)
    return SymbolicRegressor(**params).fit(X, y)


def _front(est: SymbolicRegressor) -> list[tuple]:
    return [(e.expression.key(), e.mse) for e in est._front]


def test_units_depend_on_the_budget_only():
    assert parallel.n_units(500_000) == 20 and parallel.n_units(25_000) == 1 and parallel.n_units(25_001) == 2
    assert parallel.n_units(None) is None
    assert parallel.resolve_n_jobs(None) == 1 and parallel.resolve_n_jobs(-1) >= 1


@pytest.fixture(scope="module")
def fits(data, tmp_path_factory) -> dict[str, SymbolicRegressor]:
    """The same 4-unit fit on one process, on two, and through ``dgsr fit --jobs 2``."""
    import pickle

    import dgsr.cli.app as cli

    X, y = data
    patch = pytest.MonkeyPatch()
    patch.setattr(parallel, "UNIT_EVALUATIONS", 1000)
    try:
        out = {"one": _fit(X, y, n_jobs=1), "two": _fit(X, y, n_jobs=2)}
        folder = tmp_path_factory.mktemp("cli")
        X.assign(y=y).to_csv(folder / "d.csv", index=False)
        argv = ["fit", str(folder / "d.csv"), "--policy", "random", "--evals", "4000", "--seed", "7", "--time", "600",
                "--jobs", "2",
                "--quiet", "--out", str(folder / "run")]
        assert cli.main(argv) == 0
        out["cli"] = pickle.loads((folder / "run" / "model.pkl").read_bytes())
    finally:
        patch.undo()
    return out


def test_two_processes_give_the_same_front_as_one(fits, data):
    X, _ = data
    one, two = fits["one"], fits["two"]
    assert _front(one) == _front(two)
    assert one.n_evaluations_ == two.n_evaluations_ and one.n_trials_ == two.n_trials_

    def history(est):  # wall times differ; the rest of the history does not
        return [(h["evaluations"], h["best_r2"], h["best_size"], h["trial"]) for h in est.history_]

    assert history(one) == history(two) and len(history(one)) > 1
    assert one.best_index_ == two.best_index_
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    assert one.n_trials_ >= 2  # the search's units (half of the budget; the fold searches take the rest)


def test_the_merged_front_holds_several_units(small_units, data, fits):
    X, y = data
    single = _fit(X, y, n_jobs=1, max_evaluations=1000)  # one unit of the same size
    assert _front(single) != _front(fits["one"])
    assert single.n_trials_ < fits["one"].n_trials_


def test_cli_jobs_flag(fits):
    assert fits["cli"].n_jobs == 2
    assert _front(fits["cli"]) == _front(fits["one"])


def test_target_r2_stops_at_the_same_unit_whatever_n_jobs(small_units):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(200, 2))
    y = 2.0 * X[:, 0] * X[:, 1]
    one = _fit(X, y, n_jobs=1, target_r2=0.999999, max_evaluations=6000)
    two = _fit(X, y, n_jobs=2, target_r2=0.999999, max_evaluations=6000)
    assert one.stop_reason_ == two.stop_reason_ == "target"
    assert _front(one) == _front(two) and one.n_evaluations_ == two.n_evaluations_
    assert one.n_evaluations_ < 6000


def test_time_budget_with_two_processes_returns_a_front(data):
    X, y = data
    est = _fit(X, y, n_jobs=2, max_evaluations=None, max_time=4)
    assert est.stop_reason_ == "time" and len(est.equations_) >= 2
    assert np.isfinite(est.predict(X)).all()


def test_bad_n_jobs_and_backend_are_rejected(data):
    X, y = data
    with pytest.raises(ValueError, match="n_jobs"):
        _fit(X, y, n_jobs=0)
    with pytest.raises(ValueError, match="parallel_backend"):
        _fit(X, y, parallel_backend="dask")


def test_ray_backend_gives_the_same_front(small_units, data):
    ray = pytest.importorskip("ray")
    X, y = data
    one = _fit(X, y, n_jobs=1, max_evaluations=2000)
    try:  # Ray's own start-up can time out on an overloaded machine: that is not what this tests
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except Exception as err:  # Ray raises a bare Exception for a start-up timeout
        if "timed out during startup" not in str(err):
            raise
        pytest.skip(f"Ray did not start on this machine: {err}")
    try:
        on_ray = _fit(X, y, n_jobs=2, parallel_backend="ray", max_evaluations=2000)
        assert ray.is_initialized()  # an instance the fit did not start is left running
    finally:
        ray.shutdown()
    assert _front(one) == _front(on_ray) and one.n_evaluations_ == on_ray.n_evaluations_


_UNGUARDED = """
import numpy as np
from dgsr import SymbolicRegressor
print("body", flush=True)
rng = np.random.default_rng(0)
X = rng.uniform(1, 3, size=(120, 2))
est = SymbolicRegressor(policy="random", max_evaluations=60000, max_time=120, n_jobs=2, random_state=0,
                        verbose=False).fit(X, X[:, 0] * X[:, 1])
print("r2", est.score(X, X[:, 0] * X[:, 1]) > 0.999)
"""


def _run_python(args: list[str], tmp_path, stdin: str | None = None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=280,
                          cwd=tmp_path, check=False)


@pytest.mark.parametrize("how", ["script", "-c", "stdin"])
def test_n_jobs_works_in_a_script_without_a_main_guard(tmp_path, how):
    # spawned workers used to re-run the script: BrokenProcessPool (issue 26, item 3)
    if how == "script":
        (tmp_path / "fit.py").write_text(_UNGUARDED)
        done = _run_python(["fit.py"], tmp_path)
    elif how == "-c":
        done = _run_python(["-c", _UNGUARDED], tmp_path)
    else:
        done = _run_python(["-"], tmp_path, stdin=_UNGUARDED)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["body", "r2", "True"]  # the body ran once, in this process only
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_timed_fit_keeps_its_time_budget_with_workers(data, n_jobs):
    import time

    X, y = data
    # Start-up of the worker processes, the polish and the display all come out of max_time; the
    # margin covers the last unit's final iteration and the minimum simplification time (0.5 s).
    start = time.perf_counter()
    est = SymbolicRegressor(max_time=3, n_jobs=n_jobs, random_state=0, verbose=False).fit(X, y)
    wall = time.perf_counter() - start
    assert est.stop_reason_ == "time"
    assert wall <= 3 + 2.0, wall


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_timed_search_stops_when_its_units_find_nothing_new(n_jobs):
    # A policy that offers the same few expressions in every trial: once a unit has scored them,
    # the driver starts no new units (they would search the same space) instead of running until
    # the time is up.
    from dgsr.search.mcts import SearchConfig
    from dgsr.search.parallel import run_parallel_search
    from tests.search.test_search import ScriptedPolicy

    X = np.random.default_rng(0).uniform(1, 3, size=(60, 2))
    policy = ScriptedPolicy([(parse("x0", ["x0", "x1"]), 0.5), (parse("x1", ["x0", "x1"]), 0.5)],
                            grow=[Mutation(0, "sin")])
    result = run_parallel_search(X, X[:, 0] + X[:, 1], policy, config=SearchConfig(iterations_per_trial=20),
                                 rng=np.random.default_rng(0), budget=Budget(max_time=300), n_jobs=n_jobs)
    assert result.stop_reason == "exhausted"
    assert result.n_trials <= n_jobs * (1 + SearchConfig().max_idle_trials)


@pytest.mark.parametrize("shape", CTRL_C_SHAPES, ids=["python", "compiled"])
def test_ctrl_c_between_units_keeps_the_units_done(monkeypatch, shape):
    from dgsr.policies.random import RandomPolicy
    from dgsr.search.mcts import SearchConfig

    run_unit = interrupted_at_call(parallel._run_unit, 2, shape)
    monkeypatch.setattr(parallel, "UNIT_EVALUATIONS", 500)
    monkeypatch.setattr(parallel, "_run_unit", run_unit)
    X = np.random.default_rng(0).uniform(1, 3, size=(60, 2))
    result = parallel.run_parallel_search(X, X[:, 0] * X[:, 1], RandomPolicy(), config=SearchConfig(),
                                          rng=np.random.default_rng(0), budget=Budget(max_evaluations=2000),
                                          n_jobs=1)
    assert run_unit.calls == 2
    assert result.stop_reason == "interrupted"
    assert result.archive.front() and 0 < result.n_evaluations <= 500 + 1e-9
