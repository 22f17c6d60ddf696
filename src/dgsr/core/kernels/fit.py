"""The inner constant fit, compiled: Levenberg-Marquardt on a weighted sum of terms.

An inner fit is a handful of Levenberg-Marquardt steps on 64 rows (:mod:`dgsr.core.inner_fit`).
At that size numpy's per-call overhead, paid once per node and per step, would be the whole
cost; these kernels run the arithmetic row by row in machine code. :func:`lm_jit` is the loop
(Marquardt's diagonal scaling, Nielsen's damping update), each step one pass of
:func:`dgsr.core.kernels.forward.run_jit` for a point's values and Jacobian together;
:func:`fit_jit` starts it from the closed-form weights; :func:`fit_weighted_terms` is the entry
point for a model given as its terms. The numpy twin of this loop is the test oracle
(``tests/core/kernel_oracle.py``).
"""

from __future__ import annotations

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.kernels.codes import OPERATOR_TABLE, encode
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.forward import run_jit
from dgsr.core.kernels.linalg import (
    centered_normal_equations_jit,
    cholesky_solve_jit,
    normal_equations_jit,
    sum_of_squares_jit,
)
from dgsr.core.linear_terms import weighted_model, weighted_sum

__all__ = ["fit_jit", "fit_weighted_terms", "lm_jit"]


def _lm(ops, args, params, columns, y, steps, tau, ftol, exact, rel_tol, table):  # pragma: no cover - compiled below
    """At most ``steps`` Levenberg-Marquardt trial points from ``params``; returns ``(best or
    params, improved, passes)``: ``improved`` when the best lowers the sum of squares by a relative
    ``rel_tol``, ``passes`` the passes spent (the start's included)."""
    n = y.shape[0]
    p = params.shape[0]
    params = params.copy()
    value = np.empty(n)
    jac = np.empty((p, n))
    residual = np.empty(n)
    run_jit(ops, args, params, columns, value, jac, table)
    passes = 1
    loss = sum_of_squares_jit(value, y, residual)
    best = params.copy()
    if not np.isfinite(loss):
        return best, False, passes
    gram = np.empty((p, p))
    gradient = np.empty(p)
    normal_equations_jit(jac, residual, gram, gradient)
    scaling = np.empty(p)
    largest = 0.0
    for i in range(p):
        scaling[i] = max(gram[i, i], 1e-12)
        largest = max(largest, scaling[i])
    damping = tau * largest
    initial = loss
    nu = 2.0
    improved = False
    y_ss = 0.0
    for r in range(n):
        y_ss += y[r] * y[r]
    floor = exact * y_ss
    system = np.empty((p, p))
    rhs = np.empty(p)
    step = np.empty(p)
    trial = np.empty(p)
    new_jac = np.empty((p, n))
    new_residual = np.empty(n)
    for _ in range(steps):
        for i in range(p):
            for j in range(p):
                system[i, j] = gram[i, j]
            system[i, i] += damping * scaling[i]
            rhs[i] = -gradient[i]
        if not cholesky_solve_jit(system, rhs, step, 1e-300):
            break
        predicted = 0.0
        for i in range(p):
            predicted += step[i] * (damping * scaling[i] * step[i] - gradient[i])
        if not np.isfinite(predicted) or predicted <= ftol * loss:
            break
        for i in range(p):
            trial[i] = params[i] + step[i]
        run_jit(ops, args, trial, columns, value, new_jac, table)
        passes += 1
        new_loss = sum_of_squares_jit(value, y, new_residual)
        if np.isfinite(new_loss) and new_loss < loss:
            gain = (loss - new_loss) / predicted if predicted > 0 else 1.0
            converged = loss - new_loss <= ftol * loss or new_loss <= floor
            params, trial = trial, params  # swap buffers: trial is the new point
            residual, new_residual = new_residual, residual
            jac, new_jac = new_jac, jac
            loss = new_loss
            normal_equations_jit(jac, residual, gram, gradient)
            for i in range(p):
                scaling[i] = max(scaling[i], gram[i, i])
            shrink = 2.0 * gain - 1.0
            damping *= max(1.0 / 3.0, 1.0 - shrink * shrink * shrink)
            nu = 2.0
            if loss < initial * (1.0 - rel_tol):
                for i in range(p):
                    best[i] = params[i]
                improved = True
            if converged:
                break
        else:
            damping *= nu
            nu *= 2.0
    return best, improved, passes


def _fit(ops, args, params, weights_at, columns, y, steps, tau, ftol, exact, rel_tol, table):  # pragma: no cover
    """Start weights in closed form, then ``_lm``. ``params`` holds the model's constants with
    ``1`` at the term weights (``weights_at``) and the intercept last: the Jacobian rows of the
    weights are then the terms' values, so one pass gives both. Returns ``(best, improved,
    passes, status)``: status 0 done, 1 a term is non-finite on some row (the fit ends after that
    pass), 2 the terms are numerically collinear (the caller takes the least-squares start)."""
    n = y.shape[0]
    p = params.shape[0]
    value = np.empty(n)
    jac = np.empty((p, n))
    run_jit(ops, args, params, columns, value, jac, table)
    for r in range(n):
        if not np.isfinite(value[r]):
            return params, False, 1, 1
    m = weights_at.shape[0]
    means = np.empty(m)
    gram = np.empty((m, m))
    rhs = np.empty(m)
    y_mean = centered_normal_equations_jit(jac, weights_at, y, means, gram, rhs)
    largest = 0.0
    for i in range(m):
        largest = max(largest, gram[i, i])
    if not np.isfinite(largest):
        return params, False, 1, 1
    w = np.empty(m)
    # Well-conditioned (every pivot clear of rounding): the solve is the least-squares solution.
    if largest <= 0.0 or not cholesky_solve_jit(gram, rhs, w, 1e-300):
        return params, False, 1, 2
    intercept = y_mean
    for i in range(m):
        intercept -= w[i] * means[i]
        if not np.isfinite(w[i]) or gram[i, i] < 1e-10 * largest:
            return params, False, 1, 2
    if not np.isfinite(intercept):
        return params, False, 1, 1
    start = params.copy()
    for i in range(m):
        start[weights_at[i]] = w[i]
    start[p - 1] = intercept
    best, improved, passes = lm_jit(ops, args, start, columns, y, steps, tau, ftol, exact, rel_tol, table)
    return best, improved, 1 + passes, 0


lm_jit = compile_kernel(_lm)
fit_jit = compile_kernel(_fit)


def fit_weighted_terms(terms: list[Expression], columns: np.ndarray, y: np.ndarray, steps: int, *, tau: float,
                       ftol: float, exact: float, rel_tol: float, collinear: bool = False
                       ) -> tuple[np.ndarray | None, int]:
    """``b + sum_i w_i * terms[i]`` fitted to ``y``: the
    weights and intercept in closed form, then at most ``steps`` Levenberg-Marquardt trials on
    every constant. Returns the fitted constants in ``weighted_sum``'s layout (``w_0, <t_0's
    constants>, ..., b``) if they lower the loss by a relative ``rel_tol``, else None, and the
    passes spent (1 when a term is non-finite on some row). ``collinear``: the caller already
    knows this model's closed-form start to be collinear (the same kernel found it so), so the
    minimum-norm start is taken without running that kernel again."""
    model = weighted_sum(terms, np.ones(len(terms)), 0.0)
    ops, args = encode(model)
    columns = np.ascontiguousarray(columns)
    y = np.ascontiguousarray(y, dtype=np.float64)
    status = 2
    if not collinear:
        params = np.asarray(model.constants, dtype=np.float64)
        weights_at = np.cumsum([0] + [1 + t.n_constants for t in terms[:-1]]).astype(np.int64)
        best, improved, passes, status = fit_jit(ops, args, params, weights_at, columns, y, steps, tau, ftol,
                                                  exact, rel_tol, OPERATOR_TABLE[0])
    if status == 2:  # collinear terms: the minimum-norm least-squares start
        model = weighted_model(terms, columns, y)
        if model is None:
            return None, 1
        best, improved, passes = lm_jit(ops, args, np.asarray(model.constants, dtype=np.float64), columns, y,
                                         steps, tau, ftol, exact, rel_tol, OPERATOR_TABLE[0])
        passes += 1
    return (best if improved else None), passes
