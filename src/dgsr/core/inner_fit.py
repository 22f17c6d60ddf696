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
It is compiled (:mod:`dgsr.core.kernels.fit`), each step one pass that gives a point's values
and its Jacobian together; its numpy twin is the tests' oracle (tests/core/kernel_oracle.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.kernels.fit import fit_weighted_terms
from dgsr.core.kernels.structure import COLLINEAR, Structure, fit_structure, structure
from dgsr.core.linear_terms import additive_terms

__all__ = ["INNER_FIT_TOLERANCES", "InnerFit", "fit_inner_constants", "fit_written_out", "inner_constant_count",
           "term_constants"]

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
    return 0 if expr.is_empty else structure(expr.symbols).inner_count


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
    shape = structure(expr.symbols)
    if shape.inner_count == 0:
        return InnerFit(expr, 0)
    fit = None if collinear else _fit_compiled(expr, shape, columns, y, steps)
    return fit_written_out(expr, columns, y, steps, collinear=True) if fit is None else fit


def fit_written_out(expr: Expression, columns: np.ndarray, y: np.ndarray, steps: int, *,
                    collinear: bool = False) -> InnerFit:
    """:func:`fit_inner_constants` with its model written out as an expression of the terms
    (:func:`dgsr.core.kernels.fit.fit_weighted_terms`): the same result as the fit from the
    memoised structure, which is what the search takes when that fit's closed-form start needs
    the minimum-norm least squares (``collinear``: the fit of the same model found its terms
    collinear, so that kernel is not run again)."""
    terms = additive_terms(expr)
    # A term that occurs twice (same structure, same constants: sums the search grew term by term)
    # is fitted once: its copies' weights are collinear, and their constants would move together.
    unique = {t.key(): t for _, t in terms if t.variables}
    varying = list(unique.values())
    best, passes = fit_weighted_terms(varying, columns, y, steps, tau=_TAU, ftol=_FTOL, exact=_EXACT,
                                      rel_tol=_REL_TOL, collinear=collinear)
    if best is None:
        return InnerFit(expr, passes)
    return InnerFit(expr.with_constants(term_constants(terms, unique, best)), passes)


def _fit_compiled(expr: Expression, shape: Structure, columns: np.ndarray, y: np.ndarray,
                  steps: int) -> InnerFit | None:
    """:func:`fit_inner_constants` from ``expr``'s memoised structure ``shape``
    (:func:`dgsr.core.kernels.structure.fit_structure`): the same model, start and steps as
    :func:`fit_written_out` (so the same result), without building the model expression.
    None when the terms are numerically collinear (their least-squares start needs
    :func:`fit_written_out`)."""
    fitted, passes, status = fit_structure(
        shape, expr.constants, np.ascontiguousarray(columns), np.ascontiguousarray(y, dtype=np.float64), steps,
        tau=_TAU, ftol=_FTOL, exact=_EXACT, rel_tol=_REL_TOL)
    if status == COLLINEAR:
        return None
    if fitted is None:
        return InnerFit(expr, passes)
    return InnerFit(Expression._trusted(expr.symbols, tuple(fitted.tolist())), passes)


def term_constants(terms: list[tuple[float, Expression]], fitted_terms: dict[tuple, Expression],
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
