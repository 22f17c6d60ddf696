"""A process-wide setting held by nested or concurrent blocks: the first block in applies it, the
last one out undoes it (the garbage collector's thresholds during searches in several threads, say).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedSetting(Generic[T]):
    """``apply()`` when the first :meth:`held` block starts, ``undo(what apply returned)`` when the
    last one ends (also when it ends by an exception). Thread-safe; the only state is the count
    of blocks inside and what ``apply`` returned, kept on this object."""

    def __init__(self, apply: Callable[[], T], undo: Callable[[T], None]) -> None:
        self._apply, self._undo = apply, undo
        self._lock = threading.Lock()
        self._inside = 0
        self._saved: T | None = None

    @property
    def inside(self) -> int:
        """How many blocks hold the setting now."""
        return self._inside

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the setting for the block."""
        with self._lock:
            if self._inside == 0:
                self._saved = self._apply()
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0:
                    saved, self._saved = self._saved, None
                    self._undo(saved)  # type: ignore[arg-type]
