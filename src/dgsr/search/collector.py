"""Python's cyclic garbage collector, run less often while a search runs.

A search allocates many small objects that live as long as it does (tree nodes, expressions,
cache entries), and each allocation counts towards the collector's next pass: with the
interpreter's default thresholds (700, 10, 10) a 10 s search on 750 rows ran about 640 young and
3 full collections, the full ones over every object of the process, which took 7% of its time
(docs/notes/design_history.md, "The hot path, 0.8"). :func:`fewer_collections` raises the thresholds for the
duration of a search and puts the previous ones back afterwards. Nothing is switched off: cyclic
garbage is still collected, in fewer, larger passes.

The thresholds are the process's, so this module keeps the one piece of state that needs: how
many searches (threads) are inside, so that the first in saves the thresholds and the last out
restores them, and only if nobody else changed them meanwhile.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between young collections, and the generation-1 and -2 ratios, during a search.
SEARCH_THRESHOLDS = (50_000, 20, 100)

_lock = threading.Lock()
_inside = 0
_saved: tuple[int, int, int] | None = None
_ours: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's thresholds to at least :data:`SEARCH_THRESHOLDS` inside the block.

    A threshold of 0 (the collector disabled that way) is left alone. On leaving the last such
    block, the previous thresholds come back unless something else set new ones meanwhile."""
    global _inside, _saved, _ours
    with _lock:
        if _inside == 0:
            _saved = gc.get_threshold()
            if _saved[0] > 0:
                _ours = tuple(max(a, b) for a, b in zip(_saved, SEARCH_THRESHOLDS))  # type: ignore[assignment]
                gc.set_threshold(*_ours)
            else:
                _ours = None
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0 and _ours is not None and _saved is not None and gc.get_threshold() == _ours:
                gc.set_threshold(*_saved)
