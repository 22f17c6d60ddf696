"""The parallel search's one scheduling loop (``parallel._Schedule``), on a scripted runner: units
merged in unit order whatever order they finish in, none started or kept after the unit that
reached the target, the in-process runner's one-after-the-other run, and a Ctrl-C."""

from __future__ import annotations

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.pareto import ParetoArchive
from dgsr.search import parallel
from dgsr.search.unit_runners import InProcessRunner


def _unit(task, best_r2: float = 0.5, reason: str = "evaluations") -> parallel.UnitResult:
    return parallel.UnitResult(index=task.index, front=[], n_evaluations=10.0, n_trials=1, n_iterations=3,
                               best_r2=best_r2, stop_reason=reason,
                               history=[{"evaluations": 1.0, "best_r2": best_r2, "best_size": 1, "trial": 0}])


class ScriptedRunner:
    """Finishes one unit per wait: the one ``first`` names when it is out, else the last submitted."""

    def __init__(self, results, first: int | None = None):
        self.results, self.first, self.submitted, self.closed = results, first, [], None

    def submit(self, task):
        self.submitted.append(task.index)
        return task

    def wait(self, handles, timeout=None):
        return [max(handles, key=lambda t: (t.index == self.first, t.index))]

    def result(self, handle):
        return self.results(handle)

    def collect(self, handles, grace):
        return []

    def close(self, busy=False):
        self.closed = busy


def _schedule(runner, capacity: int, units: int, target_r2=None):
    merger = parallel._Merger(ParetoArchive(), 0.0, None)
    budget = Budget(max_evaluations=units * parallel.UNIT_EVALUATIONS)
    schedule = parallel._Schedule(runner, capacity, parallel._tasks(budget, np.random.default_rng(0)), merger,
                                  parallel._Clock(None), target_r2)
    return schedule, merger


def test_units_that_finish_out_of_order_are_merged_in_unit_order():
    runner = ScriptedRunner(_unit)
    schedule, merger = _schedule(runner, capacity=3, units=5)
    merged = []
    real = merger._merge
    merger._merge = lambda r: merged.append(r.index) or real(r)
    assert schedule.run() is False
    assert runner.submitted == [0, 1, 2, 3, 4] and merged == [0, 1, 2, 3, 4]
    result = merger.result(False, False)
    assert result.n_evaluations == 50.0 and result.n_trials == 5 and result.stop_reason == "evaluations"
    assert runner.closed is False


def test_no_unit_after_the_one_that_reached_the_target_is_started_or_kept():
    # Unit 1 reaches the target first; unit 2, already out, comes back before unit 0 and is dropped.
    runner = ScriptedRunner(lambda task: _unit(task, 0.999 if task.index == 1 else 0.5), first=1)
    schedule, merger = _schedule(runner, capacity=3, units=6, target_r2=0.99)
    merged = []
    real = merger._merge
    merger._merge = lambda r: merged.append(r.index) or real(r)
    assert schedule.run() is False
    assert runner.submitted == [0, 1, 2] and merged == [0, 1] and runner.closed is False
    result = merger.result(False, False)
    assert result.stop_reason == "target" and result.n_trials == 2 and result.n_evaluations == 20.0


def test_the_in_process_runner_runs_the_units_one_after_the_other_and_stops_on_exhausted():
    ran = []

    def run(task):
        ran.append(task.index)
        return _unit(task, reason="exhausted" if task.index == 2 else "evaluations")

    schedule, merger = _schedule(InProcessRunner(run), capacity=1, units=6)
    assert schedule.run() is False
    assert ran == [0, 1, 2]
    assert merger.result(False, False).stop_reason == "exhausted"


def test_a_unit_stopped_by_ctrl_c_ends_the_fit_as_interrupted():
    ran = []

    def run(task):
        ran.append(task.index)
        return _unit(task, reason="interrupted" if task.index == 1 else "evaluations")

    schedule, merger = _schedule(InProcessRunner(run), capacity=1, units=6)
    assert schedule.run() is True
    assert ran == [0, 1]
    result = merger.result(True, False)
    assert result.stop_reason == "interrupted" and result.n_trials == 2
