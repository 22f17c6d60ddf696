"""Per-row weights of the semantic policy's targets: rows that cannot be trusted (non-finite, or far
outside the bulk of their target, as next to a pole of a division) weigh nothing, and no row weighs more
than 1,000 times the median, so one row near a pole cannot decide a match."""

from __future__ import annotations

import numpy as np


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
    cannot decide a match."""
    with np.errstate(all="ignore"):
        ok = np.isfinite(targets) & np.isfinite(weights) & (weights > 0) & _not_extreme(targets)
        w = np.where(ok, weights, np.nan)
        cap = 1e3 * _row_medians(w)
        w = np.where(ok, np.minimum(np.nan_to_num(w), np.nan_to_num(cap, nan=np.inf)), 0.0)
    return w
