"""Sums of library operands that explain ``y`` together: the semantic policy's first proposals.

A trial's first mutation used to be one operand, the one that best explains ``y`` alone. Many
laws and most tabular targets are sums of a few terms of different kinds (Friedman's
``a*sin(b*(x0 + c)*(x1 + d)) + e*(x2 + f)**2 + g*x3 + h*x4``): no single term explains much of
them, so the search met the winning term only after it had built the others one by one. Here
the terms are chosen jointly by forward selection (orthogonal matching pursuit): each step adds
the operand that most lowers the share of ``y``'s variance left unexplained by least squares on
the terms chosen so far, less the policy's size penalty, and each prefix of two or more terms is
a candidate. The search weights the terms itself (per-term least squares), so a candidate is the
plain sum of its operands.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from dgsr.core.expression import Expression

if TYPE_CHECKING:
    from dgsr.policies.semantic.operand_library import OperandLibrary

#: Most terms in one sum.
MAX_TERMS = 6
#: Operands that best explain y alone, each tried as a sum's first term.
SUM_STARTS = 8
#: Sums among a trial's first proposals (the rest stay single operands): with more, additive
#: approximations of a multiplicative law crowd out the operands that build it.
SUMS_PROPOSED = 2
#: An operand whose part outside the chosen terms' span has less than this share of its
#: variance adds nothing new (collinear with them).
_COLLINEAR = 1e-8


def greedy_sums(values: np.ndarray, sizes: np.ndarray, y: np.ndarray, *, size_penalty: float,
                max_size: int, max_terms: int = MAX_TERMS, first: int | None = None) -> list[tuple[float, list[int]]]:
    """``[(match, operand indices)]`` for the sums of 2 to ``max_terms`` operands built by forward
    selection, in the order built; the first term is operand ``first`` when given (forward
    selection is myopic: a large term that explains most of ``y`` once the small ones are in,
    such as a fitted sine of two variables, is rarely the cheapest first step).

    ``values`` ``[n_operands, n_rows]`` and ``sizes`` ``[n_operands]`` are the library's;
    ``match`` is ``-log10`` of the share of ``var(y)`` a least-squares fit of the terms and an
    intercept leaves, less ``size_penalty`` per node of the sum (operands plus the ``add`` nodes
    joining them), as the policy scores single operands. A step that would exceed ``max_size``
    nodes or lower the match ends the selection.
    """
    n_ops, n = values.shape
    if n_ops == 0 or n < 3:
        return []
    with np.errstate(all="ignore"):
        yc = y - y.mean()
        total = float(yc @ yc)
        residual = values - values.mean(axis=1, keepdims=True)  # operands, centred (the intercept's span)
        own = np.einsum("ij,ij->i", residual, residual)
    if not (math.isfinite(total) and total > 0):
        return []
    usable = np.isfinite(own) & (own > 0)
    r = yc.copy()
    chosen: list[int] = []
    size = 0
    best_match = -math.inf
    out: list[tuple[float, list[int]]] = []
    for _ in range(max_terms):
        with np.errstate(all="ignore"):
            norms = np.einsum("ij,ij->i", residual, residual)
            gain = (residual @ r) ** 2 / norms
            new = norms > _COLLINEAR * own
            added = sizes + (1 if chosen else 0)
            fits = usable & new & np.isfinite(gain) & (size + added <= max_size)
            if chosen:
                fits[chosen] = False
            if not fits.any():
                break
            left = np.clip((float(r @ r) - gain) / total, 1e-12, 1.0)
            score = np.where(fits, -np.log10(left) - size_penalty * (size + added), -np.inf)
        j = int(np.argmax(score)) if first is None or chosen else first
        if not np.isfinite(score[j]):
            break
        if chosen and not score[j] > best_match:
            break
        best_match = float(score[j])
        chosen.append(j)
        size += int(added[j])
        # Deflate: y's residual and every operand lose their part along the new direction.
        with np.errstate(all="ignore"):
            q = residual[j] / math.sqrt(norms[j])
            r = r - (q @ r) * q
            residual = residual - np.outer(residual @ q, q)
        if len(chosen) >= 2:
            out.append((best_match, list(chosen)))
    return out


def best_sums(library: OperandLibrary, y: np.ndarray, alone: np.ndarray, size_penalty: float,
              max_size: int, n_best: int = SUMS_PROPOSED, n_starts: int = SUM_STARTS
              ) -> list[tuple[float, Expression]]:
    """The ``n_best`` distinct sums (``(match, expression)``, best first) of forward selection run
    from a free first step, from each fitted parametric operand of ``library`` and from each of
    the ``n_starts`` operands with the highest ``alone`` (their matches without the size penalty)
    as the first term. A sum is the plain ``add`` chain of its operands."""
    ranked = np.argsort(-np.where(np.isfinite(alone), alone, -np.inf), kind="stable")[:n_starts]
    firsts = [None, *np.flatnonzero(library.parametric).tolist(), *ranked.tolist()]
    found: dict[frozenset, tuple[float, list[int]]] = {}
    for first in dict.fromkeys(firsts):
        for m, terms in greedy_sums(library.values, library.sizes, y, size_penalty=size_penalty,
                                    max_size=max_size, first=first):
            key = frozenset(terms)
            if key not in found or found[key][0] < m:
                found[key] = (m, terms)
    out = []
    for m, terms in sorted(found.values(), key=lambda c: -c[0])[:n_best]:
        expr = library.expressions[terms[0]]
        for j in terms[1:]:
            expr = Expression.combine("add", expr, library.expressions[j])
        out.append((m, expr))
    return out
