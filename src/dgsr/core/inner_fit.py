"""A few Levenberg-Marquardt steps on the constants *inside* an expression's nonlinear parts.

The search values a candidate with its outer linear coefficients solved in closed form (linear
scaling, per-term least squares); constants inside ``sin``, powers or quotients are not reached
that way, so a structure such as ``sin(c*(x0 - c)*(x1 + c))`` looks worthless until its
constants are right (issue 25). :func:`fit_inner_constants` gives such a candidate a few LM
steps on a fixed subsample of rows *with* its outer coefficients: each additive term gets a
weight, and all constants are fitted together, starting from the candidate's own constants (its
parent's fitted ones, for a child) and from the closed-form weights. The weights are then
dropped again: the search's scoring solves them anew on all rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgsr.core.constants import additive_terms, fit_constants, fit_term_weights, weighted_sum
from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression


@dataclass(frozen=True)
class InnerFit:
    """``expression``: the input with its inner constants fitted (the input itself when nothing
    was fitted or the fit did not help); ``passes``: passes over the fitting rows spent."""

    expression: Expression
    passes: int


def inner_constant_count(expr: Expression) -> int:
    """Constants of ``expr`` that closed-form scaling cannot set: all but each additive term's own
    coefficient (``c*t``, ``t/c``, ``c/t``) and the constant terms themselves."""
    return _inner_count(additive_terms(expr))


def fit_inner_constants(expr: Expression, columns: np.ndarray, y: np.ndarray, *, steps: int,
                        y_var: float) -> InnerFit:
    """Fit the inner constants of ``expr`` to ``y`` on ``columns`` (the fixed fitting rows).

    At most ``steps`` Jacobian evaluations of Levenberg-Marquardt on the model
    ``b + sum_i w_i * term_i``. Non-finite starts, failed fits and fits that do not lower the
    loss return the input unchanged.
    """
    if steps <= 0:
        return InnerFit(expr, 0)
    terms = additive_terms(expr)
    if _inner_count(terms) == 0:
        return InnerFit(expr, 0)
    varying = [t for _, t in terms if t.variables]
    with np.errstate(all="ignore"):
        values = np.stack([np.broadcast_to(evaluate_columns(t, columns), y.shape) for t in varying])
    start = fit_term_weights(values, y)
    if start is None:
        return InnerFit(expr, 1)
    weights, intercept, _ = start
    model = weighted_sum(varying, weights, intercept)
    fit = fit_constants(model, columns, y, method="lm", rng=None, batch_size=len(y), patience=steps,
                        max_iter=steps, y_var=y_var, time_limit=1.0)
    passes = 1 + fit.objective_calls + 1
    if not fit.improved:
        return InnerFit(expr, passes)
    return InnerFit(expr.with_constants(_inner_values(terms, fit.expression.constants)), passes)


def _inner_count(terms: list[tuple[float, Expression]]) -> int:
    return sum(t.n_constants - _has_own_coefficient(t) for _, t in terms if t.variables)


def _inner_values(terms: list[tuple[float, Expression]], model_constants: tuple[float, ...]) -> list[float]:
    """The fitted constants of the terms, read out of ``weighted_sum``'s layout
    (``w_0, <t_0's constants>, w_1, <t_1's constants>, ..., b``), constant terms kept."""
    out: list[float] = []
    position = 0
    for _, term in terms:
        if term.variables:
            position += 1  # the term's weight
            out.extend(model_constants[position:position + term.n_constants])
            position += term.n_constants
        else:
            out.extend(term.constants)
    return out


def _has_own_coefficient(term: Expression) -> int:
    """1 when ``term`` is ``c*t``, ``t*c``, ``t/c`` or ``c/t`` with ``c`` a constant leaf (a factor
    that scales the whole term), else 0."""
    if term.symbols[0] not in ("mul", "div"):
        return 0
    left, right = term.children(0)
    return int(term.symbols[left] == "c" or term.symbols[right] == "c")
