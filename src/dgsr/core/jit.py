"""Compiled (numba) kernels for the inner constant fit, with the pure-numpy path as fallback.

An inner fit is a handful of Levenberg-Marquardt steps on 64 rows (:mod:`dgsr.core.inner_fit`).
At that size numpy's per-call overhead, paid once per node and per step, is the whole cost;
these kernels run the same arithmetic row by row in machine code: :func:`run_encoded` computes a
program's values and the Jacobian with respect to its constants in one pass (forward mode, one
dual vector per stack slot), and :func:`levenberg_marquardt_encoded` is the loop of
:func:`dgsr.core.inner_fit._levenberg_marquardt`, step for step.

numba is optional. :data:`AVAILABLE` is False when it cannot be imported, or when the
environment variable ``DGSR_NO_JIT`` is set (to anything but ``0`` or empty); callers then use
the numpy path, which gives the same numbers up to rounding. Kernels compile on first use and
are cached on disk by numba (``cache=True``), so a later process loads them in a fraction of a
second.
"""

from __future__ import annotations

import os

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.jit_linalg import (
    _centered_normal_equations,
    _cholesky_solve,
    _normal_equations,
    _sum_of_squares,
)
from dgsr.core.linear_terms import weighted_model, weighted_sum
from dgsr.core.operators import CONSTANT, OPERATORS, SymbolTable

try:  # the fallback is the numpy path, so a missing or broken numba is not an error
    import numba
except Exception:  # noqa: BLE001 - any import failure (missing, wrong llvmlite) means "no JIT"
    numba = None

#: Whether the compiled kernels are used (numba importable and ``DGSR_NO_JIT`` unset).
AVAILABLE: bool = numba is not None and os.environ.get("DGSR_NO_JIT", "") in ("", "0")

# Op codes of the encoded program (postfix order: the prefix sequence reversed).
_CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3, "sin": 4, "cos": 5, "tan": 6, "exp": 7, "log": 8,
          "sqrt": 9, "inv": 10, "sq": 11}
_CONST_CODE, _VAR_CODE = 20, 21
_CODES_BINARY_LAST = 3  # codes 0..3 are the binary operators
assert set(_CODES) == set(OPERATORS), "every operator needs an op code"


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


def _binary_value(op, a, b):  # pragma: no cover - compiled below
    """The binary operator with op code ``op`` (0-3) at one row: the one table both kernels use."""
    if op == 0:
        return a + b
    if op == 1:
        return a - b
    if op == 2:
        return a * b
    return a / b


def _unary_value(op, x):  # pragma: no cover - compiled below
    """The unary operator with op code ``op`` (4-11) at one row."""
    if op == 4:
        return np.sin(x)
    if op == 5:
        return np.cos(x)
    if op == 6:
        return np.tan(x)
    if op == 7:
        return np.exp(x)
    if op == 8:
        return np.log(x)
    if op == 9:
        return np.sqrt(x)
    if op == 10:
        return 1.0 / x
    return x * x


def _run(ops, args, theta, columns, value, jac):  # pragma: no cover - compiled below
    """Values ``[n]`` into ``value`` and the Jacobian ``[p, n]`` into ``jac`` (p = len(theta)).

    A subtree's constants are a contiguous range of ``theta`` (prefix order), so each stack slot
    carries the derivatives of its own range only, ``[lo, hi)``, as ``gradients.run_program``
    does: a non-finite partial then reaches only the constants below it. Node by node, each node
    over all rows (the row loops vectorise; a row-by-row interpreter branches on every node of
    every row): per row, the same operations in the same order.
    """
    n = columns.shape[1]
    p = theta.shape[0]
    depth = ops.shape[0]
    sv = np.empty((depth, n))
    sj = np.empty((depth, p, n))
    d = np.empty(n)
    da = np.empty(n)
    db = np.empty(n)
    lo = np.zeros(depth, dtype=np.int64)
    hi = np.zeros(depth, dtype=np.int64)  # lo == hi: the slot depends on no constant
    sp = 0
    for k in range(depth):
        op = ops[k]
        if op == _CONST_CODE:
            c, q = theta[args[k]], args[k]
            for r in range(n):
                sv[sp, r] = c
                sj[sp, q, r] = 1.0
            lo[sp], hi[sp] = q, q + 1
            sp += 1
        elif op == _VAR_CODE:
            j = args[k]
            for r in range(n):
                sv[sp, r] = columns[j, r]
            lo[sp], hi[sp] = 0, 0
            sp += 1
        elif op <= _CODES_BINARY_LAST:
            a, b = sv[sp - 1], sv[sp - 2]  # the left operand is on top
            ja, jb = sj[sp - 1], sj[sp - 2]
            for r in range(n):  # the value into d, the partials into da and db (one loop body: less to compile)
                d[r] = _binary_value_jit(op, a[r], b[r])
                if op == 0:
                    da[r], db[r] = 1.0, 1.0
                elif op == 1:
                    da[r], db[r] = 1.0, -1.0
                elif op == 2:
                    da[r], db[r] = b[r], a[r]
                else:
                    da[r], db[r] = 1.0 / b[r], -d[r] / b[r]
            for q in range(lo[sp - 2], hi[sp - 2]):
                for r in range(n):
                    jb[q, r] *= db[r]
            for q in range(lo[sp - 1], hi[sp - 1]):
                for r in range(n):
                    jb[q, r] = da[r] * ja[q, r]
            for r in range(n):
                b[r] = d[r]
            if hi[sp - 1] > lo[sp - 1]:
                if hi[sp - 2] > lo[sp - 2]:
                    lo[sp - 2] = min(lo[sp - 2], lo[sp - 1])
                    hi[sp - 2] = max(hi[sp - 2], hi[sp - 1])
                else:
                    lo[sp - 2], hi[sp - 2] = lo[sp - 1], hi[sp - 1]
            sp -= 1
        else:
            a = sv[sp - 1]
            for r in range(n):
                x = a[r]
                out = _unary_value_jit(op, x)
                if op == 4:
                    dr = np.cos(x)
                elif op == 5:
                    dr = -np.sin(x)
                elif op == 6:
                    dr = 1.0 + out * out
                elif op == 7:
                    dr = out
                elif op == 8:
                    dr = 1.0 / x
                elif op == 9:
                    dr = 0.5 / out
                elif op == 10:
                    dr = -(out * out)
                else:
                    dr = 2.0 * x
                a[r] = out
                d[r] = dr
            ja = sj[sp - 1]
            for q in range(lo[sp - 1], hi[sp - 1]):
                for r in range(n):
                    ja[q, r] *= d[r]
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


#: Every kernel :func:`compile_kernel` made, in the order their modules defined them (module-level
#: functions, like the kernels themselves): what :func:`compiled_signatures` counts.
KERNELS: list = []


def compile_kernel(function):
    """``function`` compiled as every kernel of the package is (numba, cached on disk, numpy's
    error model, no GIL), or None when the kernels are off (:data:`AVAILABLE`)."""
    if not AVAILABLE:
        return None
    kernel = numba.njit(cache=True, error_model="numpy", nogil=True)(function)
    KERNELS.append(kernel)
    return kernel


def _kernel_stats() -> list:
    """numba's compile record of each kernel (``Dispatcher.stats``; a numba without it: none)."""
    return [s for s in (getattr(k, "stats", None) for k in KERNELS) if s is not None]


def compile_misses() -> int:
    """How many kernel signatures this process has compiled rather than loaded from numba's disk
    cache (0 once the cache is warm)."""
    return sum(sum(s.cache_misses.values()) for s in _kernel_stats())


def cache_path() -> str | None:
    """Where numba keeps the compiled kernels of the first kernel module (None: unknown)."""
    return next((s.cache_path for s in _kernel_stats() if s.cache_path), None)


def compiled_signatures() -> dict[str, int]:
    """How many type signatures each kernel has compiled (or loaded from the disk cache) in this
    process, by kernel name: a fit that adds none ran entirely on code compiled before it."""
    return {f"{k.py_func.__module__}.{k.py_func.__name__}": len(k.signatures) for k in KERNELS}


if AVAILABLE:
    _compile = compile_kernel
    # Plain compiled calls: LLVM inlines them into the row loops (numba's IR-level inline='always'
    # measured slower, 45 against 34 microseconds for the scoring kernel, and compiled longer).
    _binary_value_jit = _compile(_binary_value)
    _unary_value_jit = _compile(_unary_value)
    _centered_normal_equations_jit = _compile(_centered_normal_equations)
    _run_jit = _compile(_run)
    _cholesky_solve_jit = _compile(_cholesky_solve)
    _normal_equations_jit = _compile(_normal_equations)
    _sum_of_squares_jit = _compile(_sum_of_squares)
    _lm_jit = _compile(_lm)
    _fit_jit = _compile(_fit)
else:
    _binary_value_jit = _unary_value_jit = _centered_normal_equations_jit = None
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
