"""How the package compiles its numerical kernels: numba, cached on disk.

numba is a hard dependency: every kernel compiles on first use and is cached on disk by numba
(``cache=True``), so a later process loads it in a fraction of a second.

:data:`AVAILABLE` is the switch for the callers that keep a numpy path of their own beside a
compiled one (the search's scoring of a candidate, the semantic policy's tables): False when the
environment variable ``DGSR_NO_JIT`` is set (to anything but ``0`` or empty). The inner constant
fit has no numpy path in the package (its numpy twin is a test oracle,
``tests/core/kernel_oracle.py``) and always runs compiled.
"""

from __future__ import annotations

import os

import numba

__all__ = ["AVAILABLE", "KERNELS", "cache_path", "compile_kernel", "compile_misses", "compiled_signatures"]

#: Whether callers with a numpy path of their own take the compiled one (``DGSR_NO_JIT`` unset).
AVAILABLE: bool = os.environ.get("DGSR_NO_JIT", "") in ("", "0")

#: Every kernel :func:`compile_kernel` made, in the order their modules defined them (module-level
#: functions, like the kernels themselves): what :func:`compiled_signatures` counts.
KERNELS: list = []


def compile_kernel(function, *, reassociate: bool = False):
    """``function`` compiled as every kernel of the package is (numba, cached on disk, numpy's
    error model, no GIL).

    ``reassociate``: let LLVM regroup the function's additions and multiplications (its only
    fast-math flag: NaN and infinity keep their meaning, no fused multiply-add), so a sum over
    rows runs in vector lanes rather than one addition after the other. For the kernels whose
    work is such sums (the normal equations, the moments of a prediction): their results then
    differ from a row-order sum in the last bits, and may differ between processors of other
    vector widths, never within one machine."""
    fastmath = {"reassoc"} if reassociate else False
    kernel = numba.njit(cache=True, error_model="numpy", nogil=True, fastmath=fastmath)(function)
    KERNELS.append(kernel)
    return kernel


def _kernel_stats() -> list:
    """numba's compile record of each kernel (``Dispatcher.stats``; a numba without it: none)."""
    return [s for s in (getattr(k, "stats", None) for k in KERNELS) if s is not None]


def compile_misses() -> int:
    """How many kernel signatures this process has compiled rather than loaded from numba's disk
    cache (0 once the cache is warm)."""
    return sum(sum(s.cache_misses.values()) for s in _kernel_stats())


def cache_path() -> str | None:
    """Where numba keeps the compiled kernels of the first kernel module (None: unknown)."""
    return next((s.cache_path for s in _kernel_stats() if s.cache_path), None)


def compiled_signatures() -> dict[str, int]:
    """How many type signatures each kernel has compiled (or loaded from the disk cache) in this
    process, by kernel name: a fit that adds none ran entirely on code compiled before it."""
    return {f"{k.py_func.__module__}.{k.py_func.__name__}": len(k.signatures) for k in KERNELS}
