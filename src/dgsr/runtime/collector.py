"""Python's cyclic garbage collector, run less often while a search runs.

A search allocates many small objects that live as long as it does (tree nodes, expressions,
cache entries), and each allocation counts towards the collector's next pass: with the
interpreter's default thresholds (700, 10, 10) a 10 s search on 750 rows ran about 640 young and
3 full collections, the full ones over every object of the process, which took 7% of its time
(docs/notes/design_history.md, "The hot path, 0.8"). :func:`fewer_collections` raises the thresholds for the
duration of a search and puts the previous ones back afterwards. Nothing is switched off: cyclic
garbage is still collected, in fewer, larger passes.

The thresholds are the process's: a :class:`~dgsr.runtime.shared.SharedSetting` counts the
searches (threads) inside, so that the first in saves the thresholds and the last out restores
them, and only if nobody else changed them meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from dgsr.runtime.shared import SharedSetting

#: Allocations between young collections, and the generation-1 and -2 ratios, during a search.
SEARCH_THRESHOLDS = (50_000, 20, 100)

Thresholds = tuple[int, int, int]


def _raise() -> tuple[Thresholds, Thresholds | None]:
    """(the thresholds before, ours or None when left alone)."""
    saved = gc.get_threshold()
    if saved[0] <= 0:  # the collector disabled by a threshold of 0: leave it so
        return saved, None
    ours = tuple(max(a, b) for a, b in zip(saved, SEARCH_THRESHOLDS))
    gc.set_threshold(*ours)
    return saved, ours  # type: ignore[return-value]


def _restore(state: tuple[Thresholds, Thresholds | None]) -> None:
    saved, ours = state
    if ours is not None and gc.get_threshold() == ours:  # changed meanwhile by someone else: theirs stays
        gc.set_threshold(*saved)


_RAISED = SharedSetting(_raise, _restore)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's thresholds to at least :data:`SEARCH_THRESHOLDS` inside the block.

    A threshold of 0 (the collector disabled that way) is left alone. On leaving the last such
    block, the previous thresholds come back unless something else set new ones meanwhile."""
    with _RAISED.held():
        yield
