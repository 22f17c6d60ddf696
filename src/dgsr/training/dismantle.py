"""Backward dismantling of a ground truth into a mutation sequence (Appendix A, Figure 2).

From ``f*`` we repeatedly pick an internal node, delete it (and, for a binary node, one child
subtree ``B``) and reconnect the remaining child ``A`` to the parent, until the expression is at
most ``mutation_size`` nodes; the last backward step removes everything (``0 -> B``). Reversed,
the steps are mutations ``m1..mL`` that rebuild ``f*`` exactly from the empty expression:

* removing unary ``op`` above ``A`` at prefix position ``p``  ->  ``<p, op>``
* removing binary ``op`` and its right child ``B``  ->  ``<p, op, B>``   (``A -> A op B``)
* removing binary ``op`` and its left child ``B``   ->  ``<p, rop, B>``  (``A -> B op A``)

The node index ``p`` is valid in the smaller expression because everything before ``p`` in
prefix order is unchanged. ``mutation_size`` controls the size of ``B`` (Table 4): 1 (every ``B``
is a leaf), about 10 (the paper's default) or ``math.inf`` (one ``0 -> f*`` mutation).
"""

from __future__ import annotations

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import arity
from dgsr.search.mutations import Mutation


def mutation_path(
    expr: Expression, rng: np.random.Generator, mutation_size: float = 10
) -> list[tuple[Expression, Mutation]]:
    """``(state before, mutation)`` pairs rebuilding ``expr`` from the empty expression, in order.

    Binary removals take a child ``B`` of at most ``mutation_size`` nodes, drawn with weight
    ``size(B)**2`` so that mutations are as large as allowed most of the time; unary removals
    (size 0) have weight 1. An exact size cannot be guaranteed (the paper's footnote): a tree may
    not contain a subtree of exactly that size.
    """
    if mutation_size < 1:
        raise ValueError(f"mutation_size must be >= 1, got {mutation_size}")
    if expr.is_empty:
        return []
    backward: list[tuple[Expression, Mutation]] = []
    current = expr
    while current.size > mutation_size:
        smaller, mutation = _remove_one(current, rng, mutation_size)
        backward.append((smaller, mutation))
        current = smaller
    backward.append((Expression.empty(), Mutation(0, "root", current)))
    backward.reverse()
    return backward


def dismantle(expr: Expression, rng: np.random.Generator, mutation_size: float = 10) -> list[Mutation]:
    """Mutations ``m1..mL`` such that applying them in order to the empty expression gives ``expr``."""
    return [m for _, m in mutation_path(expr, rng, mutation_size)]


def replay(mutations: list[Mutation]) -> Expression:
    """Apply ``mutations`` in order to the empty expression (raises ``InvalidMutation``)."""
    from dgsr.search.mutations import apply_mutation

    expr = Expression.empty()
    for m in mutations:
        expr = apply_mutation(expr, m)
    return expr


def _remove_one(expr: Expression, rng: np.random.Generator, limit: float) -> tuple[Expression, Mutation]:
    """One backward step: the smaller expression and the forward mutation that undoes the removal."""
    symbols, ends = expr.symbols, expr.subtree_ends
    # candidates: (position, which child is B: 0 = none/unary, 1 = left, 2 = right), weight
    cands: list[tuple[int, int]] = []
    weights: list[float] = []
    for p, s in enumerate(symbols):
        k = arity(s)
        if k == 1:
            cands.append((p, 0))
            weights.append(1.0)
        elif k == 2:
            left = p + 1
            right = ends[left]
            for side, start in ((1, left), (2, right)):
                b = ends[start] - start
                if b <= limit:
                    cands.append((p, side))
                    weights.append(float(b * b))
    # a deepest operator is unary or has leaf children, so there is always a candidate
    w = np.asarray(weights)
    p, side = cands[int(rng.choice(len(cands), p=w / w.sum()))]
    op = symbols[p]
    if side == 0:
        a_pos = p + 1
        mutation_op, b_expr = op, None
    else:
        left = p + 1
        right = ends[left]
        a_pos, b_pos = (left, right) if side == 2 else (right, left)
        b_expr = expr.subtree(b_pos)
        mutation_op = op if side == 2 else "r" + op
    smaller = expr.replace_subtree(p, expr.subtree(a_pos))
    return smaller, Mutation(p, mutation_op, b_expr)


def mutation_sizes(mutations: list[Mutation]) -> list[int]:
    """Size of ``B`` of each mutation (0 for unary mutations), as the paper measures it."""
    return [m.size for m in mutations]


__all__ = ["dismantle", "mutation_path", "mutation_sizes", "replay"]
