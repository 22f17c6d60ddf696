"""Sums of terms and their linear coefficients, solved in closed form.

The search values a candidate with its outer linear coefficients fitted without iterating:
:func:`linear_scaling` (``a*f + b``) and, for a sum, :func:`fit_term_weights` (``b + sum_i w_i *
term_i`` by least squares over the :func:`additive_terms`); :func:`weighted_sum` and
:func:`scale_expression` build the expressions these describe. Pure functions; numpy only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dgsr.core.evaluate import evaluate_columns, weighted_mean
from dgsr.core.expression import Expression, MalformedExpression
from dgsr.core.operators import ARITY, CONSTANT, SymbolTable

__all__ = ["additive_terms", "first_occurrences", "fit_term_weights", "linear_scaling", "scale_expression",
           "term_spans", "weighted_model", "weighted_sum"]


def linear_scaling(values: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Closed-form least squares ``(a, b)`` minimising ``sum((a * values + b - y)^2)``.

    ``a = cov(values, y) / var(values)``, ``b = mean(y) - a * mean(values)``. Where ``values``
    is constant the slope is undetermined and ``a = 1`` is returned (the offset absorbs the
    rest); where ``values`` or the result is non-finite, the identity ``(1, 0)``.
    """
    values = np.asarray(values, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        mean_v, mean_y = float(np.mean(values)), float(np.mean(y))
        dv = values - mean_v
        var_v = float(np.dot(dv, dv))
        if not (math.isfinite(var_v) and math.isfinite(mean_y)):
            return 1.0, 0.0
        if var_v <= 1e-300:
            return 1.0, mean_y - mean_v
        a = float(np.dot(dv, y - mean_y)) / var_v
        b = mean_y - a * mean_v
    if not (math.isfinite(a) and math.isfinite(b)):
        return 1.0, 0.0
    return a, b


def scale_expression(expr: Expression, a: float, b: float) -> Expression:
    """``a * expr + b`` as an expression (prefix ``add mul c <expr> c``), always 4 nodes larger.

    Kept explicit even when ``a`` is 1 or ``b`` is 0, so the result's structure depends only on
    ``expr``; the caller checks the size limit and simplifies for display.
    """
    return weighted_sum([expr], np.array([a]), b)


def additive_terms(expr: Expression) -> list[tuple[float, Expression]]:
    """The top-level terms of ``expr`` through ``add``/``sub``: ``expr == sum(sign * term)``.

    ``x0*x1 - (sin(x2) + 3)`` gives ``[(1, x0*x1), (-1, sin(x2)), (-1, 3)]``; an expression whose
    root is neither operator is its own single term.
    """
    if expr.is_empty:
        return []
    symbols, constants = expr.symbols, expr.constants
    return [(sign, Expression._sliced(symbols[start:end], constants[c0:c1], variables))
            for sign, start, end, c0, c1, variables in term_spans(symbols)]


_LEAF_CONSTANT, _UNARY, _BINARY = -1, -2, -3


# Symbol -> what the term scan needs of it: a variable's column (>= 0), ``_LEAF_CONSTANT``,
# ``_UNARY`` or ``_BINARY``.
_KIND = SymbolTable({CONSTANT: _LEAF_CONSTANT, **{s: _BINARY if a == 2 else _UNARY for s, a in ARITY.items()}},
                    lambda column: column, lambda op: _BINARY if ARITY[op] == 2 else _UNARY)


@lru_cache(maxsize=1 << 15)
def term_spans(symbols: tuple[str, ...]) -> tuple[tuple[float, int, int, int, int, frozenset[int]], ...]:
    """``(sign, start, end, first constant, end of constants, variables)`` of each top-level
    additive term of a (non-empty) prefix sequence. It depends on the structure alone, and the
    search asks for the terms of every child twice (its inner fit and its score), so it is
    memoised by the symbols; the memo is a pure function's, bounded, and never changes a result.

    One left-to-right scan: a term starts wherever a node is not ``add``/``sub`` while every node
    above it is; its sign is the product of the ``sub`` right-hand sides it lies in."""
    out = []
    # Pending slots of the add/sub spine, innermost last: the sign of the subtree that fills each.
    slots = [1.0]
    constants = 0
    i, n = 0, len(symbols)
    while i < n:
        sign = slots.pop()
        symbol = symbols[i]
        if symbol == "add" or symbol == "sub":
            slots.append(-sign if symbol == "sub" else sign)  # the right operand, filled second
            slots.append(sign)  # the left operand, filled first
            i += 1
            continue
        end, need, first = i, 1, constants
        variables = set()
        while need:  # the term's subtree: the shortest run of symbols that completes one node
            kind = _KIND[symbols[end]]
            if kind >= 0:  # a variable's column
                variables.add(kind)
                need -= 1
            elif kind == _LEAF_CONSTANT:
                constants += 1
                need -= 1
            elif kind == _BINARY:
                need += 1
            end += 1
        out.append((sign, i, end, first, constants, frozenset(variables)))
        i = end
    return tuple(out)


def first_occurrences(indices: list[int], values: list[np.ndarray]) -> list[int]:
    """The ``indices`` whose ``values`` row differs (at some row, NaN counting as different) from
    every earlier one kept: a term that repeats another exactly gets one weight, not two halves."""
    kept: list[int] = []
    for i in indices:
        if not any(np.array_equal(values[i], values[j]) for j in kept):
            kept.append(i)
    return kept


def fit_term_weights(term_values: np.ndarray, y: np.ndarray,
                     sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, float, float] | None:
    """Least squares ``y ~ b + sum_i w_i * term_values[i]`` (term values [m, n]), weighted by
    ``sample_weight`` (normalised to mean 1) when given.

    Returns ``(w, b, mse)``, or None when a term is non-finite or the fit is not finite.
    Collinear terms get the minimum-norm solution.
    """
    rw = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    with np.errstate(all="ignore"):
        if not np.isfinite(term_values).all():
            return None
        if rw is None:
            means = np.add.reduce(term_values, axis=1) / term_values.shape[1]  # np.mean's arithmetic, less overhead
            y_mean = float(np.add.reduce(y) / len(y))
        else:
            means = (term_values @ rw) / float(np.sum(rw))
            y_mean = weighted_mean(y, rw)
        centered = term_values - means[:, None]
        yc = y - y_mean
        weighted = centered if rw is None else centered * rw
        gram = weighted @ centered.T
        if not np.isfinite(gram).all():
            return None
        try:
            w = np.linalg.lstsq(gram, weighted @ yc, rcond=1e-12)[0]
        except np.linalg.LinAlgError:
            return None
        residual = yc - w @ centered
        mse = (float(np.dot(residual, residual)) / len(y) if rw is None
               else float(np.dot(residual * rw, residual)) / float(np.sum(rw)))
        b = y_mean - float(w @ means)
    if not (np.isfinite(w).all() and math.isfinite(b) and math.isfinite(mse)):
        return None
    return w, b, mse


def weighted_sum(terms: list[Expression], weights: np.ndarray, intercept: float) -> Expression:
    """``w_0*t_0 + w_1*t_1 + ... + b`` as an expression (size: sum of term sizes + 3m + 1).

    The tree is ``add(add(add(mul(w_0, t_0), mul(w_1, t_1)), ...), b)``, so its prefix sequence is
    m ``add`` symbols, then each ``mul c <t_i>``, then the intercept; it is assembled directly
    (the search builds one per scored sum and per inner fit).
    """
    if len(terms) == 0 or len(weights) != len(terms) or any(t.is_empty for t in terms):
        raise MalformedExpression("weighted_sum needs one weight per non-empty term")
    symbols: tuple[str, ...] = ("add",) * len(terms)
    constants: tuple[float, ...] = ()
    for term, w in zip(terms, weights):
        symbols += ("mul", CONSTANT) + term.symbols
        constants += (float(w),) + term.constants
    return Expression._trusted(symbols + (CONSTANT,), constants + (float(intercept),))


def weighted_model(terms: list[Expression], columns: np.ndarray, y: np.ndarray) -> Expression | None:
    """``b + sum_i w_i * terms[i]`` (:func:`weighted_sum`) with the least-squares weights and
    intercept of :func:`fit_term_weights` on ``columns``; None when a term is non-finite on some row."""
    values = np.stack([evaluate_columns(t, columns) for t in terms])  # each of shape [n_rows]
    start = fit_term_weights(values, y)
    return None if start is None else weighted_sum(terms, *start[:2])
