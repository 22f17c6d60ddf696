"""Accuracy-vs-size Pareto archive and the rules that pick one model from a front.

The archive sits on the search's hot path, so ``add`` is O(1): it keeps the most accurate
expression of each size; ``front`` filters the non-dominated ones when asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.formula_rules import FormulaRules
from dgsr.core.units import UnitCheck

#: "best" keeps expressions whose loss is within this factor of the lowest (as PySR's "best").
BEST_LOSS_FACTOR = 1.5
#: "balanced" also keeps them within this much R² of the most accurate (an absolute tolerance)
BALANCED_R2_DROP = 0.01
SELECTION_RULES = ("best", "accuracy", "score", "balanced")
#: a larger expression joins the front only when its loss is lower by more than this fraction: two
#: trees of one function (x*x*y and x**2*y) differ only by float rounding, about 1e-15 of the loss
FRONT_REL_GAIN = 1e-9


def more_accurate(mse: float, lowest: float, floor: float = 0.0) -> bool:
    """Whether ``mse`` improves on ``lowest`` by more than float rounding (the front's rule);
    ``floor`` is an absolute gain below which two losses count as equal (both exact fits)."""
    return mse < lowest * (1.0 - FRONT_REL_GAIN) - floor


@dataclass(frozen=True)
class ParetoEntry:
    """One expression of a front: its size, mean squared error and R², on the search data (the
    archive's) or on all training rows after refitting (the fitted estimator's front)."""

    size: int
    expression: Expression
    mse: float
    r2: float


class Entry(Protocol):
    """What the front's rules read of an entry: a :class:`ParetoEntry`, or any object with these fields."""

    size: int
    expression: Expression
    mse: float
    r2: float


EntryT = TypeVar("EntryT", bound=Entry)


class ParetoArchive:
    """Most accurate expression per size, from every expression the search evaluates.

    With ``rules`` (the user's, :class:`dgsr.core.formula_rules.FormulaRules`) it keeps only
    expressions that obey them, and a "size" is their complexity; with ``units``
    (:class:`dgsr.core.units.UnitCheck`) a dimensionally inconsistent expression's loss carries
    the penalty.
    """

    def __init__(self, rules: FormulaRules | None = None, units: UnitCheck | None = None) -> None:
        self._best: dict[int, ParetoEntry] = {}
        self.rules = rules
        self.units = units

    def add(self, expression: Expression, mse: float, r2: float, *, penalised: bool = False) -> bool:
        """Offer an expression; True when it became the best of its size. Non-finite losses are
        ignored. ``penalised``: ``mse`` already holds the units' penalty (an entry of another
        archive with the same units, as a parallel search's units merge theirs)."""
        if not math.isfinite(mse):
            return False
        rules = getattr(self, "rules", None)  # an archive pickled by 0.11.0 has none
        if rules is not None and rules.violation(expression) is not None:
            return False
        size = expression.size if rules is None else rules.complexity(expression)
        current = self._best.get(size)
        if current is not None and current.mse <= mse:
            return False  # the penalty could only raise it: no need to check the units
        units = getattr(self, "units", None)
        if units is not None and not penalised:
            mse = units.penalised_mse(expression, mse)
            if current is not None and current.mse <= mse:
                return False
        self._best[size] = ParetoEntry(size, expression, float(mse), float(r2))
        return True

    def accepts(self, size: int, mse: float) -> bool:
        """Whether :meth:`add` might keep an expression of this size and loss (lets callers skip
        building it): exactly with no rules (the units' penalty only raises a loss), and whenever
        the loss is finite with the user's rules (its complexity is not known yet)."""
        if getattr(self, "rules", None) is not None:
            return math.isfinite(mse)
        current = self._best.get(size)
        return math.isfinite(mse) and (current is None or mse < current.mse)

    def front(self) -> list[ParetoEntry]:
        """Non-dominated entries sorted by size (:func:`non_dominated`)."""
        return non_dominated(self._best)

    def best(self) -> ParetoEntry | None:
        """The most accurate entry (the smallest one among ties)."""
        front = self.front()
        return front[-1] if front else None

    def __len__(self) -> int:
        return len(self._best)


def non_dominated(best_by_size: Mapping[int, EntryT], floor: float = 0.0) -> list[EntryT]:
    """The most accurate entry of each size, sorted by size, kept only when it is more accurate
    than every smaller one (:func:`more_accurate`, with its absolute ``floor``)."""
    out: list[EntryT] = []
    lowest = math.inf
    for size in sorted(best_by_size):
        entry = best_by_size[size]
        if more_accurate(entry.mse, lowest, floor):
            out.append(entry)
            lowest = entry.mse
    return out


def front_scores(entries: Sequence[Entry]) -> np.ndarray:
    """PySR's score: drop of log(loss) per unit of size from the previous entry (0 for the first).

    ``entries`` must be sorted by size, as a front is.
    """
    tiny = np.finfo(np.float64).tiny
    scores = np.zeros(len(entries))
    for i in range(1, len(entries)):
        d_size = entries[i].size - entries[i - 1].size
        d_log = math.log(max(entries[i].mse, tiny)) - math.log(max(entries[i - 1].mse, tiny))
        scores[i] = -d_log / d_size if d_size > 0 else 0.0
    return scores


def select(entries: Sequence[Entry], rule: str = "best") -> int:
    """Index of the entry that ``rule`` picks from a front sorted by size.

    ``"accuracy"``: lowest loss. ``"score"``: largest score (:func:`front_scores`). ``"best"``:
    largest score among entries whose loss is within 1.5x of the lowest (PySR's default).
    ``"balanced"``: as ``"best"``, among entries that are also within 0.01 of the highest R².
    """
    if rule not in SELECTION_RULES:
        raise ValueError(f"model_selection must be one of {SELECTION_RULES}, got {rule!r}")
    if not entries:
        raise ValueError("cannot select from an empty front")
    losses = np.array([e.mse for e in entries], dtype=float)
    if rule == "accuracy":
        return int(np.argmin(losses))
    scores = front_scores(entries)
    if rule in ("best", "balanced"):
        eligible = losses <= BEST_LOSS_FACTOR * losses.min()
        if rule == "balanced":
            r2 = np.array([getattr(e, "r2", math.nan) for e in entries], dtype=float)
            if np.isfinite(r2).any():  # entries without an R² fall back to "best"
                eligible &= r2 >= np.nanmax(r2) - BALANCED_R2_DROP
        scores = np.where(eligible, scores, -np.inf)
    return int(np.argmax(scores))
