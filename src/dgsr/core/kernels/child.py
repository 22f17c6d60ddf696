"""A new child's inner fit and its scoring in one compiled call.

Every child the search builds goes through the same chain: its structure taken apart
(:func:`dgsr.core.kernels.structure.structure`), its inner-fit model built and fitted on the
fitting rows (:func:`dgsr.core.kernels.structure.fit_structure`), then the fitted form scored on
all rows (:func:`dgsr.core.kernels.scoring.score_sum`). As four compiled calls with the Python between them
(argument checks, the result objects, the structure's memo) that chain cost about 35
microseconds a child beside the kernels' own work, at about 270 a child in all
(docs/notes/speed_plan.md, 0.8.6). :func:`fit_and_score` makes it one call that runs the same
kernels in the same order, so its numbers are theirs, bit for bit; the evaluator keeps its
caches, its budget and its archive offers in Python, as before.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from dgsr.core.kernels.codes import OPERATOR_TABLE, prefix_codes
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.fit import fit_jit
from dgsr.core.kernels.scoring import FIT_SKIPPED, SumScore, score_sum_jit
from dgsr.core.kernels.structure import COLLINEAR, analyse_jit, model_jit

__all__ = ["NOT_FITTED", "ChildScore", "fit_and_score"]

#: :attr:`ChildScore.fit_status` when the expression has no inner constant (nothing was fitted).
NOT_FITTED = -1


class ChildScore(NamedTuple):
    """What :func:`fit_and_score` found for one child.

    ``fit_status``: :data:`NOT_FITTED`, or the inner fit's status (0 done, 1 a term non-finite
    on a fitting row, :data:`dgsr.core.kernels.structure.COLLINEAR`: nothing else was computed, the
    caller takes the least-squares path); ``passes``: the fit's passes over the fitting rows;
    ``constants``: the fitted constants when the fit improved the child, else None. ``score``:
    the scoring of that form on all rows (None when the fit was collinear), and ``varying``,
    ``varying_size``, ``lengths`` its structure's fields (:class:`dgsr.core.kernels.scoring.EncodedSum`);
    ``terms_size`` the node count of the weighted sum of the terms the scoring's term fit used
    (``b + sum_i w_i * t_i``) and ``weights_finite`` whether its weights are all finite.
    A named tuple, as :class:`dgsr.core.kernels.scoring.SumScore` (built for every child).
    """

    fit_status: int
    passes: int
    constants: tuple[float, ...] | None
    score: SumScore | None
    varying: np.ndarray
    varying_size: int
    lengths: np.ndarray
    fit_terms: bool
    terms_size: int = 0
    weights_finite: bool = True


def _fit_and_score(codes, theta, fit_columns, fit_y, steps, tau, ftol, exact, rel_tol, columns, y, linear_terms,
                   max_size, table):  # pragma: no cover - compiled below
    """:func:`fit_and_score`'s chain of kernels; ``theta`` is overwritten with the fitted constants."""
    (ops, args, spans, inner, sum_ops, sum_args, starts, depth, signs, lengths, varying,
     varying_size) = analyse_jit(codes)
    passes = 0
    fit_status = NOT_FITTED
    improved = False
    if inner > 0 and steps > 0:
        model_ops, model_args, params, weights_at, child_back, model_back = model_jit(ops, args, spans, theta)
        best, improved, passes, fit_status = fit_jit(model_ops, model_args, params, weights_at, fit_columns,
                                                     fit_y, steps, tau, ftol, exact, rel_tol, table)
        if fit_status == COLLINEAR:
            improved = False
        elif improved:
            for i in range(child_back.shape[0]):
                theta[child_back[i]] = best[model_back[i]]
    m = starts.shape[0] - 1
    values = np.empty((m, columns.shape[1]))
    weights = np.zeros(varying.shape[0])
    kept = np.ones(varying.shape[0], dtype=np.int64)
    fit_terms = linear_terms and varying.shape[0] >= 2 and varying_size <= max_size
    mean = var = cov = intercept = mse = 0.0
    status = FIT_SKIPPED
    if fit_status != COLLINEAR:
        mean, var, cov, status, intercept, mse = score_sum_jit(
            sum_ops, sum_args, starts, signs, varying, depth, theta, columns, y, fit_terms, values, weights, kept,
            table)
    # The weighted sum the term fit stands for: its node count and whether its weights are finite.
    terms_size = 1
    weights_finite = True
    for i in range(varying.shape[0]):
        if kept[i]:
            terms_size += lengths[varying[i]] + 3
        if not np.isfinite(weights[i]):
            weights_finite = False
    return (fit_status, passes, improved, mean, var, cov, status, intercept, mse, weights, kept, values, varying,
            varying_size, lengths, fit_terms, terms_size, weights_finite)


_fit_and_score_jit = compile_kernel(_fit_and_score)


@lru_cache(maxsize=1 << 15)
def _prefix_codes(symbols: tuple[str, ...]) -> np.ndarray:
    """:func:`dgsr.core.kernels.codes.prefix_codes`, kept per structure: a parent's children share
    structures, and the kernel only reads the array (left writable: a read-only array is another
    type to numba, another compiled signature)."""
    return prefix_codes(symbols)


def fit_and_score(symbols: tuple[str, ...], constants: tuple[float, ...], fit_columns: np.ndarray,
                  fit_y: np.ndarray, steps: int, columns: np.ndarray, y: np.ndarray, *, linear_terms: bool,
                  max_size: int, tau: float, ftol: float, exact: float, rel_tol: float) -> ChildScore:
    """The inner fit of the (non-empty) expression ``symbols``/``constants`` on ``fit_columns``
    against ``fit_y`` (at most ``steps`` passes; none when it has no inner constant), then the
    scoring of the result on ``columns`` against ``y`` (:func:`dgsr.core.kernels.scoring.score_sum`,
    its term fit when ``linear_terms`` and at least two varying terms fit ``max_size``). All
    arrays contiguous float64; compiled."""
    theta = np.array(constants, dtype=np.float64) if constants else np.zeros(1)
    (fit_status, passes, improved, mean, var, cov, status, intercept, mse, weights, kept, values, varying,
     varying_size, lengths, fit_terms, terms_size, weights_finite) = _fit_and_score_jit(
        _prefix_codes(symbols), theta, fit_columns, fit_y, steps, tau, ftol, exact, rel_tol, columns, y,
        linear_terms, max_size, OPERATOR_TABLE[0])
    fit_status = int(fit_status)
    score = None
    if fit_status != COLLINEAR:
        score = SumScore(mean, var, cov, int(status), weights, intercept, mse, kept, values)
    return ChildScore(fit_status, int(passes), tuple(theta.tolist()) if improved else None, score, varying,
                      int(varying_size), lengths, bool(fit_terms), int(terms_size), bool(weights_finite))
