"""Semantic backpropagation in compiled code: the node values, desired values and chain gradients
of :mod:`dgsr.policies.semantic.backprop`, equal to the last bit.

The semantic policy asks, for each of up to six positions of the expression it expands, what
values the node should take (the inverse of every ancestor applied from the root down) and how
much the root moves with it (the product of the ancestors' partial derivatives). In numpy that
is a dozen calls on a hundred rows per ancestor and per position, and on that size the calls,
not the arithmetic, cost: about half a millisecond per expansion. Here each is one compiled call.

Every step is the same elementwise arithmetic as the numpy definitions, in the same order (the
same libm functions on this platform: the tests hold the two equal bit for bit), so the policy
proposes exactly what it proposed before. With the kernels off
(:data:`dgsr.core.kernels.compiler.AVAILABLE` False) :func:`backprop_for` returns the numpy definitions behind the same interface.
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.custom_operators import uses_custom
from dgsr.core.expression import Expression
from dgsr.core.kernels import compiler
from dgsr.core.kernels.codes import CODES, CODES_BINARY_LAST, CONST_CODE, VAR_CODE
from dgsr.core.kernels.rows import binary_value_jit, unary_value_jit
from dgsr.core.kernels.structure import structure
from dgsr.policies.semantic.backprop import (
    chain_gradient,
    desired_values,
    node_values,
    parents,
    root_target,
    spread,
)

_ADD, _SUB, _MUL, _DIV = 0, 1, 2, 3
_SIN, _COS, _TAN, _EXP, _LOG, _SQRT, _INV, _SQ = 4, 5, 6, 7, 8, 9, 10, 11
_CONST, _VAR = CONST_CODE, VAR_CODE
_BINARY_LAST = CODES_BINARY_LAST
assert [CODES[s] for s in ("sin", "cos", "tan", "exp", "log", "sqrt", "inv", "sq")] == list(range(4, 12))
_PI = math.pi
_TWO_PI = 2.0 * math.pi


def _node_values(ops, args, theta, columns, values, parent, ends):  # pragma: no cover - compiled below
    """Every node's values into ``values[i]`` (prefix position ``i``), its parent into
    ``parent[i]`` (-1 at the root) and one past its subtree's last symbol into ``ends[i]``;
    ``ops``/``args`` in prefix order."""
    size = ops.shape[0]
    n = columns.shape[1]
    stack = np.empty(size, dtype=np.int64)  # prefix positions of the finished subtrees
    sp = 0
    for i in range(size - 1, -1, -1):  # postfix order: every child before its parent
        op = ops[i]
        if op == _CONST:
            c = theta[args[i]]
            for r in range(n):
                values[i, r] = c
            ends[i] = i + 1
        elif op == _VAR:
            j = args[i]
            for r in range(n):
                values[i, r] = columns[j, r]
            ends[i] = i + 1
        elif op <= _BINARY_LAST:
            a, b = stack[sp - 1], stack[sp - 2]  # the left child is on top
            for r in range(n):
                values[i, r] = binary_value_jit(op, values[a, r], values[b, r])
            parent[a] = i
            parent[b] = i
            ends[i] = ends[b]
            sp -= 2
        else:
            a = stack[sp - 1]
            for r in range(n):
                values[i, r] = unary_value_jit(op, values[a, r])
            parent[a] = i
            ends[i] = ends[a]
            sp -= 1
        stack[sp] = i
        sp += 1
    parent[0] = -1


def _nearest(principal, current, mirror, has_mirror, period):  # pragma: no cover - compiled below
    """operators._nearest_branch (the sin, cos and tan inverses) at one row (``np.round`` is
    round-half-even: ``rint``)."""
    cur = current if np.isfinite(current) else 0.0
    best = principal + np.rint((cur - principal) / period) * period
    if not has_mirror:
        return best
    other = mirror - principal
    other = other + np.rint((cur - other) / period) * period
    return other if abs(other - cur) < abs(best - cur) else best


def _desired(ops, parent, ends, values, root, position, out):  # pragma: no cover - compiled below
    """backprop.desired_values of ``position`` from the root's desired values ``root``, into ``out``."""
    n = root.shape[0]
    chain = np.empty(ops.shape[0], dtype=np.int64)
    depth = 0
    p = position
    while parent[p] != -1:
        chain[depth] = p
        depth += 1
        p = parent[p]
    for r in range(n):
        out[r] = root[r]
    for level in range(depth - 1, -1, -1):
        node = chain[level]
        anc = parent[node]
        op = ops[anc]
        child = 0 if node == anc + 1 else 1
        if op <= _BINARY_LAST:
            other = ends[anc + 1] if child == 0 else anc + 1
            for r in range(n):
                d, o = out[r], values[other, r]
                if op == _ADD:
                    v = d - o
                elif op == _SUB:
                    v = d + o if child == 0 else o - d
                elif op == _MUL:
                    v = d / o
                else:
                    v = d * o if child == 0 else o / d
                out[r] = v if np.isfinite(v) else np.nan
        else:
            for r in range(n):
                d, current = out[r], values[node, r]
                if op == _INV:
                    v = 1.0 / d
                elif op == _SQ:
                    root_value = np.sqrt(d if d >= 0 else np.nan)
                    v = -root_value if current < 0 else root_value
                elif op == _SQRT:
                    v = d * d if d >= 0 else np.nan
                elif op == _EXP:
                    v = np.log(d if d > 0 else np.nan)
                elif op == _LOG:
                    v = np.exp(d if d < 700 else np.nan)
                elif op == _SIN:
                    v = _nearest_jit(np.arcsin(d if -1.0 <= d <= 1.0 else np.nan), current, _PI, True, _TWO_PI)
                elif op == _COS:
                    v = _nearest_jit(np.arccos(d if -1.0 <= d <= 1.0 else np.nan), current, 0.0, True, _TWO_PI)
                else:  # tan
                    v = _nearest_jit(np.arctan(d), current, 0.0, False, _PI)
                out[r] = v if np.isfinite(v) else np.nan


def _gradient(ops, parent, ends, values, position, out):  # pragma: no cover - compiled below
    """backprop.chain_gradient of ``position`` into ``out``: the partials multiplied in from the
    node up to the root, NaN where the product is not finite."""
    n = out.shape[0]
    for r in range(n):
        out[r] = 1.0
    p = position
    while parent[p] != -1:
        anc = parent[p]
        op = ops[anc]
        child = 0 if p == anc + 1 else 1
        left = anc + 1
        right = ends[left]
        for r in range(n):
            v = values[left, r]
            if op == _ADD:
                g = 1.0
            elif op == _SUB:
                g = 1.0 if child == 0 else -1.0
            elif op == _MUL:
                g = values[right, r] if child == 0 else v
            elif op == _DIV:
                b = values[right, r]
                g = 1.0 / b if child == 0 else -v / (b * b)
            elif op == _INV:
                g = -1.0 / (v * v)
            elif op == _SQ:
                g = 2.0 * v
            elif op == _SQRT:
                g = 0.5 / np.sqrt(v)
            elif op == _EXP:
                g = np.exp(v)
            elif op == _LOG:
                g = 1.0 / v
            elif op == _SIN:
                g = np.cos(v)
            elif op == _COS:
                g = -np.sin(v)
            else:
                t = np.tan(v)
                g = 1.0 + t * t
            out[r] = out[r] * g
        p = anc
    for r in range(n):
        if not np.isfinite(out[r]):
            out[r] = np.nan


_node_values_jit = compiler.compile_kernel(_node_values)
_nearest_jit = compiler.compile_kernel(_nearest)
desired_jit = compiler.compile_kernel(_desired)
gradient_jit = compiler.compile_kernel(_gradient)


class CompiledBackprop:
    """Backpropagation through one expression on ``columns``: ``values`` ``[size, n_rows]``,
    ``parent`` (a list), and the desired values and chain gradient of any position."""

    def __init__(self, expr: Expression, columns: np.ndarray):
        shape = structure(expr.symbols)
        self._ops = shape.ops[::-1].copy()  # always a writable copy: one compiled signature
        args = shape.args[::-1].copy()
        theta = np.array(expr.constants, dtype=np.float64) if expr.constants else np.zeros(1)
        size, n = len(self._ops), columns.shape[1]
        self.values = np.empty((size, n))
        self._parent = np.empty(size, dtype=np.int64)
        self._ends = np.empty(size, dtype=np.int64)
        _node_values_jit(self._ops, args, theta, columns, self.values, self._parent, self._ends)
        self.parent = self._parent.tolist()

    @property
    def tree(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The expression as the kernels read it: op codes, parents and subtree ends, in prefix
        order (for other kernels that call :func:`desired_jit` / :func:`gradient_jit`)."""
        return self._ops, self._parent, self._ends

    def desired(self, position: int, root: np.ndarray) -> np.ndarray:
        """:func:`backprop.desired_values` of ``position`` given the root's desired values."""
        out = np.empty(root.shape[0])
        desired_jit(self._ops, self._parent, self._ends, self.values, root, position, out)
        return out

    def gradient(self, position: int) -> np.ndarray:
        """:func:`backprop.chain_gradient` of ``position``."""
        out = np.empty(self.values.shape[1])
        gradient_jit(self._ops, self._parent, self._ends, self.values, position, out)
        return out


class NumpyBackprop:
    """:class:`CompiledBackprop`'s interface over the numpy definitions (the reference)."""

    def __init__(self, expr: Expression, columns: np.ndarray):
        self._expr = expr
        self.values = node_values(expr, columns)
        self.parent = parents(expr)

    def desired(self, position: int, root: np.ndarray) -> np.ndarray:
        return desired_values(self._expr, self.values, root, position, self.parent, root=root)

    def gradient(self, position: int) -> np.ndarray:
        with np.errstate(all="ignore"):
            return chain_gradient(self._expr, self.values, position, self.parent)


def backprop_for(expr: Expression, columns: np.ndarray) -> CompiledBackprop | NumpyBackprop:
    """The compiled backpropagation when numba is there, else the numpy one (the same values).
    Through a user-defined operator (its inverse is numpy code derived by SymPy), the numpy one."""
    if compiler.AVAILABLE and not uses_custom(expr.symbols):
        return CompiledBackprop(expr, columns)
    return NumpyBackprop(expr, columns)


def _root_target_into(y, f, intercept, out):  # pragma: no cover - compiled below
    """:func:`dgsr.policies.semantic.backprop.root_target` into ``out`` (sums in row order)."""
    n = y.shape[0]
    usable = True
    for r in range(n):
        if not np.isfinite(f[r]):
            usable = False
    a = b = 0.0
    if usable and not intercept:
        ff = fy = 0.0
        for r in range(n):
            ff += f[r] * f[r]
            fy += f[r] * y[r]
        a = fy / ff if ff > 0 else 0.0
        usable = np.isfinite(a) and a != 0.0
    elif usable:
        f_mean = y_mean = 0.0
        for r in range(n):
            f_mean += f[r]
            y_mean += y[r]
        f_mean /= n
        y_mean /= n
        var_f = var_y = cov = 0.0
        for r in range(n):
            fc, yc = f[r] - f_mean, y[r] - y_mean
            var_f += fc * fc
            var_y += yc * yc
            cov += fc * yc
        usable = var_f > 1e-300 and var_y > 0 and np.isfinite(var_f)
        if usable:
            corr = cov / math.sqrt(var_f * var_y)
            usable = np.isfinite(corr) and abs(corr) > 1e-6
            a = cov / var_f
            b = y_mean - a * f_mean
    if usable:
        for r in range(n):
            out[r] = (y[r] - b) / a
            if not np.isfinite(out[r]):
                usable = False
    if not usable:
        for r in range(n):
            out[r] = y[r]
    # its spread, as backprop.spread: the sum of squared deviations, inf when not positive and finite
    mean = 0.0
    for r in range(n):
        mean += out[r]
    mean /= n
    total = 0.0
    for r in range(n):
        c = out[r] - mean
        total += c * c
    return total if np.isfinite(total) and total > 0 else np.inf


_root_target_into_jit = compiler.compile_kernel(_root_target_into)


def root_targets(y: np.ndarray, root_value: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], tuple[float, float]]:
    """The root's desired values without and with an offset (:func:`root_target` with
    ``intercept`` False, then True) and their :func:`spread`, in two compiled calls when numba
    is there. Its sums run in row order rather than numpy's pairwise and BLAS orders, so the
    targets agree with the numpy definitions to rounding, not bit for bit."""
    if not compiler.AVAILABLE:
        targets = (root_target(y, root_value, intercept=False), root_target(y, root_value, intercept=True))
        return targets, (spread(targets[0]), spread(targets[1]))
    without, with_offset = np.empty_like(y), np.empty_like(y)
    spread_without = _root_target_into_jit(y, root_value, False, without)
    spread_with = _root_target_into_jit(y, root_value, True, with_offset)
    return (without, with_offset), (float(spread_without), float(spread_with))
