"""The polish refits the front largest first (dgsr.estimator.polish): where a fit's evaluations
run short there (``max_evaluations`` keeps 2% for it), the largest entries, which fit best and
among which the pick is, still get their constants snapped; the smallest go as they are."""

from __future__ import annotations

import numpy as np

from dgsr.core.parser import parse
from dgsr.estimator.budget_plan import plan_budget
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.interrupts import FitLedger
from dgsr.estimator.polish import polish

_NAMES = ["x0", "x1"]


def _polished(budget: float):
    rng = np.random.default_rng(0)
    columns = rng.uniform(1, 3, size=(2, 300))
    y = 2.0 * np.sin(1.5 * columns[0]) + columns[1] + rng.normal(0.0, 0.01, 300)
    # A front's entries come smallest first, with the search's constants (a little off).
    front = [parse("0.9*x1 + 0.1", _NAMES), parse("1.97*sin(1.52*x0) + 1.01*x1 + 0.02", _NAMES)]
    plan = plan_budget(FitConfig(max_time=None, max_evaluations=100_000, model_selection="balanced"), 300, 0.0)
    ledger = FitLedger(evaluations=100_000 - budget)
    return front, polish(front, columns, y, np.random.default_rng(1), plan, ledger)


def test_with_evaluations_short_the_largest_entry_is_still_snapped():
    # 245 evaluations: the large entry's refit and snapping (57 per constant) fit, both entries' do not
    front, entries = _polished(budget=245)
    assert [e.expression.size for e in entries] == [e.size for e in front]  # the front's order
    assert entries[1].expression.constants == (2.0, 1.5, 1.0, 0.0)  # snapped to the law's values


def test_with_evaluations_enough_every_entry_is_refitted_and_snapped():
    front, entries = _polished(budget=5_000)
    assert entries[0].expression.constants != front[0].constants
    assert entries[1].expression.constants == (2.0, 1.5, 1.0, 0.0)
