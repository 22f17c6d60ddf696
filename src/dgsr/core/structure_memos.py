"""The memos keyed by a formula's structure, and their lifetime.

Four pure functions of a prefix sequence (``symbols``) are memoised with ``functools.lru_cache``
where they are defined, because the search asks for each child's structure twice (its inner fit
and its score): the additive terms (:mod:`~dgsr.core.linear_terms`), the compiled structure
(:mod:`~dgsr.core.jit_structure`), the sum's program (:mod:`~dgsr.core.jit_scoring`) and the op
codes (:mod:`~dgsr.core.jit_child`). A memo never changes a result: it returns what the function
would compute, and each holds at most 32768 entries.

:data:`STRUCTURE_MEMOS` owns their lifetime: they fill while a search runs and are emptied when
the last search running in the process ends (:meth:`StructureMemos.in_use`, held by
:func:`dgsr.search.scope.search_scope`), so a fitted model, or a process that ran one fit, keeps
no memory for them. Work after a search (polishing, model selection) may add a few entries, which
the next search's end empties. ``tests/core/test_structure_memos.py`` checks that every
``lru_cache`` of ``core/`` is one of these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from dgsr.core import jit_child, jit_scoring, jit_structure, linear_terms
from dgsr.runtime.shared import SharedSetting


class StructureMemos:
    """The structure-keyed memos of ``core/``: :meth:`clear` empties them all, :meth:`in_use`
    empties them when the last block holding them ends."""

    def __init__(self, memoised: tuple[Callable[..., Any], ...]) -> None:
        self.memoised = memoised
        self._held = SharedSetting(lambda: None, lambda _: self.clear())

    def clear(self) -> None:
        """Empty every memo."""
        for fn in self.memoised:
            fn.cache_clear()  # type: ignore[attr-defined]

    def entries(self) -> int:
        """How many entries the memos hold together."""
        return sum(fn.cache_info().currsize for fn in self.memoised)  # type: ignore[attr-defined]

    @contextmanager
    def in_use(self) -> Iterator[None]:
        """The memos fill inside the block and are emptied when the last such block (of any thread) ends."""
        with self._held.held():
            yield


#: The process's structure memos (see the module docstring for their lifetime).
STRUCTURE_MEMOS = StructureMemos((linear_terms._term_spans, jit_structure.structure, jit_scoring.encode_sum,
                                  jit_child._prefix_codes))
