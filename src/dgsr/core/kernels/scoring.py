"""Compiled scoring of a candidate on the search's rows: one call for what the search asks of it.

The search values every child by the R² of its linear rescaling ``a*f + b`` and, for a sum, of
the least-squares reweighting ``b + sum_i w_i * t_i`` of its additive terms
(:mod:`dgsr.search.evaluator`). In numpy that is one array call per node and per statistic, and
on a few hundred rows the calls' overhead, not their arithmetic, is the cost. :func:`score_sum`
does it in one compiled pass: each term's values (node by node over all rows, so the row loops
vectorise), the moments of their signed sum (mean, variance, covariance with ``y``) and the
normal equations of the term weights, solved by Cholesky. A term whose values repeat an earlier
term's exactly is fitted once (its copies get weight 0 and are left out of the weighted sum, as in
the numpy path); a numerically collinear set of distinct terms is reported instead of solved, so
the caller takes numpy's minimum-norm least squares for it, as the numpy path does.

The search's numpy path (weighted rows, or :data:`dgsr.core.kernels.compiler.AVAILABLE` off)
stays the reference, and gives the same numbers up to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from dgsr.core.kernels.codes import CONST_CODE, OPERATOR_TABLE, VAR_CODE
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.custom_rows import node_binary_in_place_jit, node_unary_in_place_jit
from dgsr.core.kernels.linalg import centered_normal_equations_jit, cholesky_solve_jit
from dgsr.core.kernels.structure import structure

__all__ = ["FIT_COLLINEAR", "FIT_DONE", "FIT_NON_FINITE", "FIT_SKIPPED", "EncodedSum", "SumScore", "encode_sum",
           "score_sum", "score_sum_jit"]

# A term weight whose Cholesky pivot (squared) falls below this share of the largest diagonal
# entry is treated as collinear: numpy's lstsq (rcond 1e-12) handles those, not Cholesky.
_COLLINEAR = 1e-10

# Status of the term fit.
FIT_DONE, FIT_NON_FINITE, FIT_COLLINEAR, FIT_SKIPPED = 0, 1, 2, 3


@dataclass(frozen=True)
class EncodedSum:
    """A prefix sequence's additive terms as one postfix program (terms one after another).

    ``starts[i]:starts[i + 1]`` is term ``i``'s program; ``signs[i]`` its sign in the sum;
    ``varying`` the terms with variables (the ones the term fit weights, in order);
    ``varying_size`` the size of :func:`dgsr.core.linear_terms.weighted_sum` of those terms;
    ``depth`` the stack slots the longest program needs; ``lengths`` each term's size.
    """

    ops: np.ndarray
    args: np.ndarray
    starts: np.ndarray
    signs: np.ndarray
    varying: np.ndarray
    varying_size: int
    depth: int
    lengths: np.ndarray


@lru_cache(maxsize=1 << 15)
def encode_sum(symbols: tuple[str, ...]) -> EncodedSum:
    """The additive terms of the (non-empty) prefix sequence ``symbols`` as one program; constant
    arguments index the whole expression's constants. Memoised by structure (pure); the terms and
    their programs come from the compiled :func:`dgsr.core.kernels.structure.structure`."""
    s = structure(symbols)
    return EncodedSum(s.sum_ops, s.sum_args, s.starts, s.signs, s.varying, s.varying_size, s.depth, s.lengths)


def _evaluate_terms(ops, args, starts, theta, columns, values, stack, table):  # pragma: no cover - compiled below
    """Each term's values into ``values[i]``: node by node, each node over all rows (one loop per
    operator, so the loops vectorise; sin and cos by :func:`dgsr.core.kernels.rows.trig_in_place_jit`)."""
    n = columns.shape[1]
    for t in range(starts.shape[0] - 1):
        sp = 0
        for k in range(starts[t], starts[t + 1]):
            op = ops[k]
            if op == CONST_CODE:
                c = theta[args[k]]
                for r in range(n):
                    stack[sp, r] = c
                sp += 1
            elif op == VAR_CODE:
                j = args[k]
                for r in range(n):
                    stack[sp, r] = columns[j, r]
                sp += 1
            elif op <= 3:  # binary: the left operand is on top
                node_binary_in_place_jit(op, stack[sp - 1], stack[sp - 2], table)
                sp -= 1
            else:
                node_unary_in_place_jit(op, stack[sp - 1], table)
        for r in range(n):
            values[t, r] = stack[0, r]


def _distinct_terms(values, varying, kept, n):  # pragma: no cover - compiled below
    """The varying terms to fit, in order: a varying term equal to an earlier kept one at every
    row is that term again, fitted once (``kept[i]`` 0 for it, 1 for the others)."""
    distinct = np.empty(varying.shape[0], dtype=np.int64)
    k = 0
    for i in range(varying.shape[0]):
        a = values[varying[i]]
        kept[i] = 1
        for j in range(k):
            b = values[distinct[j]]
            same = True
            for r in range(n):
                if a[r] != b[r]:
                    same = False
                    break
            if same:
                kept[i] = 0
                break
        if kept[i]:
            distinct[k] = varying[i]
            k += 1
    return distinct[:k]


def _fit_distinct(values, distinct, y, residual, solved, n):  # pragma: no cover - compiled below
    """The least-squares weights of the ``distinct`` terms into ``solved``: ``(status, intercept,
    mse)`` (status ``FIT_DONE``, ``FIT_NON_FINITE`` or ``FIT_COLLINEAR``; ``residual``: scratch)."""
    k = distinct.shape[0]
    means = np.empty(k)
    gram = np.empty((k, k))
    rhs = np.empty(k)
    y_mean = centered_normal_equations_jit(values, distinct, y, means, gram, rhs)
    largest = 0.0
    for i in range(k):
        if not (np.isfinite(means[i]) and np.isfinite(gram[i, i]) and np.isfinite(rhs[i])):
            return 1, 0.0, 0.0
        largest = max(largest, gram[i, i])
    # Each squared pivot checked against the scale of the diagonal: below it, numpy's lstsq decides.
    if not largest > 0.0 or not cholesky_solve_jit(gram, rhs, solved, _COLLINEAR * largest):
        return 2, 0.0, 0.0
    intercept = y_mean
    for i in range(k):
        intercept -= solved[i] * means[i]
    for r in range(n):
        residual[r] = y[r] - y_mean
    for i in range(k):
        w, mu, term = solved[i], means[i], values[distinct[i]]
        for r in range(n):
            residual[r] -= w * (term[r] - mu)
    mse = 0.0
    for r in range(n):
        mse += residual[r] * residual[r]
    mse /= n
    return 0, intercept, mse


def _score_sum(ops, args, starts, signs, varying, depth, theta, columns, y, fit_terms,
               values, weights, kept, table):  # pragma: no cover - compiled below
    """Returns ``(mean, var, cov, status, intercept, mse)``: the moments of the signed sum of the
    terms (``cov`` with ``y``, all divided by n; non-finite when a value is), the term fit's
    status and, when done, its intercept and mean squared error (its weights in ``weights``, 1 in
    ``kept`` for the varying terms fitted, 0 for exact copies of an earlier one)."""
    m = starts.shape[0] - 1
    n = columns.shape[1]
    stack = np.empty((depth, n))
    _evaluate_terms_jit(ops, args, starts, theta, columns, values, stack, table)
    y_mean = 0.0
    for r in range(n):
        y_mean += y[r]
    y_mean /= n
    pred = stack[0]  # reused as the signed sum's buffer
    # Term by term over all rows (the row loops vectorise; per row the same additions in the
    # same order as a row at a time), then the total in row order.
    for r in range(n):
        pred[r] = 0.0
    for t in range(m):
        sign = signs[t]
        term = values[t]
        for r in range(n):
            pred[r] += sign * term[r]
    total = 0.0
    for r in range(n):
        total += pred[r]
    mean = total / n
    var = 0.0
    cov = 0.0
    for r in range(n):
        c = pred[r] - mean
        var += c * c
        cov += c * (y[r] - y_mean)
    var /= n
    cov /= n
    if not fit_terms:
        return mean, var, cov, 3, 0.0, 0.0
    distinct = _distinct_terms_jit(values, varying, kept, n)
    solved = np.empty(distinct.shape[0])
    # The signed sum is no longer needed: its buffer takes the residuals.
    status, intercept, mse = _fit_distinct_jit(values, distinct, y, pred, solved, n)
    if status != 0:
        return mean, var, cov, status, 0.0, 0.0
    j = 0
    for i in range(varying.shape[0]):
        if kept[i]:
            weights[i] = solved[j]
            j += 1
    return mean, var, cov, 0, intercept, mse


_evaluate_terms_jit = compile_kernel(_evaluate_terms)
# The term fit and the moments: sums over rows (compile_kernel's ``reassociate``).
_distinct_terms_jit = compile_kernel(_distinct_terms)
_fit_distinct_jit = compile_kernel(_fit_distinct, reassociate=True)
score_sum_jit = compile_kernel(_score_sum, reassociate=True)


class SumScore(NamedTuple):
    """What :func:`score_sum` computes: ``mean``, ``var``, ``cov`` of the signed sum of the terms
    (population moments, ``cov`` with ``y``; non-finite when some value is); the term fit's
    ``status`` (``FIT_*``) and, when ``FIT_DONE``, ``weights`` (of ``EncodedSum.varying``),
    ``intercept`` and ``mse``; ``kept``: which varying terms the fit used (1) and which repeat an
    earlier one's values exactly (0, weight 0), all 1 when the fit was skipped; ``values``: every
    term's values [m, n]."""

    mean: float
    var: float
    cov: float
    status: int
    weights: np.ndarray
    intercept: float
    mse: float
    kept: np.ndarray
    values: np.ndarray

    @property
    def distinct(self) -> np.ndarray:
        """The mask of the varying terms the fit used (:attr:`kept` as booleans)."""
        return self.kept.astype(bool)


def score_sum(encoded: EncodedSum, constants: tuple[float, ...], columns: np.ndarray, y: np.ndarray,
              fit_terms: bool) -> SumScore:
    """Evaluate ``encoded`` at ``constants`` on ``columns`` (contiguous [n_features, n_rows]) and
    score it against ``y`` (compiled). The term fit runs
    only when ``fit_terms`` (the caller decides: at least two varying terms that fit the size
    limit)."""
    m = encoded.starts.shape[0] - 1
    values = np.empty((m, columns.shape[1]))
    weights = np.zeros(encoded.varying.shape[0])
    kept = np.ones(encoded.varying.shape[0], dtype=np.int64)
    theta = np.array(constants, dtype=np.float64) if constants else np.zeros(1)
    mean, var, cov, status, intercept, mse = score_sum_jit(
        encoded.ops, encoded.args, encoded.starts, encoded.signs, encoded.varying, encoded.depth, theta,
        columns, y, fit_terms, values, weights, kept, OPERATOR_TABLE[0])
    return SumScore(mean, var, cov, int(status), weights, intercept, mse, kept, values)
