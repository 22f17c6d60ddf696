"""With units, a first search on the problem Buckingham's pi theorem reduces the fit to
(:mod:`dgsr.core.unit_reduction`): ``y / P(x)`` as a function of the dimensionless groups.

The reduced problem has ``r`` fewer columns (``r`` the rank of the columns' dimensions), so the
search covers far more of it in the same time: Planck's law of four variables is a function of
one group there. Its front, written back over the columns (``P`` times each entry), seeds the
search over the columns: the two most accurate entries are roots its trials start from, and
every entry is offered to the final refit beside the search's own front. The reduced search
gets :data:`REDUCED_SHARE` of the first search's time and evaluations, and its evaluations are
counted in the fit's. Where no group is left (``y = c*P``, a power law, which the search over
the columns fits in closed form), without units, or where the reduction leaves every column,
nothing changes.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.exponent_scaling import fit_scaling, is_constant_target
from dgsr.core.expression import Expression
from dgsr.core.operators import OPERATORS
from dgsr.core.unit_reduction import Reduction, pi_reduction
from dgsr.estimator.budget_plan import BudgetPlan
from dgsr.estimator.fit_config import FitConfig
from dgsr.policies.semantic.relevance import relevance

#: The reduced search's share of the first search's time and evaluations.
REDUCED_SHARE = 0.3
#: Entries of the reduced front the search's trials start from (the most accurate ones).
_ROOTS = 2
#: The reduced search sees at most this many rows (a sample of larger data).
_MAX_ROWS = 100_000
#: Differences of same-unit groups the reduced search gets as further columns, at most.
_DIFFERENCES = 3


@dataclass(frozen=True)
class ReducedSeeds:
    """What the reduced search gives the fit: ``roots`` for the search's trials, ``candidates``
    for the final refit (both over the searched columns), and the evaluations it spent."""

    roots: tuple[Expression, ...] = ()
    candidates: tuple[Expression, ...] = ()
    evaluations: float = 0.0


def reduced_seeds(config: FitConfig, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, policy: Any,
                  rng: np.random.Generator, plan: BudgetPlan) -> ReducedSeeds:
    """Search the pi-reduced problem of ``X, y`` (the searched columns, in the search's units)
    when ``config`` has units and ``config.reduce_units``; the empty seeds otherwise."""
    units = config.search_units
    if units is None or not config.reduce_units:
        return ReducedSeeds()
    reduction = pi_reduction(units.x, units.y)
    if reduction is None or reduction.n_groups >= X.shape[1]:
        return ReducedSeeds()
    rng = rng.spawn(1)[0]
    if len(y) > _MAX_ROWS:  # the groups of ten million rows would be gigabytes; the search values samples anyway
        rows = np.sort(rng.choice(len(y), _MAX_ROWS, replace=False))
        X, y, w = X[rows], y[rows], None if w is None else w[rows]
    with np.errstate(all="ignore"):
        target = y / reduction.prefactor_values(X)
    if not np.all(np.isfinite(target)):
        return ReducedSeeds()  # a half power of a negative column, or a zero in P's denominator
    if reduction.n_groups == 0 or is_constant_target(target):
        return ReducedSeeds()  # y = c*P, a power law: the search over the columns fits those in closed form
    with np.errstate(all="ignore"):
        groups = reduction.group_columns(X)
        reciprocals = 1.0 / groups
    if not np.all(np.isfinite(groups)):
        return ReducedSeeds()
    keep = np.all(np.isfinite(reciprocals), axis=0)  # not the reciprocal of a column with a zero
    differences = _related_differences(reduction, groups, target) if config.unit_differences else []
    reduction = reduction.with_reciprocals(keep.tolist()).with_differences(differences)
    groups = reduction.group_columns(X)
    limit = getattr(policy, "max_variables", None)  # the neural policy names 10 variables at most
    if limit is not None and groups.shape[1] > limit:
        return ReducedSeeds()
    lifted, spent = _reduced_front(config, reduction, groups, target, w, policy, rng, plan)
    return ReducedSeeds(tuple(lifted[-_ROOTS:]), tuple(lifted), spent)


def _related_differences(reduction: Reduction, groups: np.ndarray, target: np.ndarray) -> list[tuple[int, int]]:
    """The differences of same-unit groups (:meth:`Reduction.difference_pairs`) that relate to
    ``target`` more than either of their two groups, their ratio, product or sum do, at most
    :data:`_DIFFERENCES`, most related first. A law of ``cos(theta1 - theta2)`` relates to the
    difference and hardly to either angle; two columns of opposite monotone effects relate to
    their difference as much as to their ratio, and the search reaches the ratio already."""
    pairs = reduction.difference_pairs()
    kept: list[tuple[float, tuple[int, int]]] = []
    for a, b in pairs:
        u, v = groups[:, a], groups[:, b]
        with np.errstate(all="ignore"):
            rivals = np.vstack([u - v, u, v, u / v, u * v, u + v])
        if not (np.all(np.isfinite(rivals[0])) and np.ptp(rivals[0]) > 0):
            continue
        finite = np.all(np.isfinite(rivals), axis=1)
        scores = relevance(rivals[finite], target)
        if scores[0] > np.max(scores[1:], initial=0.0):
            kept.append((float(scores[0]), (a, b)))
    return [pair for _, pair in sorted(kept, key=lambda item: -item[0])[:_DIFFERENCES]]


def _reduced_front(config: FitConfig, reduction: Reduction, groups: np.ndarray, target: np.ndarray,
                   w: np.ndarray | None, policy: Any, rng: np.random.Generator,
                   plan: BudgetPlan) -> tuple[list[Expression], float]:
    """The reduced search's front written over the columns (sorted by size, so by accuracy), and
    the evaluations it spent."""
    from dgsr.core.budget import Budget
    from dgsr.estimator.fit_search import run_units

    names = [f"pi{i}" for i in range(groups.shape[1])]
    try:
        scaling = fit_scaling(groups, target, names)
    except ValueError:  # subnormal groups: nothing the search could fit
        return [], 0.0
    time_limit = plan.search_time()
    evaluations = plan.search_evaluation_limit()
    budget = Budget(max_evaluations=None if evaluations is None else max(1.0, REDUCED_SHARE * evaluations),
                    max_time=None if time_limit is None else REDUCED_SHARE * time_limit)
    # Every column of the reduced problem is a pure number: no units to check, no groups to chain.
    reduced = dataclasses.replace(config, search_units=None, search_roots=(), verbose=False)
    result = run_units(reduced, scaling.scale_X(groups), scaling.scale_y(target), _for_groups(policy),
                       reduced.search_config(), rng, budget, None, None, w)
    lifted = [reduction.lift(scaling.to_user(e.expression)) for e in result.archive.front()]
    return _admitted(config, lifted), float(result.n_evaluations)


def _admitted(config: FitConfig, exprs: list[Expression]) -> list[Expression]:
    """The formulas the search over the columns may hold: within ``max_size``, the allowed
    operators and the user's rules, with finite constants."""
    allowed = config.allowed_operators()
    rules = config.formula_rules()
    return [e for e in exprs
            if e.size <= config.max_size and all(math.isfinite(c) for c in e.constants)
            and (allowed is None or all(s in allowed for s in e.symbols if s in OPERATORS))
            and (rules is None or rules.violation(e) is None)]


def _for_groups(policy: Any) -> Any:
    """``policy`` without what names the columns of the problem before its reduction: the chains
    over their dimensionless groups, and a fold search's operands refitted from the search on all
    rows; and without the single-index chains, which serve fits without units (the groups are
    the units' own products of powers). A copy: the caller's policy is not changed, and a copy
    starts without its caches."""
    if not hasattr(policy, "unit_groups"):
        return policy
    policy = copy.copy(policy)
    policy.unit_groups, policy.seeded_operands = (), None
    if hasattr(policy, "index_chains"):
        policy.index_chains = False
    return policy
