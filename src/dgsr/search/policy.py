"""The seam between learning and search (CONTRACTS §5).

Search sees a mutation policy only through :class:`Policy`: ``prepare`` once per trial,
``propose`` K mutations with priors per expansion, and a batched ``value`` for new children.
This module must not import torch; the neural policy lives in :mod:`dgsr.neural.policy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dgsr.core.expression import Expression
from dgsr.search.mutations import Mutation


@dataclass(frozen=True)
class Proposal:
    """One sampled mutation and its prior probability (normalised over the K proposals).

    ``child``: the mutation applied to the expression it was proposed for, when the policy built it
    anyway (to drop duplicates); the search then uses it instead of applying the mutation again.
    Optional: a policy that does not build children leaves it None."""

    mutation: Mutation
    prior: float
    child: Expression | None = None


@runtime_checkable
class Policy(Protocol):
    """A mutation policy, with or without a critic: everything the search and the estimator ask of one.

    Attributes
    ----------
    has_critic:
        True when :meth:`value` estimates node values; False when it returns NaN, and the
        search then values a node by its own accuracy (:func:`dgsr.search.tree.accuracy_value`).
    max_variables:
        How many input variables the policy can name (the neural one: 10), or None for any
        number; the estimator pre-selects that many columns when the data has more.
    """

    has_critic: bool
    max_variables: int | None

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Any:
        """Per-trial context (e.g. the encoded data points), reused by every expansion."""

    def propose(
        self, context: Any, expression: Expression, k: int, rng: np.random.Generator
    ) -> list[Proposal]:
        """Up to ``k`` mutations of ``expression`` with their priors."""

    def value(self, context: Any, expressions: Sequence[Expression]) -> np.ndarray:
        """Value estimates in [0, 1] for a batch of expressions, shape [len(expressions)]."""
