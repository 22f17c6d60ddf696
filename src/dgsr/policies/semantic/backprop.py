"""Semantic backpropagation: what values a node of an expression *should* take.

Given the values of every node of an expression on some rows and a target for the root, the
*desired values* of a node are found by inverting its ancestors one by one, from the root down
(Pawlak, Wieloch and Krawiec, IEEE TEVC 2015). The root's target is the data's ``y`` mapped
through the inverse of the root's least-squares linear scaling ``y ~ a*f + b`` (Virgolin,
Alderliesten and Bosman, GECCO 2019), so a node's desired values are in the expression's own
units. Where an ancestor cannot be inverted at a row (division by zero, ``sqrt`` of a negative,
``arcsin`` outside [-1, 1], ...) the desired value is NaN there: "any value will do as well as
another". The inverses are the operator table's (:mod:`dgsr.core.operators`); periodic
inverses take the branch nearest the node's current value.

Pure numpy, no warnings: every function runs under ``np.errstate(all="ignore")``.
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, NUMPY_FUNCTIONS, OPERATORS


def node_values(expr: Expression, columns: np.ndarray) -> list[np.ndarray]:
    """Values of the subtree rooted at every prefix position, each of shape ``[n_rows]``.

    ``columns`` is the data as ``[n_features, n_rows]`` (:func:`dgsr.core.evaluate.as_columns`).
    Non-finite values are kept (they mark rows where a subtree is undefined).
    """
    n_rows = columns.shape[1]
    values: list[np.ndarray | None] = [None] * expr.size
    stack: list[np.ndarray] = []
    ci = expr.n_constants
    with np.errstate(all="ignore"):
        for i in range(expr.size - 1, -1, -1):
            s = expr.symbols[i]
            if s == CONSTANT:
                ci -= 1
                v = np.full(n_rows, expr.constants[ci])
            elif s not in NUMPY_FUNCTIONS:
                v = columns[int(s[1:])]
            elif OPERATORS[s].arity == 1:
                v = np.asarray(NUMPY_FUNCTIONS[s](stack.pop()), dtype=np.float64)
            else:
                a = stack.pop()
                b = stack.pop()
                v = np.asarray(NUMPY_FUNCTIONS[s](a, b), dtype=np.float64)
            if v.shape != (n_rows,):
                v = np.broadcast_to(v, (n_rows,)).astype(np.float64)
            stack.append(v)
            values[i] = v
    return values  # type: ignore[return-value]


def parents(expr: Expression) -> list[int]:
    """``parents[i]`` is the prefix position of node ``i``'s parent (-1 for the root)."""
    out = [-1] * expr.size
    for i in range(expr.size):
        for c in expr.children(i):
            out[c] = i
    return out


def root_target(y: np.ndarray, root_value: np.ndarray, *, intercept: bool = True) -> np.ndarray:
    """Desired values of the root: ``(y - b) / a`` for the least-squares scaling ``y ~ a*f + b``
    (``y / a`` for ``y ~ a*f`` when ``intercept`` is False).

    When the root's values are constant, non-finite or uncorrelated with ``y`` the scaling is
    undefined and ``y`` itself is returned (matches downstream are scale-invariant anyway).
    """
    with np.errstate(all="ignore"):
        f = root_value
        if not np.all(np.isfinite(f)):
            return y.copy()
        if not intercept:
            ff, fy = float(f @ f), float(f @ y)
            a = fy / ff if ff > 0 else 0.0
            if not (math.isfinite(a) and a != 0.0):
                return y.copy()
            out = y / a
            return out if np.all(np.isfinite(out)) else y.copy()
        fc = f - f.mean()
        yc = y - y.mean()
        var_f = float(fc @ fc)
        var_y = float(yc @ yc)
        if not (var_f > 1e-300 and var_y > 0 and math.isfinite(var_f)):
            return y.copy()
        cov = float(fc @ yc)
        corr = cov / math.sqrt(var_f * var_y)
        if not (math.isfinite(corr) and abs(corr) > 1e-6):
            return y.copy()
        a = cov / var_f
        b = y.mean() - a * f.mean()
        out = (y - b) / a
    return out if np.all(np.isfinite(out)) else y.copy()


def spread(values: np.ndarray) -> float:
    """Sum of squared deviations from the mean (the denominator of an unexplained share); inf
    when it is not positive and finite."""
    with np.errstate(all="ignore"):
        c = values - values.mean()
        out = float(c @ c)
    return out if math.isfinite(out) and out > 0 else math.inf


def invert(op: str, child: int, desired: np.ndarray, values: list[np.ndarray], expr: Expression,
           position: int) -> np.ndarray:
    """Desired values of child number ``child`` of the node at ``position`` (operator ``op``),
    given the node's own desired values and the current values of its children: the operator
    table's inverse (``Operator.inverse``), NaN where it has none or its result is not finite."""
    kids = expr.children(position)
    inverse = OPERATORS[op].inverse
    with np.errstate(all="ignore"):
        if inverse is None:  # nothing to see through: no value does better than another
            return np.full(np.shape(desired), np.nan)
        if OPERATORS[op].arity == 2:
            out = inverse(child, desired, values[kids[1 - child]])
        else:
            out = inverse(desired, values[kids[child]])
        out = np.array(out, dtype=np.float64)
        out[~np.isfinite(out)] = np.nan
    return out


def desired_values(expr: Expression, values: list[np.ndarray], y: np.ndarray, position: int,
                   parent: list[int] | None = None, *, intercept: bool = True,
                   root: np.ndarray | None = None) -> np.ndarray:
    """Desired values of the node at ``position`` (NaN where no value would do better than another).

    ``values`` are :func:`node_values` of ``expr``; ``parent`` its :func:`parents` (computed if
    not given); ``intercept``: whether the root's scaling has an offset (:func:`root_target`);
    ``root``: the root's desired values when the caller has them already (``y`` is then unused).
    """
    parent = parents(expr) if parent is None else parent
    chain = []
    p = position
    while parent[p] != -1:
        chain.append((parent[p], p))
        p = parent[p]
    desired = root_target(y, values[0], intercept=intercept) if root is None else root
    for anc, node in reversed(chain):
        op = expr.symbols[anc]
        child = expr.children(anc).index(node)
        desired = invert(op, child, desired, values, expr, anc)
    return desired


def chain_gradient(expr: Expression, values: list[np.ndarray], position: int,
                   parent: list[int] | None = None) -> np.ndarray:
    """Derivative of the root's values with respect to the node at ``position``, at the current
    values (ones at the root; NaN where an ancestor is not differentiable).

    A change ``delta`` of the node changes the root by about ``gradient * delta``: it turns an error
    at the node into an error of the whole expression, so candidates at different nodes compare.
    """
    parent = parents(expr) if parent is None else parent
    grad = np.ones_like(values[0])
    p = position
    with np.errstate(all="ignore"):
        while parent[p] != -1:
            anc = parent[p]
            kids = expr.children(anc)
            grad = grad * _local_derivative(expr.symbols[anc], kids.index(p), values, kids)
            p = anc
        grad[~np.isfinite(grad)] = np.nan
    return grad


def _local_derivative(op: str, child: int, values: list[np.ndarray], kids: list[int]) -> np.ndarray | float:
    """The partial derivative of the node (operator ``op``) with respect to its child number
    ``child``, from the children's values only.

    Not read from the operator table on purpose (but for user-defined operators): the table's partials take the node's value too
    (``inv``: ``-(out*out)``, ``div``: ``-out/b``, the arithmetic of the fitting Jacobians), while
    these are the arithmetic the compiled chain gradient (``compiled_backprop._gradient``, which
    the search runs) repeats step for step; the two round differently and part at poles
    (``x/1e-308`` at ``x = 0``: NaN here, 0 in the table). tests/policies/test_backprop_table.py
    holds each branch equal to the table's derivative to rounding on finite values.
    """
    v = values[kids[0]]
    if op == "add":
        return 1.0
    if op == "sub":
        return 1.0 if child == 0 else -1.0
    if op == "mul":
        return values[kids[1 - child]]
    if op == "div":
        b = values[kids[1]]
        return 1.0 / b if child == 0 else -v / (b * b)
    if op == "inv":
        return -1.0 / (v * v)
    if op == "sq":
        return 2.0 * v
    if op == "sqrt":
        return 0.5 / np.sqrt(v)
    if op == "exp":
        return np.exp(v)
    if op == "log":
        return 1.0 / v
    if op == "sin":
        return np.cos(v)
    if op == "cos":
        return -np.sin(v)
    if op == "tan":
        t = np.tan(v)
        return 1.0 + t * t
    definition = OPERATORS[op]  # a user-defined operator: its derivative from the table
    if definition.arity == 1:
        return definition.derivative(v, None)
    return definition.derivative(v, values[kids[1]], None)[child]
