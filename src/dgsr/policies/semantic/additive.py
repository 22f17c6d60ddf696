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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Gram:
    """What forward selection needs of the usable operands (finite values with some spread):
    their indices in the library, their centred inner products ``gram``, their inner products
    with the centred ``y`` (``with_y``), and ``y``'s centred sum of squares."""

    index: np.ndarray
    gram: np.ndarray
    with_y: np.ndarray
    total: float
    own: np.ndarray  # the diagonal of gram
    position: np.ndarray  # library index -> its row in gram (-1: not usable)


def _gram(values: np.ndarray, y: np.ndarray) -> _Gram | None:
    """:class:`_Gram` of ``values`` ``[n_operands, n_rows]`` and ``y``; None when there is
    nothing to explain or nothing to explain it with."""
    n_ops, n = values.shape
    if n_ops == 0 or n < 3:
        return None
    with np.errstate(all="ignore"):
        yc = y - y.mean()
        total = float(yc @ yc)
        centred = values - values.mean(axis=1, keepdims=True)  # operands, centred (the intercept's span)
        own = np.einsum("ij,ij->i", centred, centred)
    if not (math.isfinite(total) and total > 0):
        return None
    index = np.flatnonzero(np.isfinite(own) & (own > 0))
    if not len(index):
        return None
    usable = centred[index]
    position = np.full(n_ops, -1, dtype=np.int64)
    position[index] = np.arange(len(index))
    gram = usable @ usable.T
    return _Gram(index, gram, usable @ yc, total, np.diag(gram).copy(), position)


def _forward_selection(state: _Gram, sizes: np.ndarray, *, size_penalty: float, max_size: int,
                       max_terms: int, first: int | None) -> list[tuple[float, list[int]]]:
    """:func:`greedy_sums` on a :class:`_Gram`: orthogonal matching pursuit on the inner
    products alone (each chosen term's unit direction kept as its inner products with every
    operand), so a step costs a few vector operations over the operands, not a pass over their
    rows."""
    if first is not None and state.position[first] < 0:
        return []  # an unusable first term (its score would be -inf)
    gram, with_y, total, own = state.gram, state.with_y, state.total, state.own
    usable_sizes = sizes[state.index]
    norms = own.copy()  # each operand's squared part outside the chosen terms' span
    along_y = with_y.copy()  # each operand's inner product with y's residual
    left_ss = total  # y's residual sum of squares
    directions: list[np.ndarray] = []  # per chosen term: its unit direction's inner products with every operand
    chosen: list[int] = []
    size = 0
    best_match = -math.inf
    out: list[tuple[float, list[int]]] = []
    for _ in range(max_terms):
        with np.errstate(all="ignore"):
            gain = along_y * along_y / norms
            new = norms > _COLLINEAR * own
            added = usable_sizes + (1 if chosen else 0)
            fits = new & np.isfinite(gain) & (size + added <= max_size)
            if chosen:
                fits[chosen] = False
            if not fits.any():
                break
            left = np.clip((left_ss - gain) / total, 1e-12, 1.0)
            score = np.where(fits, -np.log10(left) - size_penalty * (size + added), -np.inf)
        j = int(np.argmax(score)) if first is None or chosen else int(state.position[first])
        if not np.isfinite(score[j]):
            break
        if chosen and not score[j] > best_match:
            break
        best_match = float(score[j])
        chosen.append(j)
        size += int(added[j])
        # Deflate: y's residual and every operand lose their part along the new direction q.
        with np.errstate(all="ignore"):
            scale = math.sqrt(norms[j])
            q = gram[j].copy()
            for d in directions:
                q -= d[j] * d
            q /= scale
            along_q_y = along_y[j] / scale  # q . r: r is orthogonal to the earlier directions
            along_y = along_y - q * along_q_y
            left_ss -= along_q_y * along_q_y
            norms = norms - q * q
        directions.append(q)
        if len(chosen) >= 2:
            out.append((best_match, [int(state.index[c]) for c in chosen]))
    return out


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
    state = _gram(values, y)
    if state is None:
        return []
    return _forward_selection(state, np.asarray(sizes), size_penalty=size_penalty, max_size=max_size,
                              max_terms=max_terms, first=first)


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
    state = _gram(library.values, y)  # the inner products every start's selection reads
    if state is None:
        return []
    for first in dict.fromkeys(firsts):
        for m, terms in _forward_selection(state, library.sizes, size_penalty=size_penalty, max_size=max_size,
                                           max_terms=MAX_TERMS, first=first):
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
