"""A program's values and its Jacobian with respect to its constants, in one compiled pass.

Forward mode, one dual vector per stack slot, each node over all rows with the operator chosen
outside the row loop (so the loops vectorise): :func:`run_jit` is the kernel the inner fit
calls at every step, :func:`run_encoded` its Python entry point.
"""

from __future__ import annotations

import numpy as np

from dgsr.core.kernels.codes import CODES_BINARY_LAST, CONST_CODE, OPERATOR_TABLE, VAR_CODE
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.custom_rows import (
    node_binary_in_place_jit,
    node_binary_slopes_jit,
    node_unary_with_slope_jit,
)

__all__ = ["run_encoded", "run_jit"]


def _binary_partials(op, a, b, ja, jb, la, ha, lb, hb, d):  # pragma: no cover - compiled below
    """The partials of ``a op b`` (op code 0-3) into ``jb``: ``d(a op b)/da * ja`` over ``a``'s
    range ``[la, ha)`` and ``d(a op b)/db * jb`` over ``b``'s ``[lb, hb)`` (``d``: scratch)."""
    n = a.shape[0]
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


def _custom_partials(op, a, b, ja, jb, la, ha, lb, hb, da, db, table):  # pragma: no cover - compiled below
    """:func:`_binary_partials` of a user-defined binary operator: its partials ``da``, ``db``
    from ``table``, then the chain rule as for a product whose factors are those partials."""
    node_binary_slopes_jit(op, a, b, da, db, table)
    _binary_partials_jit(2, db, da, ja, jb, la, ha, lb, hb, da)


def _run(ops, args, theta, columns, value, jac, table):  # pragma: no cover - compiled below
    """Values ``[n]`` into ``value`` and the Jacobian ``[p, n]`` into ``jac`` (p = len(theta)).

    A subtree's constants are a contiguous range of ``theta`` (prefix order), so each stack slot
    carries the derivatives of its own range only, ``[lo, hi)``, as ``gradients.run_program``
    does: a non-finite partial then reaches only the constants below it. Node by node, each node
    over all rows with the operator chosen outside the row loop (so the loops vectorise): per
    row, the same operations in the same order as a row at a time. ``table``: the user-defined
    operators (:data:`dgsr.core.kernels.codes.OPERATOR_TABLE`).
    """
    n = columns.shape[1]
    p = theta.shape[0]
    depth = ops.shape[0]
    sv = np.empty((depth, n))
    sj = np.empty((depth, p, n))
    d = np.empty(n)
    d2 = np.empty(0)
    lo = np.zeros(depth, dtype=np.int64)
    hi = np.zeros(depth, dtype=np.int64)  # lo == hi: the slot depends on no constant
    sp = 0
    for k in range(depth):
        op = ops[k]
        if op == CONST_CODE:
            c, q = theta[args[k]], args[k]
            s, js = sv[sp], sj[sp, q]
            for r in range(n):
                s[r] = c
                js[r] = 1.0
            lo[sp], hi[sp] = q, q + 1
            sp += 1
        elif op == VAR_CODE:
            s, column = sv[sp], columns[args[k]]
            for r in range(n):
                s[r] = column[r]
            lo[sp], hi[sp] = 0, 0
            sp += 1
        elif op <= CODES_BINARY_LAST:
            a, b = sv[sp - 1], sv[sp - 2]  # the left operand is on top
            la, ha, lb, hb = lo[sp - 1], hi[sp - 1], lo[sp - 2], hi[sp - 2]
            if op >= 0:
                _binary_partials_jit(op, a, b, sj[sp - 1], sj[sp - 2], la, ha, lb, hb, d)
            else:
                if d2.shape[0] != n:
                    d2 = np.empty(n)
                _custom_partials_jit(op, a, b, sj[sp - 1], sj[sp - 2], la, ha, lb, hb, d, d2, table)
            node_binary_in_place_jit(op, a, b, table)
            if ha > la:
                if hb > lb:
                    lo[sp - 2], hi[sp - 2] = min(lb, la), max(hb, ha)
                else:
                    lo[sp - 2], hi[sp - 2] = la, ha
            sp -= 1
        else:
            a = sv[sp - 1]
            node_unary_with_slope_jit(op, a, d, table)
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


_binary_partials_jit = compile_kernel(_binary_partials)
_custom_partials_jit = compile_kernel(_custom_partials)
run_jit = compile_kernel(_run)


def run_encoded(ops: np.ndarray, args: np.ndarray, theta: np.ndarray,
                columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values ``[n_rows]`` and Jacobian ``[n_constants, n_rows]`` of an encoded program
    (:func:`dgsr.core.kernels.codes.encode`) at ``theta``. Non-finite values propagate."""
    n = columns.shape[1]
    value, jac = np.empty(n), np.empty((theta.shape[0], n))
    run_jit(ops, args, np.ascontiguousarray(theta, dtype=np.float64), columns, value, jac, OPERATOR_TABLE[0])
    return value, jac
