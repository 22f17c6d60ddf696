"""A library operand matched to a node's target, as the mutation that puts it there.

The match (:mod:`dgsr.policies.semantic.matching`) says which values ``c*L + d`` the operand
``B`` should take; where the path from the node to the root absorbs the scale (or the offset),
the constant is left to the search's free linear scaling, otherwise it goes in with the operand,
so the inner constants a law needs arrive with it.
"""

from __future__ import annotations

import math

from dgsr.core.expression import Expression
from dgsr.search.mutations import Mutation

__all__ = ["absorbs", "operand_for", "operand_mutation", "round4"]

# Operators through which a constant factor on a subtree becomes a constant factor on the whole.
_SCALE_PASSING = frozenset({"mul", "div", "inv", "sq", "sqrt"})
_ADDITIVE = frozenset({"add", "sub"})


def operand_mutation(meta: tuple[int, str, bool, bool], expr: Expression,
                     fit: tuple[float, float, float, float, float, float]) -> Mutation | None:
    """The mutation that puts ``expr`` at ``meta``'s node as its kind's operand (``meta``: the
    node, the kind, and whether the node's path absorbs a scale and an offset), or None."""
    pos, kind, scale_ok, offset_ok = meta
    proposal = operand_for(expr, kind, fit, scale_ok, offset_ok)
    return None if proposal is None else Mutation(pos, proposal[0], proposal[1])


def absorbs(expr: Expression, parent: list[int], position: int) -> tuple[bool, bool]:
    """Whether every ancestor of ``position`` passes a constant factor up to the root (first:
    the root's free linear scaling then absorbs it), and whether every ancestor is ``add`` or
    ``sub`` (second: the subtree is a term of a top-level sum, whose weight and offset the search
    fits for free)."""
    scale, offset = True, True
    p = parent[position]
    while p != -1:
        op = expr.symbols[p]
        if op not in _SCALE_PASSING:
            scale = False
        if op not in _ADDITIVE:
            offset = False
        p = parent[p]
    return scale, offset


def operand_for(expr: Expression, kind: str, fit: tuple[float, float, float, float, float, float],
             scale_ok: bool, offset_ok: bool) -> tuple[str, Expression] | None:
    """The mutation operator and operand ``B`` to propose for library entry ``expr`` and a target.

    ``B`` should take the values ``c*L + d`` (``L`` the entry's values, least squares on the
    target's rows; ``fit`` = ``c, d``, the slope through the origin ``c0``, the residual sums of
    squares with and without ``d``, and the target's sum of squares). Where the position absorbs
    the scale the entry goes in as ``L`` (or ``L + d/c``), otherwise as ``c*L`` (or ``c*L + d``);
    the offset is kept only where it is not absorbed and explains clearly more than a line through
    the origin. For ``add`` a negative ``c`` turns the mutation into ``sub``.
    """
    c, d, c0, sse_with, sse_without, tt = fit
    isfinite = math.isfinite
    if not (isfinite(c) and isfinite(d) and isfinite(c0) and isfinite(sse_with) and isfinite(sse_without)) or c == 0:
        return None
    # The offset goes in only where nothing absorbs it and it explains clearly more.
    use_offset = not offset_ok and sse_with < 0.9 * sse_without and sse_without > 1e-12 * tt
    coef = c if (offset_ok or use_offset) else c0
    if coef == 0 or not isfinite(coef):
        return None
    op = kind
    if kind == "add" and coef < 0:
        op, coef, d = "sub", -coef, -d  # A - (|c|*L - d)
    operand = expr
    if scale_ok:
        shift = d / coef if use_offset else 0.0
    else:
        operand = Expression.combine("mul", Expression.constant(round4(coef)), expr)
        shift = d if use_offset else 0.0
    if shift != 0.0 and isfinite(shift):
        operand = Expression.combine("add", operand, Expression.constant(round4(shift)))
    return op, operand


def round4(value: float) -> float:
    """``value`` to 4 significant digits: a proposal's constants are starts the search refits."""
    return float(f"{value:.4g}")
