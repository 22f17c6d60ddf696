"""The small linear algebra of the compiled kernels: Cholesky solves, the normal equations of a
least-squares fit (with and without an intercept) and a sum of squares.

The inner fit (:mod:`dgsr.core.kernels.fit`) and the scoring's term fit
(:mod:`dgsr.core.kernels.scoring`) call them. Plain loops on purpose: a LAPACK call from numba
costs more to compile than a whole fit costs to run. The sums over rows are compiled with
``reassociate`` (:func:`dgsr.core.kernels.compiler.compile_kernel`): LLVM spreads each over
vector lanes, an order fixed by the code and the processor, so the values are reproducible on
one machine and agree with a row-order sum to rounding.
"""

from __future__ import annotations

import numpy as np

from dgsr.core.kernels.compiler import compile_kernel

__all__ = ["centered_normal_equations_jit", "cholesky_solve_jit", "normal_equations_jit", "sum_of_squares_jit"]


def _cholesky_solve(a, b, out, floor):  # pragma: no cover - compiled below
    """Solve ``a x = b`` for symmetric positive definite ``a`` (p x p) into ``out``; False when a
    squared pivot is not above ``floor`` (numerically singular), then ``out`` is undefined. Plain loops: a
    LAPACK call from numba costs more to compile than the whole fit costs to run."""
    p = a.shape[0]
    low = np.zeros((p, p))
    for i in range(p):
        for j in range(i + 1):
            total = a[i, j]
            for k in range(j):
                total -= low[i, k] * low[j, k]
            if i == j:
                if not total > floor:
                    return False
                low[i, i] = np.sqrt(total)
            else:
                low[i, j] = total / low[j, j]
    for i in range(p):  # forward: low z = b
        total = b[i]
        for k in range(i):
            total -= low[i, k] * out[k]
        out[i] = total / low[i, i]
    for i in range(p - 1, -1, -1):  # backward: low^T x = z
        total = out[i]
        for k in range(i + 1, p):
            total -= low[k, i] * out[k]
        out[i] = total / low[i, i]
    return True


def _row_sums(rows, index, y, sums):  # pragma: no cover - compiled below
    """The sum over rows of each ``rows[index[i]]`` into ``sums[i]``, then ``y``'s into
    ``sums[m]``: four sums share each pass."""
    n = y.shape[0]
    m = index.shape[0]
    s = 0
    while s <= m:
        if s + 4 <= m + 1:
            a0 = rows[index[s]] if s < m else y
            a1 = rows[index[s + 1]] if s + 1 < m else y
            a2 = rows[index[s + 2]] if s + 2 < m else y
            a3 = rows[index[s + 3]] if s + 3 < m else y
            t0 = t1 = t2 = t3 = 0.0
            for r in range(n):
                t0 += a0[r]
                t1 += a1[r]
                t2 += a2[r]
                t3 += a3[r]
            sums[s], sums[s + 1], sums[s + 2], sums[s + 3] = t0, t1, t2, t3
            s += 4
        else:
            a = rows[index[s]] if s < m else y
            total = 0.0
            for r in range(n):
                total += a[r]
            sums[s] = total
            s += 1


def _cross_pairs(m):  # pragma: no cover - compiled below
    """The cross sums the centred normal equations need, as ``(left, right)`` index lists:
    ``(i, m)`` is ``rhs[i]`` (``m`` stands for ``y``), ``(i, j)`` with ``j <= i`` is ``gram[i, j]``."""
    count = m * (m + 1) // 2 + m
    left = np.empty(count, dtype=np.int64)
    right = np.empty(count, dtype=np.int64)
    c = 0
    for i in range(m):
        left[c], right[c] = i, m
        c += 1
        for j in range(i + 1):
            left[c], right[c] = i, j
            c += 1
    return left, right


def _cross_sums(rows, index, y, means, y_mean, left, right, out):  # pragma: no cover - compiled below
    """``out[c] = sum_r (a[r] - mean a) * (b[r] - mean b)`` for the pair ``(left[c], right[c])``
    of :func:`_cross_pairs`: four sums share each pass."""
    n = y.shape[0]
    m = index.shape[0]
    count = left.shape[0]
    c = 0
    while c < count:
        if c + 4 <= count:
            k0, k1, k2, k3 = left[c], left[c + 1], left[c + 2], left[c + 3]
            l0, l1, l2, l3 = right[c], right[c + 1], right[c + 2], right[c + 3]
            a0, a1, a2, a3 = rows[index[k0]], rows[index[k1]], rows[index[k2]], rows[index[k3]]
            b0 = rows[index[l0]] if l0 < m else y
            b1 = rows[index[l1]] if l1 < m else y
            b2 = rows[index[l2]] if l2 < m else y
            b3 = rows[index[l3]] if l3 < m else y
            ma0, ma1, ma2, ma3 = means[k0], means[k1], means[k2], means[k3]
            mb0 = means[l0] if l0 < m else y_mean
            mb1 = means[l1] if l1 < m else y_mean
            mb2 = means[l2] if l2 < m else y_mean
            mb3 = means[l3] if l3 < m else y_mean
            t0 = t1 = t2 = t3 = 0.0
            for r in range(n):
                t0 += (a0[r] - ma0) * (b0[r] - mb0)
                t1 += (a1[r] - ma1) * (b1[r] - mb1)
                t2 += (a2[r] - ma2) * (b2[r] - mb2)
                t3 += (a3[r] - ma3) * (b3[r] - mb3)
            out[c], out[c + 1], out[c + 2], out[c + 3] = t0, t1, t2, t3
            c += 4
        else:
            a = rows[index[left[c]]]
            b = rows[index[right[c]]] if right[c] < m else y
            ma = means[left[c]]
            mb = means[right[c]] if right[c] < m else y_mean
            total = 0.0
            for r in range(n):
                total += (a[r] - ma) * (b[r] - mb)
            out[c] = total
            c += 1


def _centered_normal_equations(rows, index, y, means, gram, rhs):  # pragma: no cover - compiled below
    """The normal equations of ``y ~ b + sum_i w_i * rows[index[i]]`` with the intercept
    eliminated (rows and ``y`` centred): their means into ``means``, ``gram`` and ``rhs``
    filled; returns ``y``'s mean. The inner fit's closed-form start and the scoring kernel's term
    weights both solve these.

    Four sums share each pass over the rows (the means with ``y``'s, then the cross sums
    ``(i, j)`` and ``(i, y)`` in one list), each in vector lanes (module docstring)."""
    n = y.shape[0]
    m = index.shape[0]
    sums = np.empty(m + 1)  # the rows' sums, then y's
    _row_sums_jit(rows, index, y, sums)
    for i in range(m):
        means[i] = sums[i] / n
    y_mean = sums[m] / n
    left, right = _cross_pairs_jit(m)
    count = left.shape[0]
    out = np.empty(count)
    _cross_sums_jit(rows, index, y, means, y_mean, left, right, out)
    for c in range(count):
        i, j = left[c], right[c]
        if j == m:
            rhs[i] = out[c]
        else:
            gram[i, j] = gram[j, i] = out[c]
    return y_mean


def _normal_equations(jac, residual, gram, gradient):  # pragma: no cover - compiled below
    """``gram = J J^T`` and ``gradient = J r`` with non-finite Jacobian entries read as 0.

    Four entries of a row of ``gram`` share one pass over the rows, each sum in vector lanes
    (module docstring)."""
    p, n = jac.shape
    for i in range(p):
        for r in range(n):
            if not np.isfinite(jac[i, r]):
                jac[i, r] = 0.0
    for i in range(p):
        a = jac[i]
        g = 0.0
        for r in range(n):
            g += a[r] * residual[r]
        gradient[i] = g
        j = 0
        while j + 4 <= i + 1:
            b0, b1, b2, b3 = jac[j], jac[j + 1], jac[j + 2], jac[j + 3]
            t0 = t1 = t2 = t3 = 0.0
            for r in range(n):
                ar = a[r]
                t0 += ar * b0[r]
                t1 += ar * b1[r]
                t2 += ar * b2[r]
                t3 += ar * b3[r]
            gram[i, j] = gram[j, i] = t0
            gram[i, j + 1] = gram[j + 1, i] = t1
            gram[i, j + 2] = gram[j + 2, i] = t2
            gram[i, j + 3] = gram[j + 3, i] = t3
            j += 4
        while j <= i:
            b = jac[j]
            total = 0.0
            for r in range(n):
                total += a[r] * b[r]
            gram[i, j] = gram[j, i] = total
            j += 1


def _sum_of_squares(value, y, residual):  # pragma: no cover - compiled below
    """``residual = value - y`` and its sum of squares."""
    total = 0.0
    for r in range(y.shape[0]):
        residual[r] = value[r] - y[r]
        total += residual[r] * residual[r]
    return total


_row_sums_jit = compile_kernel(_row_sums, reassociate=True)
_cross_pairs_jit = compile_kernel(_cross_pairs)
_cross_sums_jit = compile_kernel(_cross_sums, reassociate=True)
cholesky_solve_jit = compile_kernel(_cholesky_solve)
# Sums over rows, in vector lanes (compile_kernel's ``reassociate``).
centered_normal_equations_jit = compile_kernel(_centered_normal_equations, reassociate=True)
normal_equations_jit = compile_kernel(_normal_equations, reassociate=True)
sum_of_squares_jit = compile_kernel(_sum_of_squares, reassociate=True)
