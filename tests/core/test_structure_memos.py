"""core.structure_memos: every structure-keyed memo of core/ is owned by STRUCTURE_MEMOS, which
empties them when the last search ends; emptying them never changes a search's result."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.structure_memos import STRUCTURE_MEMOS
from dgsr.policies.random import RandomPolicy
from dgsr.search.mcts import run_search

CORE = Path(__file__).resolve().parents[2] / "src" / "dgsr" / "core"


def _memoised_in_core() -> set[tuple[str, str]]:
    """(module, function) of every function of core/ decorated with an lru_cache or cache."""
    found = set()
    for path in CORE.rglob("*.py"):
        module = ".".join(("dgsr", "core", *path.relative_to(CORE).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                for deco in node.decorator_list:
                    name = ast.unparse(deco.func if isinstance(deco, ast.Call) else deco)
                    if name.split(".")[-1] in ("lru_cache", "cache"):
                        found.add((module, node.name))
    return found


def test_every_memo_of_core_is_owned_by_the_structure_memos():
    owned = {(fn.__module__, fn.__name__) for fn in STRUCTURE_MEMOS.memoised}
    assert _memoised_in_core() == owned
    for module, name in owned:
        assert getattr(importlib.import_module(module), name) in STRUCTURE_MEMOS.memoised


def test_a_search_leaves_the_memos_empty_and_an_emptied_memo_changes_no_result():
    X = np.random.default_rng(3).normal(size=(60, 2))
    y = X[:, 0] * X[:, 1] + 2.0 * X[:, 0]
    STRUCTURE_MEMOS.clear()

    def search():
        result = run_search(X, y, RandomPolicy(), rng=4, budget=Budget(max_evaluations=600))
        return [(e.expression.key(), e.mse) for e in result.archive.front()]

    seen = []
    first = run_search(X, y, RandomPolicy(), rng=4, budget=Budget(max_evaluations=600),
                       on_progress=lambda p: seen.append(STRUCTURE_MEMOS.entries()))
    assert max(seen) > 0  # the memos fill while the search runs
    assert STRUCTURE_MEMOS.entries() == 0  # and are emptied at its end
    # The same search again, once with memos filled by an earlier search (held open), once from empty.
    with STRUCTURE_MEMOS.in_use():
        warm = search()
        warm_again = search()
        assert STRUCTURE_MEMOS.entries() > 0
    assert STRUCTURE_MEMOS.entries() == 0
    assert [(e.expression.key(), e.mse) for e in first.archive.front()] == warm == warm_again == search()
