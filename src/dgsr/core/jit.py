"""Compiled (numba) kernels for the inner constant fit, with the pure-numpy path as fallback.

An inner fit is a handful of Levenberg-Marquardt steps on 64 rows (:mod:`dgsr.core.inner_fit`).
At that size numpy's per-call overhead, paid once per node and per step, is the whole cost;
these kernels run the same arithmetic row by row in machine code: :func:`run_encoded` computes a
program's values and the Jacobian with respect to its constants in one pass (forward mode, one
dual vector per stack slot), and :func:`levenberg_marquardt_encoded` is the loop of
:func:`dgsr.core.inner_fit._levenberg_marquardt`, step for step.

numba is optional (:mod:`dgsr.core.jit_compile`, whose names this module re-exports, as it
does the op codes and row loops of :mod:`dgsr.core.jit_rows`); without it callers take the
numpy path, which gives the same numbers up to rounding.
"""

from __future__ import annotations

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.jit_compile import (  # noqa: F401 - re-exported: callers read them here
    AVAILABLE,
    KERNELS,
    cache_path,
    compile_kernel,
    compile_misses,
    compiled_signatures,
    numba,
)
from dgsr.core.jit_linalg import (
    _centered_normal_equations,
    _cholesky_solve,
    _normal_equations,
    _sum_of_squares,
)
from dgsr.core.jit_rows import (  # noqa: F401 - the op codes and the row loops, re-exported
    _CODES,
    _CODES_BINARY_LAST,
    _CONST_CODE,
    _VAR_CODE,
    _binary_in_place_jit,
    _binary_value_jit,
    _unary_value_jit,
    _unary_with_slope_jit,
)
from dgsr.core.linear_terms import weighted_model, weighted_sum
from dgsr.core.operators import CONSTANT, SymbolTable


def encode(expr: Expression) -> tuple[np.ndarray, np.ndarray]:
    """``expr`` (non-empty) as op codes and arguments in postfix order: a constant's argument is
    its index in ``expr.constants``, a variable's its column, an operator's unused."""
    if expr.is_empty:
        raise ValueError("cannot encode the empty expression")
    return encode_symbols(expr.symbols)


# Symbol -> ``op code << 32 | argument``: a variable's argument is its column, anything else's 0
# (constants are numbered apart).
_ENCODING = SymbolTable({**{s: c << 32 for s, c in _CODES.items()}, CONSTANT: _CONST_CODE << 32},
                        lambda column: _VAR_CODE << 32 | column)


def encode_symbols(symbols: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode` of a (non-empty, well-formed) prefix sequence."""
    codes = np.array([_ENCODING[s] for s in reversed(symbols)], dtype=np.int64)
    ops = codes >> 32
    args = codes & 0xFFFFFFFF
    constants = ops == _CONST_CODE
    args[constants] = np.arange(int(np.count_nonzero(constants)) - 1, -1, -1)  # prefix order, read backwards
    return ops, args


def _run(ops, args, theta, columns, value, jac):  # pragma: no cover - compiled below
    """Values ``[n]`` into ``value`` and the Jacobian ``[p, n]`` into ``jac`` (p = len(theta)).

    A subtree's constants are a contiguous range of ``theta`` (prefix order), so each stack slot
    carries the derivatives of its own range only, ``[lo, hi)``, as ``gradients.run_program``
    does: a non-finite partial then reaches only the constants below it. Node by node, each node
    over all rows with the operator chosen outside the row loop (so the loops vectorise): per
    row, the same operations in the same order as a row at a time.
    """
    n = columns.shape[1]
    p = theta.shape[0]
    depth = ops.shape[0]
    sv = np.empty((depth, n))
    sj = np.empty((depth, p, n))
    d = np.empty(n)
    lo = np.zeros(depth, dtype=np.int64)
    hi = np.zeros(depth, dtype=np.int64)  # lo == hi: the slot depends on no constant
    sp = 0
    for k in range(depth):
        op = ops[k]
        if op == _CONST_CODE:
            c, q = theta[args[k]], args[k]
            s, js = sv[sp], sj[sp, q]
            for r in range(n):
                s[r] = c
                js[r] = 1.0
            lo[sp], hi[sp] = q, q + 1
            sp += 1
        elif op == _VAR_CODE:
            s, column = sv[sp], columns[args[k]]
            for r in range(n):
                s[r] = column[r]
            lo[sp], hi[sp] = 0, 0
            sp += 1
        elif op <= _CODES_BINARY_LAST:
            a, b = sv[sp - 1], sv[sp - 2]  # the left operand is on top
            ja, jb = sj[sp - 1], sj[sp - 2]
            la, ha, lb, hb = lo[sp - 1], hi[sp - 1], lo[sp - 2], hi[sp - 2]
            # The partials: d(a op b)/da * ja and d(a op b)/db * jb, each over its own range.
            if op <= 1:  # add, sub: the left partials pass through, the right ones too or negated
                if op == 1:
                    for q in range(lb, hb):
                        jq = jb[q]
                        for r in range(n):
                            jq[r] *= -1.0
                for q in range(la, ha):
                    jq, aq = jb[q], ja[q]
                    for r in range(n):
                        jq[r] = aq[r]
            elif op == 2:
                for q in range(lb, hb):
                    jq = jb[q]
                    for r in range(n):
                        jq[r] *= a[r]
                for q in range(la, ha):
                    jq, aq = jb[q], ja[q]
                    for r in range(n):
                        jq[r] = b[r] * aq[r]
            else:
                for r in range(n):
                    d[r] = a[r] / b[r]
                for q in range(lb, hb):
                    jq = jb[q]
                    for r in range(n):
                        jq[r] *= -d[r] / b[r]
                for q in range(la, ha):
                    jq, aq = jb[q], ja[q]
                    for r in range(n):
                        jq[r] = 1.0 / b[r] * aq[r]
            _binary_in_place_jit(op, a, b)
            if ha > la:
                if hb > lb:
                    lo[sp - 2], hi[sp - 2] = min(lb, la), max(hb, ha)
                else:
                    lo[sp - 2], hi[sp - 2] = la, ha
            sp -= 1
        else:
            a = sv[sp - 1]
            _unary_with_slope_jit(op, a, d)
            ja = sj[sp - 1]
            for q in range(lo[sp - 1], hi[sp - 1]):
                jq = ja[q]
                for r in range(n):
                    jq[r] *= d[r]
    for r in range(n):
        value[r] = sv[0, r]
    for q in range(p):
        inside = lo[0] <= q < hi[0]
        for r in range(n):
            jac[q, r] = sj[0, q, r] if inside else 0.0


def _lm(ops, args, params, columns, y, steps, tau, ftol, exact, rel_tol):  # pragma: no cover - compiled below
    """The Levenberg-Marquardt loop of ``inner_fit._levenberg_marquardt``, step for step; returns
    ``(best or params, improved, passes)``."""
    n = y.shape[0]
    p = params.shape[0]
    params = params.copy()
    value = np.empty(n)
    jac = np.empty((p, n))
    residual = np.empty(n)
    _run_jit(ops, args, params, columns, value, jac)
    passes = 1
    loss = _sum_of_squares_jit(value, y, residual)
    best = params.copy()
    if not np.isfinite(loss):
        return best, False, passes
    gram = np.empty((p, p))
    gradient = np.empty(p)
    _normal_equations_jit(jac, residual, gram, gradient)
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
        if not _cholesky_solve_jit(system, rhs, step, 1e-300):
            break
        predicted = 0.0
        for i in range(p):
            predicted += step[i] * (damping * scaling[i] * step[i] - gradient[i])
        if not np.isfinite(predicted) or predicted <= ftol * loss:
            break
        for i in range(p):
            trial[i] = params[i] + step[i]
        _run_jit(ops, args, trial, columns, value, new_jac)
        passes += 1
        new_loss = _sum_of_squares_jit(value, y, new_residual)
        if np.isfinite(new_loss) and new_loss < loss:
            gain = (loss - new_loss) / predicted if predicted > 0 else 1.0
            converged = loss - new_loss <= ftol * loss or new_loss <= floor
            params, trial = trial, params  # swap buffers: trial is the new point
            residual, new_residual = new_residual, residual
            jac, new_jac = new_jac, jac
            loss = new_loss
            _normal_equations_jit(jac, residual, gram, gradient)
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


def _fit(ops, args, params, weights_at, columns, y, steps, tau, ftol, exact, rel_tol):  # pragma: no cover
    """Start weights in closed form, then ``_lm``. ``params`` holds the model's constants with
    ``1`` at the term weights (``weights_at``) and the intercept last: the Jacobian rows of the
    weights are then the terms' values, so one pass gives both. Returns ``(best, improved,
    passes, status)``: status 0 done, 1 a term is non-finite on some row (the fit ends after that
    pass), 2 the terms are numerically collinear (the caller takes the least-squares start)."""
    n = y.shape[0]
    p = params.shape[0]
    value = np.empty(n)
    jac = np.empty((p, n))
    _run_jit(ops, args, params, columns, value, jac)
    for r in range(n):
        if not np.isfinite(value[r]):
            return params, False, 1, 1
    m = weights_at.shape[0]
    means = np.empty(m)
    gram = np.empty((m, m))
    rhs = np.empty(m)
    y_mean = _centered_normal_equations_jit(jac, weights_at, y, means, gram, rhs)
    largest = 0.0
    for i in range(m):
        largest = max(largest, gram[i, i])
    if not np.isfinite(largest):
        return params, False, 1, 1
    w = np.empty(m)
    # Well-conditioned (every pivot clear of rounding): the solve is the least-squares solution.
    if largest <= 0.0 or not _cholesky_solve_jit(gram, rhs, w, 1e-300):
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
    best, improved, passes = _lm_jit(ops, args, start, columns, y, steps, tau, ftol, exact, rel_tol)
    return best, improved, 1 + passes, 0


if AVAILABLE:
    _compile = compile_kernel
    # Sums over rows, in vector lanes (compile_kernel's ``reassociate``).
    _centered_normal_equations_jit = _compile(_centered_normal_equations, reassociate=True)
    _normal_equations_jit = _compile(_normal_equations, reassociate=True)
    _sum_of_squares_jit = _compile(_sum_of_squares, reassociate=True)
    _run_jit = _compile(_run)
    _cholesky_solve_jit = _compile(_cholesky_solve)
    _lm_jit = _compile(_lm)
    _fit_jit = _compile(_fit)
else:
    _centered_normal_equations_jit = None
    _run_jit = _cholesky_solve_jit = _normal_equations_jit = _sum_of_squares_jit = _lm_jit = _fit_jit = None


def run_encoded(ops: np.ndarray, args: np.ndarray, theta: np.ndarray,
                columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values ``[n_rows]`` and Jacobian ``[n_constants, n_rows]`` of an encoded program at ``theta``
    (compiled; only when :data:`AVAILABLE`). Non-finite values propagate."""
    n = columns.shape[1]
    value, jac = np.empty(n), np.empty((theta.shape[0], n))
    _run_jit(ops, args, np.ascontiguousarray(theta, dtype=np.float64), columns, value, jac)
    return value, jac


def fit_weighted_terms(terms: list[Expression], columns: np.ndarray, y: np.ndarray, steps: int, *, tau: float,
                       ftol: float, exact: float, rel_tol: float, collinear: bool = False
                       ) -> tuple[np.ndarray | None, int]:
    """``b + sum_i w_i * terms[i]`` fitted to ``y`` (compiled; only when :data:`AVAILABLE`): the
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
        best, improved, passes, status = _fit_jit(ops, args, params, weights_at, columns, y, steps, tau, ftol,
                                                  exact, rel_tol)
    if status == 2:  # collinear terms: the minimum-norm least-squares start, as the numpy path takes it
        model = weighted_model(terms, columns, y)
        if model is None:
            return None, 1
        best, improved, passes = _lm_jit(ops, args, np.asarray(model.constants, dtype=np.float64), columns, y,
                                         steps, tau, ftol, exact, rel_tol)
        passes += 1
    return (best if improved else None), passes
