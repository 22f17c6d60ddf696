"""Data of a law family and its fit at a fixed budget: what the mechanism tests share."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.metrics import r2_score

from dgsr import SymbolicRegressor
from dgsr.search.policy import Policy

Law = Callable[[np.ndarray], np.ndarray]


def law_data(law: Law, ranges: Sequence[tuple[float, float]], noise: float, seed: int) -> tuple[np.ndarray, ...]:
    """300 training rows in ``ranges`` with ``noise`` (a share of the target's RMS), and 1,000
    rows of a box stretched by a quarter of each range on both sides, with the noise-free law."""
    rng = np.random.default_rng(seed)
    lo, hi = np.array(ranges, dtype=float).T
    X = lo + rng.random((300, len(ranges))) * (hi - lo)
    y = law(X)
    y_noisy = y + noise * np.sqrt(np.mean(y**2)) * rng.normal(size=len(y))
    stretched = lo - 0.25 * (hi - lo) + rng.random((1000, len(ranges))) * 1.5 * (hi - lo)
    stretched = np.maximum(stretched, 0.5 * lo)  # the laws' domains: positive variables stay positive
    return X, y_noisy, stretched, law(stretched)


def fit_at_budget(law: Law, ranges: Sequence[tuple[float, float]], noise: float, seed: int, policy: Policy,
                  budget: int) -> tuple[float, int]:
    """The selected formula's R² on the stretched box against the noise-free law, and its size,
    after a fit of ``budget`` evaluations with ``policy``."""
    X, y, stretched, truth = law_data(law, ranges, noise, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_time=None, max_evaluations=budget, random_state=0, policy=policy).fit(X, y)
        return r2_score(truth, est.predict(stretched)), int(est.equations_.iloc[est.best_index_]["complexity"])
