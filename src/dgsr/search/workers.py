"""Worker processes for independent pieces of work: the one home of dgsr's process-pool and Ray
plumbing, shared by the parallel search (:mod:`dgsr.search.parallel`) and expert iteration
(:mod:`dgsr.online`).

Local pools are loky's process pools (joblib's backend, the one scikit-learn's ``n_jobs`` uses):
their workers are fresh interpreters, as with ``spawn`` (forking a process that may hold torch's
threads is unsafe), but they do not re-run the caller's ``__main__`` module, so ``n_jobs`` works
in a script without an ``if __name__ == "__main__":`` guard, in ``python -c`` and in notebooks.
Each worker runs one thread (the processes share the cores). Ray joins the cluster named by
``RAY_ADDRESS`` (or an explicit address) or starts a local instance; whoever starts Ray shuts it
down.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from dgsr.runtime.threads import one_thread_env

#: Where independent work can run: a local process pool, or Ray.
BACKENDS = ("local", "ray")


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else a ValueError naming them."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else the CPU count)."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def spawn_pool(n_workers: int, initializer: Callable[[], Any] | None = None,
               stoppable: bool = False) -> cf.Executor:
    """A process pool of ``n_workers`` fresh interpreters that run ``initializer`` first.

    Each worker's numerical libraries use one thread: ``OMP_NUM_THREADS=1`` and its kin
    (:func:`dgsr.runtime.threads.one_thread_env`) are in its environment before numpy loads. Each worker dies with the process that made the pool (:func:`_die_with_parent`).
    ``stoppable`` workers ignore Ctrl-C (the terminal sends it to the whole process group) and stop
    the work they run, as a Ctrl-C would, when the parent calls :func:`stop_workers`.
    """
    from joblib.externals.loky import ProcessPoolExecutor

    # Stoppable workers note their pid in this folder once their stop handler is in place: the
    # default action of the stop signal ends a process, so only those may receive it.
    ready = tempfile.mkdtemp(prefix="dgsr-workers-") if stoppable and _STOP_SIGNAL is not None else None
    pool = ProcessPoolExecutor(n_workers, initializer=_die_with_parent, initargs=(os.getpid(), initializer, ready),
                               env=one_thread_env())
    pool._dgsr_ready = ready  # type: ignore[attr-defined]
    return pool


#: The signal that asks a stoppable worker to end its work early (None where the OS has none).
_STOP_SIGNAL = getattr(signal, "SIGUSR1", None)
#: Whether this worker is running a piece of work now that no stop has reached yet (a stop
#: outside one must not break the pool, and a second one must not break the first's handling).
_running = False


@contextlib.contextmanager
def stoppable_work() -> Any:
    """Mark the block as work that :func:`stop_workers` may end with a ``KeyboardInterrupt``."""
    global _running
    previous, _running = _running, True
    try:
        yield
    finally:
        _running = previous  # as it was before the block, also after an exception


def _stop_requested(signum: int, frame: Any) -> None:
    global _running
    if _running:
        _running = False  # once per piece of work: the parent may ask again while it winds up
        raise KeyboardInterrupt  # the work's own Ctrl-C handling returns what it found so far


def stop_workers(pool: cf.Executor) -> bool:
    """Ask every ready worker of a ``stoppable`` pool to end its current work as a Ctrl-C would;
    False where that is impossible (no stop signal on this OS, a pool not made stoppable)."""
    ready = getattr(pool, "_dgsr_ready", None)
    if _STOP_SIGNAL is None or ready is None:
        return False
    workers = set(getattr(pool, "_processes", None) or {})
    with contextlib.suppress(OSError):
        for name in os.listdir(ready):
            if name.isdigit() and int(name) in workers:  # a pid of this pool, not a stale file
                with contextlib.suppress(OSError):  # already gone
                    os.kill(int(name), _STOP_SIGNAL)
    return True


def forget_pool(pool: cf.Executor) -> None:
    """Remove what :func:`spawn_pool` left on disk for ``pool`` (its ready folder)."""
    ready = getattr(pool, "_dgsr_ready", None)
    if ready is not None:
        shutil.rmtree(ready, ignore_errors=True)


#: Seconds between two checks of a worker's parent-watch thread.
_PARENT_POLL_SECONDS = 0.5


def _die_with_parent(parent: int, initializer: Callable[[], Any] | None, ready: str | None = None) -> None:
    """Worker initializer: end this worker when ``parent`` dies, then run ``initializer``.

    A parent killed by SIGKILL cannot shut its pool down, and its busy workers used to run on,
    orphaned, for the rest of their units (issue 48, item 8). On Linux the kernel sends the worker
    SIGKILL when its parent dies (``PR_SET_PDEATHSIG``); everywhere, a daemon thread checks the
    parent every half second and exits the worker once it has been re-parented.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # no libc or no prctl: the thread below still watches
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="dgsr-parent-watch", daemon=True).start()
    # The handlers below are this worker process's own for its whole life (the pool made it):
    # no caller's state is changed, so none is put back.
    if ready is not None:  # the parent collects what the workers found: it alone decides when they stop
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(_STOP_SIGNAL, _stop_requested)
        with contextlib.suppress(OSError):
            open(os.path.join(ready, str(os.getpid())), "w").close()
    if initializer is not None:
        initializer()


#: ``prctl`` option: the signal a process receives when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)  # orphaned: nobody is waiting for this worker's result


def discard_pool(pool: cf.Executor) -> None:
    """Shut ``pool`` down without waiting for its work and kill its workers.

    For work that is no longer needed (a target reached, Ctrl-C), and after a worker crash, when
    the survivors can stay blocked on the pool's queues and the interpreter would wait for them
    at exit.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    with contextlib.suppress(Exception):  # a pool broken by a crashed worker
        pool.shutdown(wait=False, kill_workers=True)
    for process in processes:
        with contextlib.suppress(Exception):  # already gone
            if process.is_alive():
                process.kill()


def start_ray(n_cpus: int | None, address: str | None = None) -> bool:
    """Initialise Ray unless it already is; True when this call started it (the caller shuts it down).

    Without ``address`` (and without ``RAY_ADDRESS`` in the environment) a local instance with
    ``n_cpus`` CPUs is started.
    """
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if address is not None:
        kwargs["address"] = address
    elif not os.environ.get("RAY_ADDRESS"):
        kwargs.update(num_cpus=n_cpus, include_dashboard=False)
    ray.init(**kwargs)
    return True


#: Longest single block of the parent on its workers' results.
WAIT_SLICE_SECONDS = 0.25


def wait_in_slices(handles: list[Any], timeout: float | None, until: str) -> set[Any]:
    """``cf.wait`` in short slices: a SIGINT that the OS delivers to another thread of this
    process (the pool's own threads) leaves a long blocking wait of the main thread asleep, and
    Python runs its handler, which raises the ``KeyboardInterrupt``, only once that wait returns."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_SLICE_SECONDS if end is None else max(0.0, min(WAIT_SLICE_SECONDS, end - time.monotonic()))
        done, pending = cf.wait(handles, timeout=left, return_when=until)
        if (done and until == cf.FIRST_COMPLETED) or not pending or (end is not None and time.monotonic() >= end):
            return done
