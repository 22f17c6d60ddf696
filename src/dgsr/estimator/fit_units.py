"""The units a fit was given (PySR's ``X_units``, ``y_units``) as the search's
:class:`~dgsr.core.units.UnitCheck`, and the units' penalty on the fitted front.

The penalty (``dimensional_constraint_penalty`` times the target's variance, so it does not
depend on the target's scale) is added to the loss of every formula that is not dimensionally
consistent: in the search's archive, and again after the front is refitted, so the front and
the selection rules see it. ``equations_`` says which rows are consistent and how many constants
carry a unit (:func:`unit_columns`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from dgsr.core.units import UnitCheck, checked_units, dimensionless_groups
from dgsr.estimator.front import FrontEntry


def has_units(config: Any) -> bool:
    """Whether ``fit`` was given units."""
    return config.x_units is not None or config.y_units is not None


def unit_check(config: Any, index: np.ndarray, n_columns: int, y_var: float) -> UnitCheck | None:
    """The check for the searched columns ``index`` (of ``n_columns``), its penalty in the loss
    of a target of variance ``y_var``; None without units."""
    if not has_units(config):
        return None
    xs, y = checked_units(config.x_units, config.y_units, n_columns)
    penalty = float(config.dimensional_constraint_penalty) * (y_var if y_var > 0 else 1.0)
    return UnitCheck(tuple(xs[int(i)] for i in index), y, penalty, bool(config.dimensionless_constants_only))


def with_unit_groups(policy: Any, units: UnitCheck | None) -> Any:
    """``policy`` whose chains also take the dimensionless groups of the searched columns' units
    as their argument (a copy of a semantic policy with ``unit_chains``), or ``policy`` itself."""
    from dgsr.policies.semantic.policy import SemanticPolicy

    if units is None or not isinstance(policy, SemanticPolicy) or not getattr(policy, "unit_chains", True):
        return policy
    groups = tuple(dimensionless_groups(units.x))
    if not groups:
        return policy
    policy = copy.copy(policy)  # the caller's policy object is not changed
    policy.unit_groups = groups
    return policy


def penalised(entries: Sequence[FrontEntry], units: UnitCheck | None) -> list[FrontEntry]:
    """``entries`` with the penalty added to the loss of the inconsistent ones."""
    if units is None:
        return list(entries)
    return [dataclasses.replace(e, mse=units.penalised_mse(e.expression, e.mse)) for e in entries]


def unit_columns(entries: Sequence[FrontEntry], units: UnitCheck | None) -> dict[str, list]:
    """``equations_``'s units columns: ``dimensionally_consistent`` and ``dimensional_constants``
    (none without units)."""
    if units is None:
        return {}
    reports = [units.report(e.expression) for e in entries]
    return {"dimensionally_consistent": [r.consistent for r in reports],
            "dimensional_constants": [r.dimensional_constants for r in reports]}
