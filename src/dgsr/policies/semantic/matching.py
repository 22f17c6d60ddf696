"""Least-squares matching of target values against operand values, all pairs at once.

The semantic policy asks, for each node and mutation kind, which operand ``B`` would give the
values the node should take; the answer for every (target, operand) pair is a weighted fit of
``c*B + d``, read off three matrix products (:func:`match_operands`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgsr.core.kernels import compiler
from dgsr.policies.semantic.operand_library import OperandLibrary


@dataclass(frozen=True)
class OperandFit:
    """Weighted least-squares fits of every target row by every library operand
    (``[n_targets, n_operands]``).

    ``match`` is ``-log10`` of the weighted residual of ``c*B + d`` over the target's
    ``denominator`` (-inf where undefined). The sums it came from are kept so that the constants
    of the few candidates actually proposed are computed on demand (:meth:`at_many`).
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

    def at_many(self, t: np.ndarray, j: np.ndarray) -> list[tuple[float, float, float, float, float, float]]:
        """For each pair ``(t[i], j[i])`` (target, operand): ``c, d`` of ``c*B + d``, the slope
        ``c0`` through the origin, the residual sums of squares with and without ``d``, and the
        target's sum of squares (NaN slopes where the operand has no spread or no size). All the
        pairs of one expansion's candidates in one vectorised pass."""
        n, sy, syy = self.n[t, 0], self.sy[t, 0], self.syy[t, 0]
        sx, sxx, sxy = self.sx[t, j], self.sxx[t, j], self.sxy[t, j]
        with np.errstate(all="ignore"):
            var_x = sxx - sx * sx / n
            cov = sxy - sx * sy / n
            coef = np.where(var_x > 0, cov / var_x, math.nan)
            icpt = (sy - coef * sx) / n
            sse = np.maximum(syy - sy * sy / n - cov * coef, 0.0)
            coef0 = np.where(sxx > 0, sxy / sxx, math.nan)
            sse0 = np.maximum(syy - sxy * coef0, 0.0)
        return list(zip(coef.tolist(), icpt.tolist(), coef0.tolist(), sse.tolist(), sse0.tolist(), syy.tolist()))


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
        sx = weights @ lib.values_by_row
        sxx = weights @ lib.squares_by_row
        sxy = wt @ lib.values_by_row
        var_y = syy - sy * sy / n
        denominator = np.broadcast_to(np.asarray(denominator, dtype=np.float64), (len(targets), 1))
        counts = (weights > 0).sum(axis=1)
        if compiler.AVAILABLE:
            # The elementwise table in one compiled pass (the same operations in the same order,
            # so the same values): it cost twice the three products in numpy's many passes.
            ratio = np.empty(sx.shape)
            bad = np.empty(sx.shape, dtype=np.bool_)
            _match_table_jit(var_y[:, 0], np.ascontiguousarray(n[:, 0]), np.ascontiguousarray(sy[:, 0]),
                             np.ascontiguousarray(denominator[:, 0]), counts, sx, sxx, sxy, ratio, bad)
            match = -np.log10(ratio)  # numpy's log10 (the reference's), not libm's
        else:
            var_x = sxx - sx * sx / n
            cov = sxy - sx * sy / n
            sse = var_y - cov * cov / var_x
            match = -np.log10(np.clip(sse / denominator, 1e-12, 1.0))
            bad = ~(np.isfinite(match) & (var_x > 1e-12 * sxx) & (var_y > 0) & (counts[:, None] >= 5))
        match[bad] = -np.inf
    return OperandFit(match, n, sy, syy, var_y, denominator, sx, sxx, sxy)


def _match_table(var_y, n, sy, denominator, counts, sx, sxx, sxy, ratio, bad):  # pragma: no cover - compiled below
    """:func:`match_operands`' elementwise numpy lines before the ``log10``: the clipped share of
    the target left unexplained into ``ratio``, and which entries are undefined into ``bad``."""
    for t in range(sx.shape[0]):
        vy, nt, syt, den = var_y[t], n[t], sy[t], denominator[t]
        few = counts[t] < 5 or not vy > 0
        for j in range(sx.shape[1]):
            x, xx = sx[t, j], sxx[t, j]
            var_x = xx - x * x / nt
            cov = sxy[t, j] - x * syt / nt
            r = (vy - cov * cov / var_x) / den
            undefined = np.isnan(r)
            if not undefined:  # np.clip: NaN stays NaN
                r = min(max(r, 1e-12), 1.0)
            ratio[t, j] = r
            bad[t, j] = few or undefined or not var_x > 1e-12 * xx


_match_table_jit = compiler.compile_kernel(_match_table)


def top_matches(match: np.ndarray, sizes: np.ndarray, extra: np.ndarray, penalty: float,
                n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_top`` best finite entries of ``match - penalty * (sizes[None, :] + extra[:, None])``
    (``[n_targets, n_operands]``: an operand's match to a target less its parsimony penalty), best
    first, equal values in the order of their flat index: ``(flat indices, values)``. One
    compiled pass that keeps the best ``n_top`` as it goes, instead of the whole penalised table,
    a partition and a sort."""
    index = np.empty(max(n_top, 0), dtype=np.int64)
    value = np.empty(max(n_top, 0))
    if n_top <= 0:
        return index, value
    if compiler.AVAILABLE:
        count = _top_matches_jit(match, sizes, extra, penalty, index, value)
        return index[:count], value[:count]
    with np.errstate(all="ignore"):
        table = (match - penalty * (sizes[None, :] + extra[:, None])).ravel()
    order = np.argsort(-table, kind="stable")
    order = order[np.isfinite(table[order])][:n_top]
    return order, table[order]


def _top_matches(match, sizes, extra, penalty, index, value):  # pragma: no cover - compiled below
    """:func:`top_matches` into ``index``/``value`` (sorted, best first); returns how many."""
    n_top = index.shape[0]
    count = 0
    width = match.shape[1]
    for t in range(match.shape[0]):
        e = extra[t]
        for j in range(width):
            v = match[t, j] - penalty * (sizes[j] + e)
            if not np.isfinite(v):
                continue
            if count == n_top and not v > value[count - 1]:
                continue  # not better than the worst kept (an equal one came earlier: it stays)
            # insertion from the end: past every kept value at least as high (earlier ties first)
            i = count if count < n_top else n_top - 1
            while i > 0 and value[i - 1] < v:
                value[i] = value[i - 1]
                index[i] = index[i - 1]
                i -= 1
            value[i] = v
            index[i] = t * width + j
            if count < n_top:
                count += 1
    return count


_top_matches_jit = compiler.compile_kernel(_top_matches)
