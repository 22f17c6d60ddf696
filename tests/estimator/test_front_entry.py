"""The fitted front's entries are the archive's ParetoEntry (one class), and entries pickled under
the old name ``dgsr.estimator.front.FrontEntry`` still load."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoEntry
from dgsr.estimator import front


def test_front_entry_is_the_pareto_entry():
    assert front.FrontEntry is ParetoEntry
    expr = Expression.variable(0)
    assert front.front_entry(expr, np.array([[1.0, 2.0]]), np.array([1.0, 2.0])) == ParetoEntry(1, expr, 0.0, 1.0)


def test_an_entry_pickled_under_the_old_name_loads(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class FrontEntry:  # the 0.10.0 class, as it was pickled
        size: int
        expression: Expression
        mse: float
        r2: float

    FrontEntry.__module__, FrontEntry.__qualname__ = "dgsr.estimator.front", "FrontEntry"
    expr = Expression.variable(1)
    with monkeypatch.context() as m:
        m.setattr(front, "FrontEntry", FrontEntry)
        data = pickle.dumps([FrontEntry(1, expr, 0.5, 0.9)])
    assert b"dgsr.estimator.front" in data and b"FrontEntry" in data
    (entry,) = pickle.loads(data)
    assert type(entry) is ParetoEntry
    assert entry == ParetoEntry(1, expr, 0.5, 0.9)
