"""How the package compiles its numerical kernels: numba when it is there, nothing otherwise.

numba is optional. :data:`AVAILABLE` is False when it cannot be imported, or when the
environment variable ``DGSR_NO_JIT`` is set (to anything but ``0`` or empty); callers then use
the numpy path, which gives the same numbers up to rounding. Kernels compile on first use and
are cached on disk by numba (``cache=True``), so a later process loads them in a fraction of a
second. :mod:`dgsr.core.jit` re-exports these names.
"""

from __future__ import annotations

import os

try:  # the fallback is the numpy path, so a missing or broken numba is not an error
    import numba
except Exception:  # noqa: BLE001 - any import failure (missing, wrong llvmlite) means "no JIT"
    numba = None

#: Whether the compiled kernels are used (numba importable and ``DGSR_NO_JIT`` unset).
AVAILABLE: bool = numba is not None and os.environ.get("DGSR_NO_JIT", "") in ("", "0")

#: Every kernel :func:`compile_kernel` made, in the order their modules defined them (module-level
#: functions, like the kernels themselves): what :func:`compiled_signatures` counts.
KERNELS: list = []


def compile_kernel(function, *, reassociate: bool = False):
    """``function`` compiled as every kernel of the package is (numba, cached on disk, numpy's
    error model, no GIL), or None when the kernels are off (:data:`AVAILABLE`).

    ``reassociate``: let LLVM regroup the function's additions and multiplications (its only
    fast-math flag: NaN and infinity keep their meaning, no fused multiply-add), so a sum over
    rows runs in vector lanes rather than one addition after the other. For the kernels whose
    work is such sums (the normal equations, the moments of a prediction): their results then
    differ from a row-order sum in the last bits, and may differ between processors of other
    vector widths, never within one machine."""
    if not AVAILABLE:
        return None
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
