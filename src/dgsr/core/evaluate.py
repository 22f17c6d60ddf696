"""Vectorised float64 evaluation of expressions.

Evaluation never raises and never warns: overflow, division by zero and domain errors produce
non-finite values, and an expression that is non-finite on any training row is *invalid*
(R² = -inf) and never returned (CONTRACTS §1; docs/DESIGN.md, "Numerics").
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import ARITY, CONSTANT, NUMPY_FUNCTIONS


def as_columns(X: np.ndarray) -> np.ndarray:
    """``X`` of shape [n_rows, n_features] as contiguous float64 columns [n_features, n_rows].

    Search evaluates the same data thousands of times; contiguous columns make each variable
    leaf a free view.
    """
    return np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)


def evenly_spaced(n: int, k: int) -> np.ndarray:
    """Up to ``k`` row indices spread evenly over ``n`` rows (no draw from an rng)."""
    return np.unique(np.linspace(0, n - 1, min(n, k)).astype(int))


def evaluate_columns(expr: Expression, columns: np.ndarray) -> np.ndarray:
    """Values of ``expr`` on data given as columns [n_features, n_rows]; may be non-finite.

    The empty expression evaluates to zeros. The result always has shape [n_rows].
    """
    with np.errstate(all="ignore"):
        return evaluate_columns_unguarded(expr, columns)


def evaluate_columns_unguarded(expr: Expression, columns: np.ndarray) -> np.ndarray:
    """:func:`evaluate_columns` for a caller that already holds ``np.errstate(all="ignore")``
    (entering it costs as much as evaluating a small expression: the search enters it once per
    candidate, not once per term)."""
    n_rows = columns.shape[1]
    if expr.is_empty:
        return np.zeros(n_rows)
    stack: list = []
    ci = len(expr.constants)
    for s in reversed(expr.symbols):
        if s == CONSTANT:
            ci -= 1
            stack.append(np.float64(expr.constants[ci]))
        elif s[0] == "x" and s not in NUMPY_FUNCTIONS:
            stack.append(columns[int(s[1:])])
        elif ARITY[s] == 1:
            stack[-1] = NUMPY_FUNCTIONS[s](stack[-1])
        else:
            a = stack.pop()
            stack[-1] = NUMPY_FUNCTIONS[s](a, stack[-1])
    out = stack[0]
    if np.ndim(out) == 0:
        return np.full(n_rows, out, dtype=np.float64)
    return out


def evaluate(expr: Expression, X: np.ndarray) -> np.ndarray:
    """Values of ``expr`` on ``X`` [n_rows, n_features]; non-finite where undefined."""
    return evaluate_columns(expr, as_columns(X))


def evaluate_constant(expr: Expression) -> float:
    """Value of an expression without variables (nan where undefined)."""
    return float(evaluate_columns(expr, np.zeros((0, 1)))[0])


def all_finite(values: np.ndarray) -> bool:
    """True when every value is finite; one reduction instead of an isfinite mask."""
    with np.errstate(all="ignore"):  # inf + -inf in the sum is nan, and warns otherwise
        total = float(np.sum(values))
    if math.isfinite(total):
        return True
    # A huge but finite vector can overflow the sum; check element-wise only then.
    return bool(np.isfinite(values).all())


def weighted_mean(values: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """Mean of ``values``, weighted by ``sample_weight`` when given (the weights need not sum to 1)."""
    if sample_weight is None:
        return float(np.mean(values))
    return float(np.dot(sample_weight, values) / np.sum(sample_weight))


def weighted_var(y: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """Variance of ``y`` about its (weighted) mean, weighted like :func:`weighted_mean`."""
    if sample_weight is None:
        return float(np.var(y))
    centered = y - weighted_mean(y, sample_weight)
    return weighted_mean(centered * centered, sample_weight)


def r2_score(y: np.ndarray, y_pred: np.ndarray, y_var: float | None = None,
             sample_weight: np.ndarray | None = None) -> float:
    """Coefficient of determination (weighted by ``sample_weight`` when given); -inf for
    non-finite predictions.

    ``y_var`` (the variance of ``y``, weighted the same way) may be passed to avoid recomputing it
    on every call.
    """
    if not all_finite(y_pred):
        return -math.inf
    if y_var is None:
        y_var = weighted_var(y, sample_weight)
    with np.errstate(all="ignore"):
        mse = weighted_mean((y - y_pred) ** 2, sample_weight)
    if not math.isfinite(mse):
        return -math.inf
    if y_var <= 0.0:
        return 1.0 if mse == 0.0 else -math.inf
    return 1.0 - mse / y_var
