"""A few Levenberg-Marquardt steps on the constants *inside* an expression's nonlinear parts.

The search values a candidate with its outer linear coefficients solved in closed form (linear
scaling, per-term least squares); constants inside ``sin``, powers or quotients are not reached
that way, so a structure such as ``sin(c*(x0 - c)*(x1 + c))`` looks worthless until its
constants are right (issue 25). :func:`fit_inner_constants` gives such a candidate a few LM
steps on a fixed subsample of rows *with* its outer coefficients: the model is
``b + sum_i w_i * term_i``, each additive term with its own weight, and all constants are fitted
together, starting from the candidate's own constants (its parent's fitted ones, for a child)
and from the closed-form weights. The weights are then dropped again: the search's scoring
solves them anew on all rows.

The loop is our own (Marquardt's diagonal scaling, Nielsen's damping update) rather than
MINPACK through ``scipy.optimize.leastsq``: a fit here is a handful of steps on 64 rows, where
MINPACK's set-up and its separate residual and Jacobian calls cost more than the arithmetic.
Each step is one pass that gives a point's values and its Jacobian together: compiled by numba
(:mod:`dgsr.core.jit`) when it is installed, else :func:`dgsr.core.gradients.run_program`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgsr.core import jit, jit_structure
from dgsr.core.expression import Expression, subtree_end
from dgsr.core.gradients import Program, compile_expression, run_program
from dgsr.core.linear_terms import _term_spans, additive_terms, weighted_model
from dgsr.core.operators import CONSTANT

# A step must lower the loss by this much (relative) to count as an improvement.
_REL_TOL = 1e-9
# Converged once an accepted step lowers the loss by less than this (relative; MINPACK's ftol).
_FTOL = 1.5e-8
# A loss this small relative to y's sum of squares is an exact fit: nothing left to fit.
_EXACT = 1e-26
# Initial damping relative to the largest diagonal entry of J^T J (Madsen, Nielsen & Tingleff 2004).
_TAU = 1e-3
#: The loop's settings as the compiled kernels take them (keyword arguments).
INNER_FIT_TOLERANCES = {"tau": _TAU, "ftol": _FTOL, "exact": _EXACT, "rel_tol": _REL_TOL}


@dataclass(frozen=True)
class InnerFit:
    """``expression``: the input with its inner constants fitted (the input itself when nothing
    was fitted or the fit did not help); ``passes``: passes over the fitting rows spent."""

    expression: Expression
    passes: int


def inner_constant_count(expr: Expression) -> int:
    """Constants of ``expr`` that closed-form scaling cannot set: all but each additive term's own
    coefficient (``c*t``, ``t/c``, ``c/t``) and the constant terms themselves."""
    return 0 if expr.is_empty else _inner_count_of(expr.symbols)


def fit_inner_constants(expr: Expression, columns: np.ndarray, y: np.ndarray, *, steps: int,
                        collinear: bool = False) -> InnerFit:
    """Fit the inner constants of ``expr`` to ``y`` on ``columns`` (the fixed fitting rows).

    At most ``steps`` trial points of Levenberg-Marquardt on the model ``b + sum_i w_i * term_i``
    (each trial is one pass, its Jacobian computed in the same pass). Non-finite starts and fits
    that do not lower the sum of squares return the input unchanged. ``passes`` is 0 exactly
    when nothing was tried: ``expr`` has no inner constants, or ``steps`` is 0. ``collinear``:
    the caller's compiled fit of this same expression on these rows already found its terms
    collinear, so the minimum-norm start is taken at once (the same result, one kernel fewer).
    """
    if steps <= 0 or expr.is_empty:
        return InnerFit(expr, 0)
    if not jit.AVAILABLE:
        return _fit_terms(expr, columns, y, steps) if _inner_count_of(expr.symbols) else InnerFit(expr, 0)
    shape = jit_structure.structure(expr.symbols)
    if shape.inner_count == 0:
        return InnerFit(expr, 0)
    fit = None if collinear else _fit_compiled(expr, shape, columns, y, steps)
    return _fit_terms(expr, columns, y, steps, collinear=True) if fit is None else fit


def _fit_terms(expr: Expression, columns: np.ndarray, y: np.ndarray, steps: int, *,
               collinear: bool = False) -> InnerFit:
    """:func:`fit_inner_constants` through the expression's terms (the numpy path, and the
    compiled one when its closed-form start needs the minimum-norm least squares: ``collinear``,
    the compiled fit of the same model found its terms collinear)."""
    terms = additive_terms(expr)
    # A term that occurs twice (same structure, same constants: sums the search grew term by term)
    # is fitted once: its copies' weights are collinear, and their constants would move together.
    unique = {t.key(): t for _, t in terms if t.variables}
    varying = list(unique.values())
    if jit.AVAILABLE:
        best, passes = jit.fit_weighted_terms(varying, columns, y, steps, tau=_TAU, ftol=_FTOL, exact=_EXACT,
                                              rel_tol=_REL_TOL, collinear=collinear)
    else:
        best, passes = _fit_weighted_terms(varying, columns, y, steps)
    if best is None:
        return InnerFit(expr, passes)
    return InnerFit(expr.with_constants(_inner_values(terms, unique, best)), passes)


def _inner_count_of(symbols: tuple[str, ...]) -> int:
    """:func:`inner_constant_count` from the structure alone, read off the term spans."""
    count = 0
    for _, start, end, c0, c1, variables in _term_spans(symbols):
        if variables and c1 > c0:
            count += c1 - c0 - _span_has_own_coefficient(symbols, start, end)
    return count


def _span_has_own_coefficient(symbols: tuple[str, ...], start: int, end: int) -> int:
    """1 when the term ``symbols[start:end]`` is ``c*t``, ``t*c``, ``t/c`` or ``c/t`` with ``c`` a
    constant leaf (a factor that scales the whole term), else 0."""
    if symbols[start] not in ("mul", "div"):
        return 0
    if symbols[start + 1] == CONSTANT:
        return 1
    right = subtree_end(symbols, start + 1)  # the right operand follows the left one
    return int(right == end - 1 and symbols[right] == CONSTANT)


def _fit_compiled(expr: Expression, shape: jit_structure.Structure, columns: np.ndarray, y: np.ndarray,
                  steps: int) -> InnerFit | None:
    """:func:`fit_inner_constants` from ``expr``'s memoised structure ``shape``
    (:func:`jit_structure.fit_structure`): the same model, start and steps as
    :func:`jit.fit_weighted_terms` (so the same result), without building the model expression.
    None when the terms are numerically collinear (their least-squares start needs
    :func:`_fit_terms`)."""
    fitted, passes, status = jit_structure.fit_structure(
        shape, expr.constants, np.ascontiguousarray(columns), np.ascontiguousarray(y, dtype=np.float64), steps,
        tau=_TAU, ftol=_FTOL, exact=_EXACT, rel_tol=_REL_TOL)
    if status == jit_structure.COLLINEAR:
        return None
    if fitted is None:
        return InnerFit(expr, passes)
    return InnerFit(Expression._trusted(expr.symbols, tuple(fitted.tolist())), passes)


def _fit_weighted_terms(terms: list[Expression], columns: np.ndarray, y: np.ndarray,
                        steps: int) -> tuple[np.ndarray | None, int]:
    """The numpy path of :func:`dgsr.core.jit.fit_weighted_terms`, the same steps."""
    model = weighted_model(terms, columns, y)
    if model is None:
        return None, 1
    best, passes = _levenberg_marquardt(compile_expression(model), np.asarray(model.constants, dtype=np.float64),
                                        columns, y, steps)
    return best, 1 + passes


def _levenberg_marquardt(program: Program, params: np.ndarray, columns: np.ndarray, y: np.ndarray,
                         steps: int) -> tuple[np.ndarray | None, int]:
    """At most ``steps`` trial points from ``params``; the best parameters if they lower the sum of
    squared residuals by a relative ``_REL_TOL`` (else None), and the passes spent (the start's
    included). Each pass computes a point's values and Jacobian together."""
    value, jac = run_program(program, params, columns)
    passes = 1
    with np.errstate(all="ignore"):
        residual = value - y
        loss = float(residual @ residual)
        if not math.isfinite(loss):
            return None, passes
        jac = np.where(np.isfinite(jac), jac, 0.0)
        gram, gradient = jac @ jac.T, jac @ residual
        scaling = np.maximum(gram.diagonal(), 1e-12)
        damping = _TAU * float(np.max(scaling))
        initial, nu, best = loss, 2.0, None
        floor = _EXACT * float(y @ y)  # an exact fit, to float precision
        for _ in range(steps):
            try:
                step = np.linalg.solve(gram + np.diag(damping * scaling), -gradient)
            except np.linalg.LinAlgError:
                break
            predicted = float(step @ (damping * scaling * step - gradient))  # the linear model's reduction
            if not math.isfinite(predicted) or predicted <= _FTOL * loss:
                break  # no step left that could matter
            trial = params + step
            value, new_jac = run_program(program, trial, columns)
            passes += 1
            new_residual = value - y
            new_loss = float(new_residual @ new_residual)
            if math.isfinite(new_loss) and new_loss < loss:
                gain = (loss - new_loss) / predicted if predicted > 0 else 1.0
                converged = loss - new_loss <= _FTOL * loss or new_loss <= floor
                params, loss, residual = trial, new_loss, new_residual
                jac = np.where(np.isfinite(new_jac), new_jac, 0.0)
                gram, gradient = jac @ jac.T, jac @ residual
                scaling = np.maximum(scaling, gram.diagonal())
                damping *= max(1.0 / 3.0, 1.0 - (2.0 * gain - 1.0) ** 3)
                nu = 2.0
                if loss < initial * (1.0 - _REL_TOL):
                    best = params
                if converged:
                    break
            else:
                damping *= nu
                nu *= 2.0
    return best, passes


def _inner_values(terms: list[tuple[float, Expression]], fitted_terms: dict[tuple, Expression],
                  model_constants: np.ndarray) -> list[float]:
    """The fitted constants of ``terms`` (in order, constant terms kept), read out of the layout
    of ``weighted_sum(list(fitted_terms.values()))`` (``w_0, <t_0's constants>, w_1, ..., b``);
    ``fitted_terms`` maps each distinct term's key to it, so a term that occurs more than once
    takes its one fitted copy's constants."""
    fitted: dict[tuple, list[float]] = {}
    position = 0
    for key, term in fitted_terms.items():
        position += 1  # the term's weight
        fitted[key] = [float(c) for c in model_constants[position:position + term.n_constants]]
        position += term.n_constants
    out: list[float] = []
    for _, term in terms:
        out.extend(fitted[term.key()] if term.variables else term.constants)
    return out
