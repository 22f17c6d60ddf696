"""Thread pinning of the numerical libraries: the one home of dgsr's thread counts.

dgsr runs one search per core: its matrix products are small, and a second BLAS (or torch)
thread costs more than it brings, most of all on a busy machine (docs/DESIGN.md, "One BLAS
thread"). Three kinds of setting, each with one function here:

* a child process's environment (:func:`one_thread_env`; a script's own before numpy loads:
  :func:`default_to_one_thread`), read by the libraries as they load;
* a ``with`` block of this process (:func:`blas_threads`, :func:`torch_threads`), the previous
  counts restored after it, so a caller's own setting holds outside dgsr's calls;
* a process dgsr owns, a pool worker or a benchmark run (:func:`pin_process_threads`), for the
  rest of its life.

torch is never imported here (this layer is below every torch layer): the torch functions act on
torch once it is loaded; a process that has not loaded it has no torch thread pool to size.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

#: The variables the numerical libraries read their thread count from when they load.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS")


def one_thread_env(threads: int = 1) -> dict[str, str]:
    """Environment variables that give a new process's numerical libraries ``threads`` threads each."""
    return dict.fromkeys(THREAD_ENV, str(threads))


def default_to_one_thread() -> None:
    """Every thread variable the environment does not set yet, set to 1: a script's first lines,
    before numpy loads (a user's own ``OMP_NUM_THREADS=4`` still wins)."""
    for var, value in one_thread_env().items():
        os.environ.setdefault(var, value)


@contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """BLAS on at most ``threads`` threads inside the block; the previous counts come back after."""
    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def set_torch_threads(threads: int) -> None:
    """torch's intra-op thread count, process-wide, where torch is loaded (for a process of its own)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch on ``threads`` threads inside the block (None: left as it is), the previous count
    restored after. Nothing happens where torch is not loaded."""
    torch = sys.modules.get("torch")
    if threads is None or torch is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def pin_process_threads(threads: int = 1) -> None:
    """Every numerical library of this process on ``threads`` threads for the rest of its life:
    those loaded now directly (BLAS and OpenMP pools, torch), those loaded later and child
    processes through the environment. Only for processes dgsr owns (pool workers, benchmark runs)."""
    os.environ.update(one_thread_env(threads))
    threadpool_limits(limits=threads)
    set_torch_threads(threads)
