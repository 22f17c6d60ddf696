"""The two FIFO training buffers of expert iteration (Section 3.2 of the paper).

* **mutation buffer**: ``(state, mutation)`` pairs of the *shortest* mutation sequence that
  reached a solution (R² >= 0.99) in a trial (the paper's footnote: of several such sequences,
  the one with the fewest mutations), to update the mutation policy M_theta;
* **critic buffer**: ``(expression, target)`` with target 1.0 for nodes on a path to a
  solution, else the node's MCTS value estimate, to update C_psi. Only nodes visited at least
  N_min_visits times give an estimate: the search applies that threshold when it records the
  targets (:class:`dgsr.search.mcts.SearchConfig` ``min_visits``), so the buffer takes them as given.

Every item keeps (a row subset of) its dataset, because both networks are conditioned on the
data. Items of one trial share one :class:`Points` object. This module does not import torch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from dgsr.core.expression import Expression
from dgsr.search.mutations import Mutation

T = TypeVar("T")

#: A mutation path: ``(state before, mutation)`` pairs from the empty expression to a solution.
Path = Sequence[tuple[Expression, Mutation]]


@dataclass(frozen=True, eq=False)
class Points:
    """The rows a trial's training items are conditioned on: ``X`` [n, D], ``y`` [n]."""

    X: np.ndarray
    y: np.ndarray


@dataclass(frozen=True, eq=False)
class MutationItem:
    """One policy example; the field names match :class:`dgsr.training.batches.Example` so ``collate`` takes it."""

    points: Points
    state: Expression
    mutation: Mutation

    @property
    def X(self) -> np.ndarray:
        return self.points.X

    @property
    def y(self) -> np.ndarray:
        return self.points.y


@dataclass(frozen=True, eq=False)
class CriticItem:
    """One critic example: the value target in [0, 1] of ``expression`` on these points."""

    points: Points
    expression: Expression
    target: float


class FIFOBuffer(Generic[T]):
    """First-in-first-out buffer of at most ``capacity`` items, sampled uniformly with replacement."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._items: deque[T] = deque(maxlen=self.capacity)
        self.total_added = 0

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self._items.append(item)  # deque(maxlen) drops the oldest
            self.total_added += 1

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def sample(self, n: int, rng: np.random.Generator) -> list[T]:
        """``n`` items drawn uniformly with replacement (empty list when the buffer is empty)."""
        if n <= 0 or not self._items:
            return []
        index = rng.integers(len(self._items), size=n)
        return [self._items[int(i)] for i in index]

    def state_dict(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "items": list(self._items), "total_added": self.total_added}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.capacity = int(state["capacity"])
        self._items = deque(state["items"], maxlen=self.capacity)
        self.total_added = int(state["total_added"])


def shortest_path(paths: Iterable[Path | None]) -> list[tuple[Expression, Mutation]] | None:
    """The path with the fewest mutations (the first of equals), or None when there is none."""
    best: list[tuple[Expression, Mutation]] | None = None
    for path in paths:
        if path and (best is None or len(path) < len(best)):
            best = list(path)
    return best


class ExpertBuffers:
    """The mutation and critic buffers together.

    Parameters
    ----------
    mutation_capacity, critic_capacity:
        FIFO sizes.
    """

    def __init__(self, mutation_capacity: int = 20_000, critic_capacity: int = 20_000):
        self.mutations: FIFOBuffer[MutationItem] = FIFOBuffer(mutation_capacity)
        self.critic: FIFOBuffer[CriticItem] = FIFOBuffer(critic_capacity)

    def add_trial(self, points: Points, solution_paths: Iterable[Path | None],
                  critic_targets: Iterable[tuple[Expression, float]]) -> tuple[int, int]:
        """Add one trial's data; returns ``(mutation items, critic items)`` added.

        ``solution_paths``: the trial's paths to solutions (only the shortest is kept);
        ``critic_targets``: ``(expression, target)`` as the search recorded them (non-finite
        targets are dropped, the others clipped to [0, 1]).
        """
        path = shortest_path(solution_paths)
        mutation_items = [MutationItem(points, s, m) for s, m in path] if path else []
        critic_items = [CriticItem(points, expr, min(max(float(target), 0.0), 1.0))
                        for expr, target in critic_targets if np.isfinite(target)]
        self.mutations.extend(mutation_items)
        self.critic.extend(critic_items)
        return len(mutation_items), len(critic_items)

    def state_dict(self) -> dict[str, Any]:
        """Both buffers' contents (the items are immutable, so they are shared, not copied)."""
        return {"mutations": self.mutations.state_dict(), "critic": self.critic.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (states written before 0.2 also hold an unused ``min_visits``)."""
        self.mutations.load_state_dict(state["mutations"])
        self.critic.load_state_dict(state["critic"])
