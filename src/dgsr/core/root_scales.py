"""A constant factor moved inside the square (or the square root) of a sum: the same function,
written with other constants.

``2.894*sqrt(G*rho - 0.1194*a)`` and ``sqrt(8.378*G*rho - a)`` are one function, and a fit finds
either. Only the second shows the law's coefficient -1, which snapping can then set exactly, and
it has one constant fewer. :func:`root_rescalings` writes each ``c*sqrt(S)`` (and ``sqrt(S)/c``,
``c*sq(S)`` for ``c > 0``) of an expression with ``c`` moved into the terms of the sum ``S``;
snapping tries both forms and keeps the one that reads simpler (:mod:`dgsr.core.snapping`).
Nothing here looks at data: it is algebra on the expression's tree.
"""

from __future__ import annotations

import math

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT

__all__ = ["root_rescalings"]

#: The power of each root (or square) the factor enters the sum with: ``c*sqrt(S) = sqrt(c**2*S)``.
_INTO = {"sqrt": 2.0, "sq": 0.5}
_SUM = ("add", "sub")


def _scaled_term(term: Expression, factor: float) -> Expression:
    """``factor * term``, into the term's own constant where it has one as a factor (``c``,
    ``c*t``, ``t*c``, ``c/t``, ``t/c``), else as a new one (``factor*t``)."""
    head = term.symbols[0]
    if head == CONSTANT:
        return Expression.constant(term.constants[0] * factor)
    if head in ("mul", "div"):
        for side, child in enumerate(term.children(0)):
            if term.symbols[child] == CONSTANT:
                index = term.constant_offset(child)
                values = list(term.constants)
                values[index] = values[index] / factor if (head == "div" and side == 1) else values[index] * factor
                return term.with_constants(values)
    return Expression.combine("mul", Expression.constant(factor), term)


def _scaled_sum(expr: Expression, position: int, factor: float) -> Expression:
    """The sum rooted at ``position`` with each of its terms multiplied by ``factor``."""
    symbol = expr.symbols[position]
    if symbol in _SUM:
        left, right = expr.children(position)
        return Expression.combine(symbol, _scaled_sum(expr, left, factor), _scaled_sum(expr, right, factor))
    return _scaled_term(expr.subtree(position), factor)


def _rescaled(expr: Expression, position: int, fixed: frozenset[int]) -> Expression | None:
    """``expr`` with the node at ``position`` (``mul`` or ``div``) rewritten when it is a constant
    times (or over) a root or square of a sum; None when it is not, or the constant is held."""
    symbol = expr.symbols[position]
    if symbol not in ("mul", "div"):
        return None
    left, right = expr.children(position)
    for const, other, side in ((left, right, 0), (right, left, 1)):
        root = expr.symbols[other]
        if expr.symbols[const] != CONSTANT or root not in _INTO or expr.symbols[other + 1] not in _SUM:
            continue
        if symbol == "div" and side == 0:  # c/sqrt(S): the factor would leave a division behind
            continue
        index = expr.constant_offset(const)
        c = expr.constants[index]
        if index in fixed or not math.isfinite(c) or c == 0.0 or (c < 0 and (root == "sq" or symbol == "div")):
            continue
        scale = abs(c) if symbol == "mul" else 1.0 / c
        factor = scale ** _INTO[root]
        if not (math.isfinite(factor) and factor > 0.0):
            continue
        inner = Expression.combine(root, _scaled_sum(expr, other + 1, factor))
        new = inner if c > 0 else Expression.combine("mul", Expression.constant(-1.0), inner)
        return expr.replace_subtree(position, new)
    return None


def root_rescalings(expr: Expression, fixed: frozenset[int] = frozenset()) -> list[Expression]:
    """Each way of moving one constant factor of ``expr`` inside the root or square of a sum it
    multiplies (one rewrite per such node, outermost first), each the same function as ``expr``
    and at most its size. ``fixed``: indices of constants held as they are (never moved)."""
    out = []
    for position in range(len(expr.symbols)):
        new = _rescaled(expr, position, fixed)
        if new is not None and new.size <= expr.size:
            out.append(new)
    return out
