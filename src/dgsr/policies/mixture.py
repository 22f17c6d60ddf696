"""A mixture of mutation policies: each expansion's K proposals are shared out between them.

Issue 13 asks for combinations of the learned policy with the data-aimed one to be measured: the
re-ranking combination is :class:`dgsr.neural.policy.RerankPolicy` (one policy proposes, the
network chooses); this is the other one, in which each member proposes its own share of the K
mutations (e.g. 12 from the semantic policy and 4 from the network). Torch-free: members are any
:class:`dgsr.search.policy.Policy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.expression import Expression
from dgsr.search.mutations import InvalidMutation, apply_mutation
from dgsr.search.policy import Policy, Proposal


@dataclass
class MixtureContext:
    """Per-trial state: one context per member, in the members' order."""

    members: tuple[Any, ...]


def apportion(k: int, weights: Sequence[float]) -> list[int]:
    """Split ``k`` into integer shares proportional to ``weights`` (largest remainders; ties go to
    the earlier member), so the shares always sum to ``k``."""
    w = np.asarray(weights, dtype=float)
    exact = k * w / w.sum()
    shares = np.floor(exact).astype(int)
    order = np.argsort(-(exact - shares), kind="stable")
    shares[order[:k - int(shares.sum())]] += 1
    return shares.tolist()


class MixturePolicy:
    """Each member proposes its share of the K mutations (implements :class:`dgsr.search.policy.Policy`).

    Shares follow ``weights`` (:func:`apportion`). A mutation's prior is its member's weight times
    the prior that member gave it; a child proposed by several members is kept once with the sum
    of their priors; priors are then normalised over the merged proposals. Node values come from
    the first member that has a critic (``has_critic``); without one they are NaN and the search
    values nodes by accuracy.

    Parameters
    ----------
    members:
        The policies, e.g. ``(SemanticPolicy(), NeuralPolicy.from_checkpoint(...))``.
    weights:
        One positive weight per member (normalised here).
    """

    def __init__(self, members: Sequence[Policy], weights: Sequence[float]):
        if len(members) == 0 or len(members) != len(weights):
            raise ValueError(f"need one weight per member, got {len(members)} members and {len(weights)} weights")
        w = np.asarray(weights, dtype=float)
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights must be positive and finite, got {list(weights)}")
        self.members = tuple(members)
        self.weights = tuple((w / w.sum()).tolist())
        critics = [i for i, m in enumerate(self.members) if m.has_critic]
        self._critic = critics[0] if critics else None
        self.has_critic = self._critic is not None
        limits = [m.max_variables for m in self.members if m.max_variables is not None]
        # the estimator pre-selects columns for the most limited member
        self.max_variables = min(limits) if limits else None

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> MixtureContext:
        return MixtureContext(tuple(m.prepare(X, y, rng) for m in self.members))

    def propose(self, context: MixtureContext, expression: Expression, k: int,
                rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` distinct mutations: each member's share, merged by the child they make."""
        if k <= 0:
            return []
        # Merged by the child the search will see: two members' different mutations can make the
        # same child (x0 + x1 from either side), and the search would drop the second one's prior.
        merged: dict[Any, list] = {}  # child key -> [mutation, summed prior]
        for member, ctx, weight, share in zip(self.members, context.members, self.weights,
                                              apportion(k, self.weights)):
            if share == 0:
                continue
            for proposal in member.propose(ctx, expression, share, rng):
                try:
                    key = apply_mutation(expression, proposal.mutation).key()
                except InvalidMutation:
                    continue
                prior = weight * max(float(proposal.prior), 0.0) if np.isfinite(proposal.prior) else 0.0
                if key in merged:
                    merged[key][1] += prior
                else:
                    merged[key] = [proposal.mutation, prior]
        if not merged:
            return []
        total = sum(p for _, p in merged.values())
        n = len(merged)
        return [Proposal(m, p / total if total > 0 else 1.0 / n) for m, p in merged.values()]

    def value(self, context: MixtureContext, expressions: Sequence[Expression]) -> np.ndarray:
        """The first critic member's values, or NaN for every expression when no member has one."""
        if self._critic is None:
            return np.full(len(expressions), np.nan)
        return np.asarray(self.members[self._critic].value(context.members[self._critic], expressions), dtype=float)
