"""Worker processes for independent pieces of work: the one home of dgsr's process-pool and Ray
plumbing, shared by the parallel search (:mod:`dgsr.search.parallel`) and expert iteration
(:mod:`dgsr.online`).

Local pools use ``spawn``: forking a process that may hold torch's threads is unsafe. Each worker
runs one thread (the processes share the cores). Ray joins the cluster named by ``RAY_ADDRESS``
(or an explicit address) or starts a local instance; whoever starts Ray shuts it down.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

#: Where independent work can run: a local process pool, or Ray.
BACKENDS = ("local", "ray")


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else a ValueError naming them."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def one_thread_per_process() -> None:
    """Pool initializer: numerical libraries in a worker use one thread."""
    os.environ["OMP_NUM_THREADS"] = "1"


def spawn_pool(n_workers: int, initializer: Callable[[], Any] = one_thread_per_process) -> cf.ProcessPoolExecutor:
    """A ``spawn`` process pool of ``n_workers`` whose workers run ``initializer`` first."""
    return cf.ProcessPoolExecutor(n_workers, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=initializer)


def discard_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting and kill its workers.

    For work that is no longer needed (a target reached, Ctrl-C), and after a worker crash, when
    the survivors can stay blocked on the pool's queues and the interpreter would wait for them
    at exit.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
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
