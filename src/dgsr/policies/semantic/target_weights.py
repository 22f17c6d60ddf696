"""Per-row weights of the semantic policy's targets: rows that cannot be trusted (non-finite, or far
outside the bulk of their target, as next to a pole of a division) weigh nothing, and no row weighs more
than 1,000 times the median, so one row near a pole cannot decide a match."""

from __future__ import annotations

import numpy as np

from dgsr.core.kernels import compiler


def _row_medians(a: np.ndarray) -> np.ndarray:
    """Median of the finite entries of each row (NaN for a row with none), as ``[n_rows, 1]``."""
    finite = np.isfinite(a)
    counts = finite.sum(axis=1)
    ordered = np.sort(np.where(finite, a, np.inf), axis=1)
    idx = np.clip((counts - 1) // 2, 0, a.shape[1] - 1)
    med = ordered[np.arange(a.shape[0]), idx]
    return np.where(counts > 0, med, np.nan)[:, None]


def _not_extreme(targets: np.ndarray) -> np.ndarray:
    """False at rows whose target is far outside the bulk of its row (poles of a division)."""
    with np.errstate(all="ignore"):
        dev = np.abs(targets - _row_medians(targets))
        mad = _row_medians(dev)
        return ~(dev > 50.0 * np.where(mad > 0, mad, np.inf))


def clean_weights(weights: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Weights with masked rows (non-finite target or weight, or a target far outside its bulk)
    at zero, and each row's weights capped at 1,000 times their median so one row near a pole
    cannot decide a match. Compiled when numba is there (the same values, bit for bit)."""
    if not compiler.AVAILABLE:
        return clean_weights_numpy(weights, targets)
    out = np.empty(weights.shape)
    _clean_weights_jit(np.ascontiguousarray(weights, dtype=np.float64), np.ascontiguousarray(targets, dtype=np.float64),
                       out)
    return out


def clean_weights_numpy(weights: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """:func:`clean_weights` in numpy (the reference, and the path without numba)."""
    with np.errstate(all="ignore"):
        ok = np.isfinite(targets) & np.isfinite(weights) & (weights > 0) & _not_extreme(targets)
        w = np.where(ok, weights, np.nan)
        cap = 1e3 * _row_medians(w)
        w = np.where(ok, np.minimum(np.nan_to_num(w), np.nan_to_num(cap, nan=np.inf)), 0.0)
    return w


def _median(values, mask, buffer):  # pragma: no cover - compiled below
    """:func:`_row_medians` of one row: the lower middle of its finite entries where ``mask``."""
    k = 0
    for r in range(values.shape[0]):
        if mask[r] and np.isfinite(values[r]):
            buffer[k] = values[r]
            k += 1
    if k == 0:
        return np.nan
    # Quickselect (Hoare's partition, middle pivot): the lower middle in linear time, the same
    # element whatever the method; numba compiles np.sort's or np.partition's generic code for
    # several seconds on a user's first fit.
    want = (k - 1) // 2
    lo, hi = 0, k - 1
    while lo < hi:
        pivot = buffer[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while buffer[i] < pivot:
                i += 1
            while buffer[j] > pivot:
                j -= 1
            if i <= j:
                buffer[i], buffer[j] = buffer[j], buffer[i]
                i += 1
                j -= 1
        if want <= j:
            hi = j
        elif want >= i:
            lo = i
        else:
            break
    return buffer[want]


def _clean_weights(weights, targets, out):  # pragma: no cover - compiled below
    """:func:`clean_weights_numpy`, row by row."""
    n = weights.shape[1]
    buffer = np.empty(n)
    dev = np.empty(n)
    everywhere = np.ones(n, dtype=np.bool_)
    ok = np.empty(n, dtype=np.bool_)
    for t in range(weights.shape[0]):
        target, weight = targets[t], weights[t]
        middle = _median_jit(target, everywhere, buffer)
        for r in range(n):
            dev[r] = abs(target[r] - middle)
        mad = _median_jit(dev, everywhere, buffer)
        scale = 50.0 * (mad if mad > 0 else np.inf)
        for r in range(n):
            ok[r] = np.isfinite(target[r]) and np.isfinite(weight[r]) and weight[r] > 0 and not dev[r] > scale
        cap = 1e3 * _median_jit(weight, ok, buffer)
        if np.isnan(cap):
            cap = np.inf
        elif np.isinf(cap):  # nan_to_num's large finite stand-ins
            cap = _LARGEST if cap > 0 else -_LARGEST
        for r in range(n):
            out[t, r] = min(weight[r], cap) if ok[r] else 0.0


_LARGEST = float(np.finfo(np.float64).max)
_median_jit = compiler.compile_kernel(_median)
_clean_weights_jit = compiler.compile_kernel(_clean_weights)
