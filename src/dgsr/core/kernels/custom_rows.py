"""User-defined operators over whole row arrays, and the node steps every program walker takes.

A user-defined operator (:mod:`dgsr.core.custom_operators`) is a node of the program like any
other; its value and partial derivatives are small postfix programs ("bodies") in the operator
table (:data:`dgsr.core.kernels.codes.OPERATOR_TABLE`), each run here instruction by instruction,
every instruction over all rows (so the loops vectorise as the built-in operators' do). The
walkers call :func:`node_unary_in_place_jit`, :func:`node_unary_with_slope_jit` and
:func:`node_binary_in_place_jit`: the built-in rows of :mod:`dgsr.core.kernels.rows` for the
Table 1 codes, a body for the others.

A body's binary instructions find their left operand on top of the stack, as the programs do.
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.kernels.codes import (
    BODY_ARG0,
    BODY_ARG1,
    BODY_LIT,
    BODY_POW,
    CODES_BINARY_LAST,
    USER_UNARY_CODES,
    USER_UNARY_FIRST,
)
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.rows import binary_in_place_jit, unary_in_place_jit, unary_with_slope_jit

__all__ = ["body_jit", "node_binary_in_place_jit", "node_binary_slopes_jit", "node_unary_in_place_jit",
           "node_unary_with_slope_jit"]

_N_UNARY_SLOTS = len(USER_UNARY_CODES)


def _function_in_place(code, s):  # pragma: no cover - compiled below
    """``s[r] = f(s[r])`` for a body's unary function beyond Table 1 (codes.BODY_UNARY)."""
    n = s.shape[0]
    if code == 201:
        for r in range(n):
            s[r] = abs(s[r])
    elif code == 202:
        for r in range(n):
            s[r] = np.tanh(s[r])
    elif code == 203:
        for r in range(n):
            s[r] = np.sinh(s[r])
    elif code == 204:
        for r in range(n):
            s[r] = np.cosh(s[r])
    elif code == 205:
        for r in range(n):
            s[r] = np.arctan(s[r])
    elif code == 206:
        for r in range(n):
            s[r] = np.arcsin(s[r])
    elif code == 207:
        for r in range(n):
            s[r] = np.arccos(s[r])
    elif code == 208:
        for r in range(n):
            s[r] = np.arcsinh(s[r])
    elif code == 209:
        for r in range(n):
            s[r] = math.erf(s[r])
    else:
        for r in range(n):
            x = s[r]
            s[r] = 1.0 if x > 0 else (-1.0 if x < 0 else (0.0 if x == 0 else x))


def _body(table, header_row, a, b, out):  # pragma: no cover - compiled below
    """``out[r]`` = the body at ``header_row`` of the table, its arguments ``a[r]`` and ``b[r]``."""
    start, end = int(table[header_row, 0]), int(table[header_row, 1])
    n = a.shape[0]
    stack = np.empty((max(end - start, 1), n))
    sp = 0
    for k in range(start, end):
        code = int(table[k, 0])
        if code == BODY_ARG0 or code == BODY_ARG1:
            s, source = stack[sp], (a if code == BODY_ARG0 else b)
            for r in range(n):
                s[r] = source[r]
            sp += 1
        elif code == BODY_LIT:
            s, v = stack[sp], table[k, 1]
            for r in range(n):
                s[r] = v
            sp += 1
        elif code <= CODES_BINARY_LAST:
            binary_in_place_jit(code, stack[sp - 1], stack[sp - 2])
            sp -= 1
        elif code == BODY_POW:
            base, power = stack[sp - 1], stack[sp - 2]
            for r in range(n):
                power[r] = base[r] ** power[r]
            sp -= 1
        elif code < USER_UNARY_FIRST:
            unary_in_place_jit(code, stack[sp - 1])
        else:
            _function_in_place_jit(code, stack[sp - 1])
    top = stack[0]
    for r in range(n):
        out[r] = top[r]


def _slot(op):  # pragma: no cover - compiled below
    return op - USER_UNARY_FIRST if op > 0 else _N_UNARY_SLOTS - 1 - op


def _node_unary_in_place(op, a, table):  # pragma: no cover - compiled below
    """``a[r] = op(a[r])``: a Table 1 unary operator, or a user-defined one from ``table``."""
    if op < USER_UNARY_FIRST:
        unary_in_place_jit(op, a)
    else:
        _body_jit(table, 3 * _slot_jit(op), a, a, a)


def _node_unary_with_slope(op, a, d, table):  # pragma: no cover - compiled below
    """:func:`_node_unary_in_place`, and each row's derivative into ``d``."""
    if op < USER_UNARY_FIRST:
        unary_with_slope_jit(op, a, d)
    else:
        h = 3 * _slot_jit(op)
        _body_jit(table, h + 1, a, a, d)
        _body_jit(table, h, a, a, a)


def _node_binary_in_place(op, a, b, table):  # pragma: no cover - compiled below
    """``b[r] = op(a[r], b[r])`` (``a`` the left operand): Table 1 or user-defined."""
    if op >= 0:
        binary_in_place_jit(op, a, b)
    else:
        _body_jit(table, 3 * _slot_jit(op), a, b, b)


def _node_binary_slopes(op, a, b, da, db, table):  # pragma: no cover - compiled below
    """The partials of a user-defined binary operator at each row, by its left ``da`` and right ``db`` argument."""
    h = 3 * _slot_jit(op)
    _body_jit(table, h + 1, a, b, da)
    _body_jit(table, h + 2, a, b, db)


_function_in_place_jit = compile_kernel(_function_in_place)
_body_jit = compile_kernel(_body)
body_jit = _body_jit
_slot_jit = compile_kernel(_slot)
node_unary_in_place_jit = compile_kernel(_node_unary_in_place)
node_unary_with_slope_jit = compile_kernel(_node_unary_with_slope)
node_binary_in_place_jit = compile_kernel(_node_binary_in_place)
node_binary_slopes_jit = compile_kernel(_node_binary_slopes)
