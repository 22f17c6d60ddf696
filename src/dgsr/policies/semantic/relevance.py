"""How strongly each variable relates to a target: what the operand library ranks variables by."""

from __future__ import annotations

import numpy as np

__all__ = ["rank", "relevance"]


def rank(v: np.ndarray) -> np.ndarray:
    """The rank of each entry of ``v`` (0 for the smallest; ties in order of position), as floats."""
    return np.argsort(np.argsort(v, kind="stable"), kind="stable").astype(np.float64)


def relevance(columns: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Absolute Spearman correlation of each column with ``y`` and with ``|y - median|``
    (so symmetric laws such as ``x**2`` count too)."""
    n_features, n = columns.shape
    if n < 3:
        return np.zeros(n_features)
    targets = [rank(y), rank(np.abs(y - np.median(y)))]
    out = np.zeros(n_features)
    for j in range(n_features):
        rx = rank(columns[j])
        rx -= rx.mean()
        sx = float(np.sqrt(rx @ rx))
        if sx == 0:
            continue
        rxs = [rx, rank(np.abs(columns[j] - np.median(columns[j])))]
        for r_x in rxs:
            r_x = r_x - r_x.mean()
            sxx = float(np.sqrt(r_x @ r_x))
            for t in targets:
                t = t - t.mean()
                st = float(np.sqrt(t @ t))
                if sxx > 0 and st > 0:
                    out[j] = max(out[j], abs(float(r_x @ t)) / (sxx * st))
    return out
