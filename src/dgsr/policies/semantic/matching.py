"""Least-squares matching of target values against operand values, all pairs at once.

The semantic policy asks, for each node and mutation kind, which operand ``B`` would give the
values the node should take; the answer for every (target, operand) pair is a weighted fit of
``c*B + d``, read off three matrix products (:func:`match_operands`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgsr.policies.semantic.operand_library import OperandLibrary


@dataclass(frozen=True)
class OperandFit:
    """Weighted least-squares fits of every target row by every library operand
    (``[n_targets, n_operands]``).

    ``match`` is ``-log10`` of the weighted residual of ``c*B + d`` over the target's
    ``denominator`` (-inf where undefined). The sums it came from are kept so that the constants
    of the few candidates actually proposed are computed on demand (:meth:`at`).
    """

    match: np.ndarray
    n: np.ndarray
    sy: np.ndarray
    syy: np.ndarray
    var_y: np.ndarray
    denominator: np.ndarray
    sx: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray

    def at(self, t: int, j: int) -> tuple[float, float, float, float, float, float]:
        """``c, d`` of ``c*B + d``, the slope ``c0`` through the origin, the residual sums of
        squares with and without ``d``, and the target's sum of squares, for one pair."""
        n, sy, syy = float(self.n[t, 0]), float(self.sy[t, 0]), float(self.syy[t, 0])
        sx, sxx, sxy = float(self.sx[t, j]), float(self.sxx[t, j]), float(self.sxy[t, j])
        with np.errstate(all="ignore"):
            var_x = sxx - sx * sx / n
            cov = sxy - sx * sy / n
            coef = cov / var_x if var_x > 0 else math.nan
            icpt = (sy - coef * sx) / n
            sse = max(syy - sy * sy / n - cov * coef, 0.0)
            coef0 = sxy / sxx if sxx > 0 else math.nan
            sse0 = max(syy - sxy * coef0, 0.0)
        return coef, icpt, coef0, sse, sse0, syy


def match_operands(targets: np.ndarray, weights: np.ndarray, lib: OperandLibrary,
                   denominator: np.ndarray | float) -> OperandFit:
    """Weighted least-squares fit of every target row by ``c*B + d`` for every library operand
    ``B``, from three matrix products; rows with weight 0 are left out."""
    with np.errstate(all="ignore"):
        t = np.where(weights > 0, targets, 0.0)
        wt = weights * t
        n = weights.sum(axis=1, keepdims=True)
        sy = wt.sum(axis=1, keepdims=True)
        syy = (wt * t).sum(axis=1, keepdims=True)
        sx = weights @ lib.values.T
        sxx = weights @ lib.squares.T
        sxy = wt @ lib.values.T
        var_y = syy - sy * sy / n
        var_x = sxx - sx * sx / n
        cov = sxy - sx * sy / n
        sse = var_y - cov * cov / var_x
        denominator = np.broadcast_to(np.asarray(denominator, dtype=np.float64), (len(targets), 1))
        match = -np.log10(np.clip(sse / denominator, 1e-12, 1.0))
        counts = (weights > 0).sum(axis=1, keepdims=True)
        bad = ~(np.isfinite(match) & (var_x > 1e-12 * sxx) & (var_y > 0) & (counts >= 5))
        match[bad] = -np.inf
    return OperandFit(match, n, sy, syy, var_y, denominator, sx, sxx, sxy)
