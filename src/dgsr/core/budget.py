"""The budget of one fit: evaluations and wall time, whichever runs out first (CONTRACTS §2).

One evaluation is one candidate computed on the training rows; constant fitting adds the
fractional count of its objective calls. ``cap`` scales a per-expression time limit (such as
the 1 s of BFGS) down when less time is left than that.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


@dataclass
class Budget:
    """Limits of a search and what has been spent so far.

    Parameters
    ----------
    max_evaluations:
        Evaluations allowed (None: unbounded).
    max_time:
        Seconds of wall time allowed, counted from :meth:`start` (None: unbounded).
    target_r2:
        Stop once the best training R² reaches it (None: never stop early).
    """

    max_evaluations: float | None = None
    max_time: float | None = None
    target_r2: float | None = None
    evaluations: float = 0.0
    _start: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.max_evaluations is not None and not self.max_evaluations > 0:
            raise ValueError(f"max_evaluations must be positive, got {self.max_evaluations}")
        if self.max_time is not None and not self.max_time >= 0:
            raise ValueError(f"max_time must be non-negative, got {self.max_time}")

    def start(self) -> Budget:
        """Start the clock (idempotent: a budget shared by several calls keeps its first start)."""
        if self._start is None:
            self._start = time.perf_counter()
        return self

    @property
    def elapsed(self) -> float:
        return 0.0 if self._start is None else time.perf_counter() - self._start

    def add(self, evaluations: float) -> None:
        """Count ``evaluations`` spent (fractions allowed)."""
        self.evaluations += evaluations

    def time_left(self) -> float:
        return math.inf if self.max_time is None else self.max_time - self.elapsed

    def evaluations_left(self) -> float:
        return math.inf if self.max_evaluations is None else self.max_evaluations - self.evaluations

    def exhausted(self, best_r2: float = -math.inf) -> str | None:
        """Why the search must stop (``"evaluations"``, ``"time"``, ``"target"``), or None."""
        if self.target_r2 is not None and best_r2 >= self.target_r2:
            return "target"
        if self.evaluations_left() <= 0:
            return "evaluations"
        if self.time_left() <= 0:
            return "time"
        return None

    def cap(self, seconds: float) -> float:
        """A per-expression time limit of ``seconds``, scaled down to the time left (never negative)."""
        return max(0.0, min(seconds, self.time_left()))
