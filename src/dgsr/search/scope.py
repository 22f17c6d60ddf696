"""What the process is set to while a search runs, all of it put back when the search ends.

One ``with`` block holds it (:func:`search_scope`): fewer garbage collections (the search's
objects live as long as it does), a Ctrl-C watch (a Ctrl-C raises ``KeyboardInterrupt``, and the
watch also stops the search when that exception was lost, raised in a garbage-collector callback
or a finalizer), one BLAS thread (the search's matrix products are small, tens of rows by hundreds
of columns, where a second thread costs more than it brings, and on a busy machine a BLAS thread
that waits for a core made each product 20 times slower: docs/DESIGN.md, "One BLAS thread"), and
the structure memos, emptied when the last search of the process ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dgsr.core.structure_memos import STRUCTURE_MEMOS
from dgsr.runtime.collector import fewer_collections
from dgsr.runtime.interrupts import CtrlCWatch, watching_ctrl_c
from dgsr.runtime.threads import blas_threads


@contextmanager
def search_scope() -> Iterator[CtrlCWatch]:
    """Hold the search's process settings for the block; yields the Ctrl-C watch."""
    with STRUCTURE_MEMOS.in_use(), fewer_collections(), watching_ctrl_c() as ctrl_c, blas_threads(1):
        yield ctrl_c
