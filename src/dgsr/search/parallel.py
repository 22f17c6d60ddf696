"""Independent search units on several processes (``n_jobs``) or Ray workers, merged into one front.

The evaluation budget is cut into *work units* that depend only on ``max_evaluations``, never on
the number of processes: ``ceil(max_evaluations / UNIT_EVALUATIONS)`` units, each a
:func:`dgsr.search.mcts.run_search` (its own trials, row subset and cache) with an equal share of the
evaluations and its own seed, spawned from the fit's generator in unit order. Results are merged
in unit order, so the front, the evaluation count and the history are the same for any
``n_jobs`` (CONTRACTS §4), and one process runs exactly the same units one after the other.
A budget of at most ``UNIT_EVALUATIONS`` is a single unit that uses the fit's generator itself.

With a target R² the first unit (in unit order) that reaches it ends the fit: units after it
are discarded even when another process already ran them, units before it are always merged.
A time budget is shared: a unit starts with the time left and no unit starts after it runs out
(time-bound fits are not reproducible anyway, CONTRACTS §2). Without ``max_evaluations``, units
of ``UNIT_EVALUATIONS`` are drawn until the time runs out.

Backends: ``"local"``, a ``spawn`` process pool of ``n_jobs`` workers (spawn, because forking a
process that may hold torch threads is unsafe), or ``"ray"``: each unit a Ray task with one CPU,
on the cluster named by ``RAY_ADDRESS`` or a local Ray instance started here. ``n_jobs=1`` runs
in this process, with a live progress display. All three are runners of
:mod:`dgsr.search.unit_runners` driven by one scheduling loop (:class:`_Schedule`).
"""

from __future__ import annotations

import functools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.custom_operators import define_operators
from dgsr.core.pareto import ParetoArchive
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt
from dgsr.search.mcts import SearchConfig, SearchProgress, SearchResult, run_search
from dgsr.search.policy import Policy
from dgsr.search.results import history_point
from dgsr.search.unit_runners import InProcessRunner, PoolRunner, RayRunner, UnitRunner
from dgsr.search.workers import available_cpus, check_backend, stoppable_work

#: Evaluations per work unit (a few trials of the default 1,000 iterations).
UNIT_EVALUATIONS = 25_000


@dataclass(frozen=True)
class UnitResult:
    """What a unit sends back: its front (as ``(expression, mse, r2)``) and its statistics."""

    index: int
    front: list[tuple[Any, float, float]]
    n_evaluations: float
    n_trials: int
    n_iterations: int
    best_r2: float
    stop_reason: str
    history: list[dict[str, float]] = field(default_factory=list)
    mutation_stats: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Task:
    """Everything a worker needs to run one unit (picklable)."""

    index: int
    seed: Any  # a numpy Generator (pickles with its state)
    max_evaluations: float | None
    time_left: float | None
    target_r2: float | None
    # The fit's deadline on the wall clock (time.time()): a worker that starts the unit later
    # than it was submitted (a new process importing numpy) gets only what is left of it.
    deadline: float | None = None


def n_units(max_evaluations: float | None) -> int | None:
    """Number of work units for a search budget (None: as many as the time allows)."""
    if max_evaluations is None:
        return None
    return max(1, math.ceil(max_evaluations / UNIT_EVALUATIONS))


def resolve_n_jobs(n_jobs: int | None) -> int:
    """``n_jobs`` as a process count: None is 1, -1 every CPU, -2 all but one (scikit-learn's convention)."""
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, available_cpus() + 1 + n_jobs)
    return int(n_jobs)


def local_processes(n_jobs: int | None, max_evaluations: float | None) -> int:
    """Processes a local search starts: ``n_jobs`` resolved, at most one per CPU this process may
    use and at most one per work unit. Results do not depend on it (CONTRACTS §4), so more would
    only share the cores, add start-up time and memory (issue 48, item 8: ``n_jobs=1000`` started
    890 workers on 2 cores)."""
    count = min(resolve_n_jobs(n_jobs), available_cpus())
    units = n_units(max_evaluations)
    return count if units is None else min(count, units)


def _tasks(budget: Budget, rng: np.random.Generator) -> Iterator[tuple[int, np.random.Generator, float | None]]:
    """(index, generator, evaluations) of each unit, in unit order."""
    count = n_units(budget.max_evaluations)
    if count == 1:
        yield 0, rng, budget.max_evaluations
        return
    # One child at a time: ``rng.spawn(1)`` called k times gives the same k generators as
    # ``rng.spawn(k)`` (the seed sequence counts its children), so a unit's seed is unchanged,
    # but a huge ``max_evaluations`` no longer builds millions of generators before the first
    # unit starts (issue 48, item 5: 86k of them took the whole of a 1 s budget).
    evals = float(UNIT_EVALUATIONS) if count is None else budget.max_evaluations / count
    i = 0
    while count is None or i < count:  # without a count: time-bound, units until the time runs out
        yield i, rng.spawn(1)[0], evals
        i += 1


def _run_unit(task: _Task, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, policy: Any, config: SearchConfig,
              on_progress: Callable[[SearchProgress], Any] | None = None) -> UnitResult:
    time_left = task.time_left
    if task.deadline is not None and time_left is not None:
        time_left = max(min(time_left, task.deadline - time.time()), 0.0)
    budget = Budget(max_evaluations=task.max_evaluations, max_time=time_left, target_r2=task.target_r2)
    result = run_search(X, y, policy, config=config, rng=task.seed, budget=budget, on_progress=on_progress,
                        sample_weight=w)
    return _slim(task.index, result)


def _slim(index: int, result: SearchResult) -> UnitResult:
    best = result.best
    return UnitResult(index=index, front=[(e.expression, e.mse, e.r2) for e in result.archive.front()],
                      n_evaluations=float(result.n_evaluations), n_trials=int(result.n_trials),
                      n_iterations=int(result.n_iterations), best_r2=best.r2 if best is not None else -math.inf,
                      stop_reason=result.stop_reason, history=list(result.history),
                      mutation_stats=dict(result.mutation_stats))


# ---------------------------------------------------------------------- worker side (other processes)
def _worker_run(task: _Task, data: tuple[np.ndarray, np.ndarray, np.ndarray | None],
                make_policy: Callable[[], Policy], config: SearchConfig) -> UnitResult:
    # Each unit builds its own policy: policies keep no state between units (a unit's result does
    # not depend on which process ran it), and loading even the neural one takes a fraction of
    # a unit's time, so no per-process cache is kept.
    X, y, w = data
    define_operators(config.definitions)  # a fresh interpreter knows only Table 1
    with stoppable_work():  # the parent's stop ends the unit as a Ctrl-C would: it returns what it found
        return _run_unit(task, X, y, w, make_policy(), config)


# ---------------------------------------------------------------------- the driver
class _Merger:
    """Merges unit results in unit order; knows when the fit is done."""

    def __init__(self, archive: ParetoArchive, start: float, on_progress: Callable[[SearchProgress], Any] | None):
        self.archive = archive
        self.start = start
        self.on_progress = on_progress
        self.pending: dict[int, UnitResult] = {}
        self.next = 0
        self.evaluations = 0.0
        self.trials = 0
        self.iterations = 0
        self.best_r2 = -math.inf
        self.best_size = 0
        self.history: list[dict[str, float]] = []
        self.stats: Counter[str] = Counter()
        self.reasons: list[str] = []
        self.target_at: int | None = None  # first unit (in order) that reached the target

    def add(self, result: UnitResult, target_r2: float | None) -> None:
        self.pending[result.index] = result
        if target_r2 is not None and result.best_r2 >= target_r2:
            self.target_at = result.index if self.target_at is None else min(self.target_at, result.index)
        while self.next in self.pending and (self.target_at is None or self.next <= self.target_at):
            self._merge(self.pending.pop(self.next))
            self.next += 1

    def _merge(self, r: UnitResult) -> None:
        for expr, mse, r2 in r.front:
            self.archive.add(expr, mse, r2, penalised=True)
        elapsed = time.perf_counter() - self.start
        for h in r.history:
            if h["best_r2"] > self.best_r2 or (h["best_r2"] == self.best_r2 and h["best_size"] < self.best_size):
                self.best_r2, self.best_size = h["best_r2"], int(h["best_size"])
                self.history.append(history_point(self.evaluations + h["evaluations"], elapsed, h["best_r2"],
                                                  h["best_size"], self.trials + h["trial"]))
        self.evaluations += r.n_evaluations
        self.trials += r.n_trials
        self.iterations += r.n_iterations
        self.stats.update(r.mutation_stats)
        self.reasons.append(r.stop_reason)
        if self.on_progress is not None:
            self.on_progress(SearchProgress(elapsed, self.evaluations, self.best_r2, self.best_size, self.trials))

    def merge_rest(self) -> None:
        """After a Ctrl-C: merge every unit that came back, in unit order, gaps and all (an
        interrupted fit is not reproducible anyway; what its units found is kept)."""
        for index in sorted(self.pending):
            if self.target_at is None or index <= self.target_at:
                self._merge(self.pending.pop(index))

    def done(self) -> bool:
        return self.target_at is not None and self.next > self.target_at

    def result(self, interrupted: bool, out_of_time: bool) -> SearchResult:
        if interrupted:
            reason = "interrupted"
        elif self.target_at is not None:
            reason = "target"
        elif "exhausted" in self.reasons:
            reason = "exhausted"
        elif out_of_time or "time" in self.reasons:
            reason = "time"
        else:
            reason = self.reasons[-1] if self.reasons else "evaluations"
        return SearchResult(archive=self.archive, best=self.archive.best(), n_evaluations=self.evaluations,
                            n_trials=self.trials, n_iterations=self.iterations,
                            elapsed=time.perf_counter() - self.start, stop_reason=reason, history=self.history,
                            mutation_stats=dict(self.stats), trials=[])


def run_parallel_search(
    X: np.ndarray,
    y: np.ndarray,
    policy: Any,
    *,
    config: SearchConfig,
    rng: np.random.Generator,
    budget: Budget,
    n_jobs: int = 1,
    backend: str = "local",
    make_policy: Callable[[], Policy] | None = None,
    archive: ParetoArchive | None = None,
    on_progress: Callable[[SearchProgress], Any] | None = None,
    sample_weight: np.ndarray | None = None,
) -> SearchResult:
    """Run the budget's work units (``n_jobs`` at a time) and merge them into one front.

    Parameters
    ----------
    X, y, sample_weight:
        Training rows (all finite) and optional row weights.
    policy:
        The policy object, used when the units run in this process (``n_jobs=1``).
    config, rng, budget:
        Search settings, the fit's search generator (units are spawned from it) and the budget
        (evaluations split over the units, time shared, target R² per unit).
    n_jobs, backend:
        Processes (or Ray tasks) at a time; ``"local"`` or ``"ray"``.
    make_policy:
        How a worker process builds its own policy: a picklable callable, such as a
        ``functools.partial`` of :func:`dgsr.estimator.policy_loading.load_policy`. Default: ``policy`` itself,
        pickled to the workers.
    archive:
        An archive to continue (warm start): the units' fronts are merged into it.

    Returns
    -------
    SearchResult
        Merged: the archive, summed evaluations, trials and iterations, the history of
        improvements in unit order; ``trials`` is empty (per-trial records stay in the units).
    """
    check_backend(backend)
    n_jobs = resolve_n_jobs(n_jobs) if backend == "ray" else local_processes(n_jobs, budget.max_evaluations)
    start = time.perf_counter()
    clock = _Clock(None if budget.max_time is None else start + budget.max_time)
    merger = _Merger(archive if archive is not None else ParetoArchive(config.rules, config.units), start, on_progress)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    runner: UnitRunner
    if n_jobs == 1:
        def run_here(task: _Task) -> UnitResult:
            return _run_unit(task, X, y, sample_weight, policy, config, _offset_progress(on_progress, merger, start))
        runner = InProcessRunner(run_here)
    else:
        make_policy = make_policy if make_policy is not None else functools.partial(_same_policy, policy)
        runner = (RayRunner if backend == "ray" else PoolRunner)(n_jobs, _worker_run, (X, y, sample_weight),
                                                                  make_policy, config)
    interrupted = _Schedule(runner, n_jobs, _tasks(budget, rng), merger, clock, budget.target_r2).run()
    return merger.result(interrupted, clock.out_of_time())


@dataclass(frozen=True)
class _Clock:
    """The fit's shared time budget: ``deadline`` on ``time.perf_counter()``'s clock (None: no limit)."""

    deadline: float | None

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def out_of_time(self) -> bool:
        left = self.left()
        return left is not None and left <= 0


class _Schedule:
    """The one scheduling loop: keeps up to ``capacity`` units out on ``runner``, in unit order,
    and merges what comes back until the units run out, the time does, one reaches the target
    or one finds nothing new (``"exhausted"``); a Ctrl-C keeps what the running units found.

    With the in-process runner a unit runs when it is submitted, so this is the plain loop over
    the units one after the other."""

    def __init__(self, runner: UnitRunner, capacity: int, tasks: Iterator[tuple[int, np.random.Generator,
                 float | None]], merger: _Merger, clock: _Clock, target_r2: float | None):
        self.runner, self.capacity, self.tasks = runner, capacity, tasks
        self.merger, self.clock, self.target_r2 = merger, clock, target_r2
        self.in_flight: dict[Any, int] = {}  # handle -> unit index
        self.no_more = False  # start no further unit
        self.interrupted = False

    def run(self) -> bool:
        """Run the units; whether a Ctrl-C stopped the fit."""
        try:
            while True:
                self._fill()
                if not self.in_flight:
                    break
                left = self.clock.left()
                finished = self.runner.wait(list(self.in_flight),
                                            None if left is None else max(left, 0.0) + LATE_UNIT_SECONDS)
                if not finished:
                    # Past the deadline with units still out (workers still starting on busy cores):
                    # stop them, keep what they found, and leave them behind.
                    _collect_stopped(self.runner, self.in_flight, self.merger, LATE_UNIT_SECONDS)
                    break
                self._take(finished)
                if self.interrupted or self.merger.done():
                    break
        except INTERRUPTS as err:
            if not is_interrupt(err):
                raise
            self.interrupted = True
            _collect_stopped(self.runner, self.in_flight, self.merger, STOP_GRACE_SECONDS)
        finally:
            self.runner.close(busy=bool(self.in_flight))
        return self.interrupted

    def _fill(self) -> None:
        """Submit units, in order, while the runner has room and more are wanted."""
        while not self.no_more and len(self.in_flight) < self.capacity and not self.merger.done():
            left = self.clock.left()
            if left is not None and left <= 0:
                self.no_more = True
                break
            item = next(self.tasks, None)
            if item is None:
                self.no_more = True
                break
            index, seed, evals = item
            if self.merger.target_at is not None and index > self.merger.target_at:
                self.no_more = True  # a unit already reached the target: later units are not needed
                break
            left = self.clock.left()
            task = _Task(index, seed, evals, left, self.target_r2, None if left is None else time.time() + left)
            self.in_flight[self.runner.submit(task)] = index

    def _take(self, finished: list[Any]) -> None:
        """Merge the finished units (those after a unit that reached the target are dropped)."""
        for handle in finished:
            index = self.in_flight.pop(handle)
            result = self.runner.result(handle)
            if self.merger.target_at is None or index <= self.merger.target_at:
                self.merger.add(result, self.target_r2)
            if result.stop_reason == "exhausted":
                self.no_more = True  # no more units: another would search the same small space
            elif result.stop_reason == "interrupted":
                # Only a Ctrl-C stops a unit here: the in-process unit's own (a worker's comes
                # from this loop's stop, after it).
                self.interrupted = True


#: Seconds a Ctrl-C waits for the running units to stop and send back what they found.
STOP_GRACE_SECONDS = 10.0
#: Seconds a time-bound search waits past its deadline for the units still out, and then again
#: for those it stopped: a worker that is still starting (imports, kernels) is not waited for
#: (issue 48: n_jobs=8 at max_time=2 took 4.8 s).
LATE_UNIT_SECONDS = 0.5


def _collect_stopped(runner: Any, in_flight: dict[Any, int], merger: _Merger, grace: float) -> None:
    """After a first Ctrl-C or past the deadline: stop the running units, keep what they send
    back within ``grace`` seconds, and merge every unit that finished (a second Ctrl-C stops the wait)."""
    try:
        for handle, result in runner.collect(list(in_flight), grace):
            in_flight.pop(handle, None)
            merger.pending[result.index] = result
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
    merger.merge_rest()


def _same_policy(policy: Policy) -> Policy:
    return policy


def _offset_progress(on_progress: Callable[[SearchProgress], Any] | None, merger: _Merger,
                     start: float) -> Callable[[SearchProgress], Any] | None:
    """A unit's progress, shown as the whole fit's (evaluations and trials of the merged units added)."""
    if on_progress is None:
        return None
    done_evals, done_trials, best_r2, best_size = merger.evaluations, merger.trials, merger.best_r2, merger.best_size

    def show(p: SearchProgress) -> None:
        better = p.best_r2 > best_r2
        on_progress(SearchProgress(time.perf_counter() - start, done_evals + p.evaluations,
                                   p.best_r2 if better else best_r2, p.best_size if better else best_size,
                                   done_trials + p.trials))
    return show


