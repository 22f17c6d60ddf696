"""The inner constant fit in plain numpy: the oracle the compiled kernels are checked against.

This was the package's fallback engine when numba was optional (``dgsr.core.inner_fit``'s numpy
path, 0.9.x); numba is now required, so it lives here. It fits the same model
``b + sum_i w_i * term_i`` over the distinct varying terms, from the same closed-form start, with
the same Levenberg-Marquardt steps (Marquardt's diagonal scaling, Nielsen's damping update), each
pass a point's values and Jacobian from :func:`dgsr.core.gradients.run_program`. The compiled
fit takes the same steps, so its results agree to rounding (tests/core/kernels/test_forward.py).
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.expression import Expression, subtree_end
from dgsr.core.gradients import Program, compile_expression, run_program
from dgsr.core.inner_fit import INNER_FIT_TOLERANCES, InnerFit, term_constants
from dgsr.core.linear_terms import additive_terms, term_spans, weighted_model
from dgsr.core.operators import CONSTANT

_TAU, _FTOL = INNER_FIT_TOLERANCES["tau"], INNER_FIT_TOLERANCES["ftol"]
_EXACT, _REL_TOL = INNER_FIT_TOLERANCES["exact"], INNER_FIT_TOLERANCES["rel_tol"]


def inner_count(symbols: tuple[str, ...]) -> int:
    """The inner constants of a prefix sequence, read off its term spans: each varying term's
    constants but its own coefficient (``c*t``, ``t*c``, ``t/c``, ``c/t``)."""
    count = 0
    for _, start, end, c0, c1, variables in term_spans(symbols):
        if variables and c1 > c0:
            count += c1 - c0 - _own_coefficient(symbols, start, end)
    return count


def _own_coefficient(symbols: tuple[str, ...], start: int, end: int) -> int:
    """1 when the term ``symbols[start:end]`` is a constant leaf times or over the rest."""
    if symbols[start] not in ("mul", "div"):
        return 0
    if symbols[start + 1] == CONSTANT:
        return 1
    right = subtree_end(symbols, start + 1)  # the right operand follows the left one
    return int(right == end - 1 and symbols[right] == CONSTANT)


def fit_inner_constants(expr: Expression, columns: np.ndarray, y: np.ndarray, *, steps: int) -> InnerFit:
    """:func:`dgsr.core.inner_fit.fit_inner_constants` in numpy."""
    if steps <= 0 or expr.is_empty or not inner_count(expr.symbols):
        return InnerFit(expr, 0)
    terms = additive_terms(expr)
    unique = {t.key(): t for _, t in terms if t.variables}  # a repeated term is fitted once
    best, passes = fit_weighted_terms(list(unique.values()), columns, y, steps)
    if best is None:
        return InnerFit(expr, passes)
    return InnerFit(expr.with_constants(term_constants(terms, unique, best)), passes)


def fit_weighted_terms(terms: list[Expression], columns: np.ndarray, y: np.ndarray,
                       steps: int) -> tuple[np.ndarray | None, int]:
    """:func:`dgsr.core.kernels.fit.fit_weighted_terms` in numpy: the closed-form start (the
    minimum-norm least squares), then :func:`levenberg_marquardt`."""
    model = weighted_model(terms, columns, y)
    if model is None:
        return None, 1
    best, passes = levenberg_marquardt(compile_expression(model), np.asarray(model.constants, dtype=np.float64),
                                       columns, y, steps)
    return best, 1 + passes


def levenberg_marquardt(program: Program, params: np.ndarray, columns: np.ndarray, y: np.ndarray,
                        steps: int) -> tuple[np.ndarray | None, int]:
    """At most ``steps`` trial points from ``params``; the best parameters if they lower the sum of
    squared residuals by a relative ``rel_tol`` (else None), and the passes spent (the start's
    included)."""
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
