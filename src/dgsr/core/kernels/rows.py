"""The operators of an encoded program over whole row arrays: the loops every kernel shares.

Op codes: :mod:`dgsr.core.kernels.codes`. :func:`binary_value_jit` and :func:`unary_value_jit`
are the one-row table (the policy's kernels call it inside their own loops);
:func:`binary_in_place_jit`, :func:`unary_in_place_jit` and :func:`unary_with_slope_jit` take a
whole node over all rows with the operator chosen outside the row loop, so the loops vectorise.
``sin``, ``cos`` and ``exp`` there are the package's own (:func:`trig_in_place_jit`,
:func:`exp_in_place_jit`), within two units in the last place of libm's
(tests/core/kernels/test_rows.py), because libm's are scalar calls. All compiled with
:func:`dgsr.core.kernels.compiler.compile_kernel`.
"""

from __future__ import annotations

import numpy as np

from dgsr.core.kernels.compiler import compile_kernel

__all__ = ["binary_in_place_jit", "binary_value_jit", "exp_in_place_jit", "trig_in_place_jit", "trig_with_slope_jit",
           "unary_in_place_jit", "unary_value_jit", "unary_with_slope_jit"]


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


# sin and cos of a whole row array in loops LLVM vectorises. libm's are scalar calls (about 9 ns
# a row on the benchmark machine, where a product takes 0.4), and a Friedman child has about two
# of them, scored on all rows and again in each inner-fit pass. The argument is reduced by
# r = x - k*pi/2 with pi/2 in three parts (the first two of 33 bits, so k*part is exact for
# |k| < 2**20; the third's product rounds below 1e-30 there), then sin and cos of r come from
# the minimax polynomials of fdlibm's k_sin.c / k_cos.c (published coefficients, |r| <= pi/4,
# under an ulp there) and k's quadrant picks one. Beyond _TRIG_LIMIT, or for a non-finite row, the whole array takes libm instead.
_TRIG_LIMIT = 1e5
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e+00  # the first 33 bits of pi/2
_PIO2_2 = 6.07710050630396597660e-11  # the next 33
_PIO2_3 = 2.02226624871116645580e-21  # the next 53
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


def _reduced_sin_cos(x):  # pragma: no cover - compiled below
    """``(sin r, cos r, q)`` with ``x = r + (4m + q)*pi/2``, ``|r| <= pi/4``, ``q`` in 0..3 (a float)."""
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    c = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    return s, c, k - 4.0 * np.floor(0.25 * k)


def _quadrant_value(s, c, q):  # pragma: no cover - compiled below
    """sin(r + q*pi/2) from sin r and cos r (``q`` in 0..7, a float)."""
    q = q - 4.0 * np.floor(0.25 * q)
    v = c if (q == 1.0 or q == 3.0) else s
    return -v if q >= 2.0 else v


def _all_within(a, limit):  # pragma: no cover - compiled below
    """Whether every row of ``a`` is finite and at most ``limit`` in size (the fast paths' domain)."""
    far = 0
    for r in range(a.shape[0]):
        if not abs(a[r]) <= limit:
            far += 1
    return far == 0


def _trig_in_place(a, phase):  # pragma: no cover - compiled below
    """``a[r] = sin(a[r] + phase*pi/2)``: sin for ``phase`` 0, cos for 1 (sin(-0) stays -0)."""
    if not _all_within_jit(a, _TRIG_LIMIT):
        for r in range(a.shape[0]):
            a[r] = np.sin(a[r]) if phase == 0 else np.cos(a[r])
        return
    for r in range(a.shape[0]):
        x = a[r]
        s, c, q = _reduced_sin_cos_jit(x)
        v = _quadrant_value_jit(s, c, q + phase)
        a[r] = x if (x == 0.0 and phase == 0) else v


def _trig_with_slope(a, slope, phase):  # pragma: no cover - compiled below
    """:func:`_trig_in_place`, and its derivative at each row into ``slope`` (sin(x + (phase + 1)*pi/2))."""
    if not _all_within_jit(a, _TRIG_LIMIT):
        for r in range(a.shape[0]):
            x = a[r]
            if phase == 0:
                a[r], slope[r] = np.sin(x), np.cos(x)
            else:
                a[r], slope[r] = np.cos(x), -np.sin(x)
        return
    for r in range(a.shape[0]):
        x = a[r]
        s, c, q = _reduced_sin_cos_jit(x)
        v = _quadrant_value_jit(s, c, q + phase)
        slope[r] = _quadrant_value_jit(s, c, q + phase + 1.0)
        a[r] = x if (x == 0.0 and phase == 0) else v


# exp of a whole row array the same way: x = k*ln2 + r with ln2 in two parts (the first of 32
# bits: k*part exact for |k| < 2**21), exp(r) for |r| <= ln2/2 by fdlibm's e_exp.c rational form
# (published coefficients, under an ulp), times 2**k built from its bits. Rows beyond
# _EXP_LIMIT (where 2**k or the result leaves the normal range) or non-finite: libm for the array.
_EXP_LIMIT = 708.0
_INV_LN2 = 1.44269504088896338700e+00
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_P1, _P2, _P3 = 1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05
_P4, _P5 = -1.65339022054652515390e-06, 4.13813679705723846039e-08


def _exp_in_place(a):  # pragma: no cover - compiled below
    """``a[r] = exp(a[r])``."""
    n = a.shape[0]
    if not _all_within_jit(a, _EXP_LIMIT):
        for r in range(n):
            a[r] = np.exp(a[r])
        return
    bits = np.empty(n, dtype=np.int64)
    for r in range(n):
        x = a[r]
        k = np.floor(x * _INV_LN2 + 0.5)
        hi = x - k * _LN2_HI
        lo = k * _LN2_LO
        t = hi - lo
        z = t * t
        c = t - z * (_P1 + z * (_P2 + z * (_P3 + z * (_P4 + z * _P5))))
        a[r] = 1.0 - ((lo - (t * c) / (2.0 - c)) - hi)
        bits[r] = (np.int64(k) + 1023) << 52  # the bits of 2**k: a normal number for |k| <= 1022
    scale = bits.view(np.float64)
    for r in range(n):
        a[r] *= scale[r]


def _unary_in_place(op, a):  # pragma: no cover - compiled below
    """``a[r] = op(a[r])`` for the unary op code ``op`` (4-11), one loop per operator."""
    n = a.shape[0]
    if op == 4 or op == 5:
        trig_in_place_jit(a, op - 4)
    elif op == 6:
        for r in range(n):
            a[r] = np.tan(a[r])
    elif op == 7:
        exp_in_place_jit(a)
    elif op == 8:
        for r in range(n):
            a[r] = np.log(a[r])
    elif op == 9:
        for r in range(n):
            a[r] = np.sqrt(a[r])
    elif op == 10:
        for r in range(n):
            a[r] = 1.0 / a[r]
    else:
        for r in range(n):
            a[r] = a[r] * a[r]


def _unary_with_slope(op, a, d):  # pragma: no cover - compiled below
    """:func:`_unary_in_place` with each row's derivative into ``d``."""
    n = a.shape[0]
    if op == 4 or op == 5:
        trig_with_slope_jit(a, d, op - 4)
    elif op == 6:
        for r in range(n):
            out = np.tan(a[r])
            a[r] = out
            d[r] = 1.0 + out * out
    elif op == 7:
        exp_in_place_jit(a)
        for r in range(n):
            d[r] = a[r]
    elif op == 8:
        for r in range(n):
            x = a[r]
            a[r] = np.log(x)
            d[r] = 1.0 / x
    elif op == 9:
        for r in range(n):
            out = np.sqrt(a[r])
            a[r] = out
            d[r] = 0.5 / out
    elif op == 10:
        for r in range(n):
            out = 1.0 / a[r]
            a[r] = out
            d[r] = -(out * out)
    else:
        for r in range(n):
            x = a[r]
            a[r] = x * x
            d[r] = 2.0 * x


def _binary_in_place(op, a, b):  # pragma: no cover - compiled below
    """``b[r] = op(a[r], b[r])`` for the binary op code ``op`` (0-3; ``a`` the left operand)."""
    n = a.shape[0]
    if op == 0:
        for r in range(n):
            b[r] = a[r] + b[r]
    elif op == 1:
        for r in range(n):
            b[r] = a[r] - b[r]
    elif op == 2:
        for r in range(n):
            b[r] = a[r] * b[r]
    else:
        for r in range(n):
            b[r] = a[r] / b[r]


# Plain compiled calls: LLVM inlines them into the row loops (numba's IR-level inline='always'
# measured slower, 45 against 34 microseconds for the scoring kernel, and compiled longer).
binary_value_jit = compile_kernel(_binary_value)
unary_value_jit = compile_kernel(_unary_value)
_reduced_sin_cos_jit = compile_kernel(_reduced_sin_cos)
_quadrant_value_jit = compile_kernel(_quadrant_value)
_all_within_jit = compile_kernel(_all_within)
trig_in_place_jit = compile_kernel(_trig_in_place)
trig_with_slope_jit = compile_kernel(_trig_with_slope)
exp_in_place_jit = compile_kernel(_exp_in_place)
unary_in_place_jit = compile_kernel(_unary_in_place)
unary_with_slope_jit = compile_kernel(_unary_with_slope)
binary_in_place_jit = compile_kernel(_binary_in_place)
