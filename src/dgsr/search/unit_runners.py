"""Where the parallel search's work units run: this process, a local process pool, or Ray tasks.

Each runner offers the same five steps to the one scheduling loop of :mod:`dgsr.search.parallel`
(:class:`UnitRunner`): submit a unit, wait for some to finish, take a result, stop the running
units and collect what they found, close. The pool and Ray runners send ``work(task, data,
*rest)`` to a worker (``data``, the training rows, travels once where the backend can keep it);
the in-process runner runs its ``run(task)`` at submission, so the loop with it is the plain
one-unit-after-the-other search.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from dgsr.core.structure_memos import STRUCTURE_MEMOS
from dgsr.runtime.collector import fewer_collections
from dgsr.search.workers import (
    WAIT_SLICE_SECONDS,
    discard_pool,
    forget_pool,
    spawn_pool,
    start_ray,
    stop_workers,
    wait_in_slices,
)


class UnitRunner(Protocol):
    """Runs work units for the scheduling loop (:class:`InProcessRunner`, :class:`PoolRunner`,
    :class:`RayRunner`)."""

    def submit(self, task: Any) -> Any:
        """Start ``task``; a handle for :meth:`wait` and :meth:`result`."""

    def wait(self, handles: list[Any], timeout: float | None = None) -> list[Any]:
        """The handles done (at least one, unless ``timeout`` seconds passed first: then none)."""

    def result(self, handle: Any) -> Any:
        """The result of a done unit (its error raised)."""

    def collect(self, handles: list[Any], grace: float) -> list[tuple[Any, Any]]:
        """Stop the running units and the ``(handle, result)`` of those that come back within ``grace`` seconds."""

    def close(self, busy: bool = False) -> None:
        """Release the workers; ``busy``: units are still running and not needed any more."""


class InProcessRunner:
    """Units in this process, one at a time: a unit runs to its end when it is submitted.

    A Ctrl-C during a unit is the unit's own (it returns what it found, stop reason
    ``"interrupted"``). The garbage collector's thresholds stay raised from the first unit to
    :meth:`close`: put back between two units, the collector would at once scan everything the
    first one left (about 0.13 s a unit). The structure memos too are emptied once, at
    :meth:`close`, after the last unit.
    """

    def __init__(self, run: Callable[[Any], Any]):
        self.run = run
        self._collections = contextlib.ExitStack()
        self._collections.enter_context(fewer_collections())
        self._collections.enter_context(STRUCTURE_MEMOS.in_use())

    def submit(self, task: Any) -> Any:
        future: cf.Future = cf.Future()
        future.set_result(self.run(task))
        return future

    def wait(self, handles: list[Any], timeout: float | None = None) -> list[Any]:
        return list(handles)

    def result(self, handle: Any) -> Any:
        return handle.result()

    def collect(self, handles: list[Any], grace: float) -> list[tuple[Any, Any]]:
        return [(handle, handle.result()) for handle in handles]  # done at submission: nothing to stop

    def close(self, busy: bool = False) -> None:
        self._collections.close()


class PoolRunner:
    """Units on a local ``spawn`` process pool of ``n_jobs`` stoppable workers."""

    def __init__(self, n_jobs: int, work: Callable[..., Any], data: Any, *rest: Any):
        self.work, self.args = work, (data, *rest)
        self.pool = spawn_pool(n_jobs, stoppable=True)

    def submit(self, task: Any) -> Any:
        return self.pool.submit(self.work, task, *self.args)

    def wait(self, handles: list[Any], timeout: float | None = None) -> list[Any]:
        return sorted(wait_in_slices(handles, timeout, cf.FIRST_COMPLETED), key=handles.index)

    def result(self, handle: Any) -> Any:
        return handle.result()

    def collect(self, handles: list[Any], grace: float) -> list[tuple[Any, Any]]:
        """Each running unit returns what it found so far; a unit that failed is left out."""
        end = time.monotonic() + grace
        done: set[Any] = set()
        while handles and time.monotonic() < end:
            # Asked again each slice: a worker still starting is not ready for the signal yet,
            # and one that was between two steps may have missed it (each unit stops once).
            if not stop_workers(self.pool):
                return []
            done = wait_in_slices(handles, min(WAIT_SLICE_SECONDS, end - time.monotonic()), cf.ALL_COMPLETED)
            if len(done) == len(handles):
                break
        out = []
        for handle in sorted(done, key=handles.index):
            with contextlib.suppress(Exception):  # a unit that ended in an error: nothing to keep
                out.append((handle, handle.result()))
        return out

    def close(self, busy: bool = False) -> None:
        """Idle workers exit in the background (the fit does not wait for them), busy ones are
        killed (their units are not needed)."""
        if busy:  # units still running (target reached, Ctrl-C): not needed any more
            discard_pool(self.pool)
        else:
            self.pool.shutdown(wait=False)
        forget_pool(self.pool)


class RayRunner:
    """Units as Ray tasks (one CPU each) on ``RAY_ADDRESS``'s cluster or a local Ray started here."""

    def __init__(self, n_jobs: int, work: Callable[..., Any], data: Any, *rest: Any):
        import ray

        self.ray = ray
        self.started = start_ray(n_jobs)
        self.remote = ray.remote(num_cpus=1)(work)
        self.data, self.rest = data, rest
        self.data_ref: Any = None
        self.in_flight: set[Any] = set()

    def submit(self, task: Any) -> Any:
        if self.data_ref is None:  # the data goes to the object store once
            self.data_ref = self.ray.put(self.data)
        handle = self.remote.remote(task, self.data_ref, *self.rest)
        self.in_flight.add(handle)
        return handle

    def wait(self, handles: list[Any], timeout: float | None = None) -> list[Any]:
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        return ready

    def result(self, handle: Any) -> Any:
        self.in_flight.discard(handle)
        return self.ray.get(handle)

    def collect(self, handles: list[Any], grace: float) -> list[tuple[Any, Any]]:
        """Ray tasks cannot be asked to stop early: nothing more is collected after a Ctrl-C."""
        return []

    def close(self, busy: bool = False) -> None:
        if busy:
            for handle in self.in_flight:
                with contextlib.suppress(Exception):
                    self.ray.cancel(handle, force=True)
        if self.started:
            self.ray.shutdown()
