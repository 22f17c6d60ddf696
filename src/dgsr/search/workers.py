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


def spawn_pool(n_workers: int, initializer: Callable[[], Any] | None = None) -> cf.Executor:
    """A process pool of ``n_workers`` fresh interpreters that run ``initializer`` first.

    Each worker's numerical libraries use one thread: ``OMP_NUM_THREADS=1`` is in its environment
    before numpy loads.
    """
    from joblib.externals.loky import ProcessPoolExecutor

    return ProcessPoolExecutor(n_workers, initializer=initializer, env={"OMP_NUM_THREADS": "1"})


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
