"""The memos keyed by a formula's structure, and their lifetime.

Pure functions of a prefix sequence (``symbols``) are memoised with ``functools.lru_cache`` where
they are defined, because the search asks for each child's structure twice (its inner fit and its
score): the additive terms (:mod:`~dgsr.core.linear_terms`), the compiled structure
(:mod:`~dgsr.core.kernels.structure`), the sum's program (:mod:`~dgsr.core.kernels.scoring`) and
the op codes (:mod:`~dgsr.core.kernels.child`). A memo never changes a result: it returns what the
function would compute, and each holds at most 32768 entries.

:data:`STRUCTURE_MEMOS` owns their lifetime: they fill while a search runs and are emptied when
the last search running in the process ends (:meth:`StructureMemos.in_use`, held by
:func:`dgsr.search.scope.search_scope`), so a process that ran a fit keeps no memory for them.
Work after a search (polishing, model selection) may add a few entries, which the next search's
end empties. The memos are found in their modules (every ``lru_cache`` function defined there),
so a renamed or added one is owned too; ``tests/core/test_structure_memos.py`` checks that every
``lru_cache`` of ``core/`` is among them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from dgsr.core import linear_terms
from dgsr.core.kernels import child, scoring, structure
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


def memoised_in(modules: tuple[ModuleType, ...]) -> tuple[Callable[..., Any], ...]:
    """Every ``lru_cache`` function defined in ``modules`` (not those they import from elsewhere)."""
    return tuple(fn for module in modules for fn in vars(module).values()
                 if hasattr(fn, "cache_clear") and getattr(fn, "__module__", None) == module.__name__)


#: The process's structure memos (see the module docstring for their lifetime).
STRUCTURE_MEMOS = StructureMemos(memoised_in((linear_terms, structure, scoring, child)))
