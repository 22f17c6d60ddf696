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
    """One sampled mutation and its prior probability (normalised over the K proposals)."""

    mutation: Mutation
    prior: float


@runtime_checkable
class Policy(Protocol):
    """A mutation policy with a critic.

    A policy that can only name a limited number of input variables (the neural one: 10) says so
    in an integer attribute ``max_variables``; the estimator then pre-selects that many columns.
    Without it, the search uses every column.
    """

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Any:
        """Per-trial context (e.g. the encoded data points), reused by every expansion."""

    def propose(
        self, context: Any, expression: Expression, k: int, rng: np.random.Generator
    ) -> list[Proposal]:
        """Up to ``k`` mutations of ``expression`` with their priors."""

    def value(self, context: Any, expressions: Sequence[Expression]) -> np.ndarray:
        """Value estimates in [0, 1] for a batch of expressions, shape [len(expressions)]."""
