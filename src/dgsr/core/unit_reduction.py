"""Buckingham's pi theorem on a fit with units: ``y = P(x) * f(pi_1(x), ..., pi_k(x))``.

A dimensionally consistent law of ``n`` columns whose dimensions have rank ``r`` is a product
``P`` of powers of the columns with the target's unit, times a function of ``k = n - r``
dimensionless products of powers of the columns (the pi groups). Searching ``f`` over ``k``
columns is easier than searching the law over ``n``: Planck's law of four variables is
``h*omega**3/c**2`` times a function of one group, ``h*omega/(kb*T)``.

:func:`pi_reduction` chooses the groups and ``P`` from the units alone: a basis of ``r`` columns
whose dimensions are independent, each other column divided by the product of the basis
columns with its dimensions (one group each), and ``P`` the product of basis columns with the
target's dimensions. Among the bases it takes the one whose exponents are smallest (integers or
halves, at most :data:`MAX_EXPONENT` in size). Where the target's dimensions are not a product
of the columns', the law holds a constant with a unit (``G``), which the theorem would need as a
column: there is no reduction. Nothing here looks at data.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dgsr.core.expression import Expression

Dims = tuple[float, ...]
#: The largest exponent (in size) a group or the prefactor may give a column.
MAX_EXPONENT = 3.0
#: Exponents are integers or halves; anything further from one of those is no basis.
_GRID = 2.0
_TOLERANCE = 1e-6
#: More columns than this are not reduced (the bases to try grow as n choose r).
_MAX_COLUMNS = 16


@dataclass(frozen=True)
class Reduction:
    """``y = prefactor(x) * f(groups(x))``: the exponent of every column in the prefactor and in
    each group (0 for a column a product does not use)."""

    prefactor: tuple[float, ...]
    groups: tuple[tuple[float, ...], ...]
    #: Further reduced columns after the groups: ``(a, b)`` is group ``a`` minus group ``b``
    #: (:meth:`difference_pairs`).
    differences: tuple[tuple[int, int], ...] = ()

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def difference_pairs(self) -> list[tuple[int, int]]:
        """The pairs of groups ``(a, b)`` of two columns with the same unit over the same basis
        product, ``x_i*B`` and ``x_j*B``: their difference ``(x_i - x_j)*B`` is a pure number
        too, and the one a law of a phase difference, a potential difference or a detuning takes
        (``cos(theta1 - theta2)``, ``E - U``, ``(omega - omega_0)*t``), which no product of powers is."""
        pairs = []
        for a, b in itertools.combinations(range(len(self.groups)), 2):
            ga, gb = np.array(self.groups[a]), np.array(self.groups[b])
            changed = np.flatnonzero(ga != gb)
            if len(changed) != 2:
                continue
            i, j = (int(k) for k in (changed if ga[changed[0]] > gb[changed[0]] else changed[::-1]))
            if ga[i] == 1.0 and gb[j] == 1.0 and ga[j] == 0.0 and gb[i] == 0.0:
                pairs.append((a, b) if i < j else (b, a))
        return pairs

    def with_differences(self, pairs: Sequence[tuple[int, int]]) -> Reduction:
        """The same reduction with the differences of ``pairs`` of groups as further columns."""
        return dataclasses.replace(self, differences=tuple((int(a), int(b)) for a, b in pairs))

    def with_reciprocals(self, keep: Sequence[bool] | None = None) -> Reduction:
        """The same reduction with each group's reciprocal (where ``keep`` says so; default all)
        as a further group (``h*omega/(kb*T)`` and ``kb*T/(h*omega)``): the units cannot tell which
        way up a law uses a group, and a search finds ``1/(exp(u) - 1)`` far sooner than ``1/(exp(1/u) - 1)``."""
        keep = [True] * len(self.groups) if keep is None else keep
        flipped = tuple(tuple(-e + 0.0 for e in g) for g, k in zip(self.groups, keep) if k)
        return dataclasses.replace(self, groups=self.groups + flipped)

    def group_columns(self, X: np.ndarray) -> np.ndarray:
        """The reduced columns' values on the rows of ``X`` [n_rows, n_columns]: the groups', then
        the differences', one column each."""
        columns = [_power_product(X, g) for g in self.groups]
        with np.errstate(all="ignore"):
            columns += [columns[a] - columns[b] for a, b in self.differences]
        return np.column_stack(columns) if columns else np.empty((X.shape[0], 0))

    def prefactor_values(self, X: np.ndarray) -> np.ndarray:
        return _power_product(X, self.prefactor)

    def lift(self, reduced: Expression) -> Expression:
        """``prefactor * reduced``, with the reduced expression's column ``i`` replaced by group ``i``:
        the same formula over the original columns."""
        columns = {i: monomial(g) for i, g in enumerate(self.groups)}
        columns.update({len(self.groups) + k: self._difference(a, b) for k, (a, b) in enumerate(self.differences)})
        body = reduced.with_variables(columns)
        if not any(self.prefactor):
            return body
        return Expression.combine("mul", monomial(self.prefactor), body)

    def _difference(self, a: int, b: int) -> Expression:
        """Group ``a`` minus group ``b`` as ``(x_i - x_j)*B`` (the shared basis product ``B`` once)."""
        ga, gb = np.array(self.groups[a]), np.array(self.groups[b])
        i, j = int(np.argmax(ga - gb)), int(np.argmin(ga - gb))
        shared = ga.copy()
        shared[i] = 0.0
        difference = Expression.combine("sub", Expression.variable(i), Expression.variable(j))
        if not np.any(shared):
            return difference
        return Expression.combine("mul", difference, monomial(shared))


def pi_reduction(x: Sequence[Dims], y: Dims) -> Reduction | None:
    """The reduction of a law of columns with dimensions ``x`` and a target with dimensions
    ``y``, or None where no column has a unit, ``y``'s dimensions are no product of the columns',
    or no basis gives exponents within :data:`MAX_EXPONENT` on the grid of halves."""
    n = len(x)
    dims = np.array(x, dtype=np.float64).reshape(n, -1).T if n else np.zeros((0, 0))
    dimensional = [j for j in range(n) if np.any(np.abs(dims[:, j]) > _TOLERANCE)]
    if not dimensional or n > _MAX_COLUMNS:
        return None
    rank = int(np.linalg.matrix_rank(dims[:, dimensional], tol=_TOLERANCE))
    target = np.asarray(y, dtype=np.float64)
    solved, *_ = np.linalg.lstsq(dims[:, dimensional], target, rcond=None)
    if np.max(np.abs(dims[:, dimensional] @ solved - target), initial=0.0) > _TOLERANCE:
        return None  # the law needs a constant with a unit (G in m1*m2/r**2 of kg and m): no theorem without it
    best: tuple[tuple[float, float, int], Reduction] | None = None
    for basis in itertools.combinations(dimensional, rank):
        found = _reduction_on(dims, list(basis), dimensional, target, n)
        if found is None:
            continue
        # Of bases as simple, one that leaves same-unit columns out of it, so that their
        # difference is a group: (E2 - E1)/kT, not (1 - E2/E1) over the basis E1.
        score = (*found[0], -len(found[1].difference_pairs()))
        if best is None or score < best[0]:
            best = (score, found[1])
    return None if best is None else best[1]


def _reduction_on(dims: np.ndarray, basis: list[int], dimensional: list[int], target: np.ndarray,
                  n: int) -> tuple[tuple[float, float], Reduction] | None:
    """The reduction with ``basis`` as the independent columns and its (total, largest) exponent
    size, or None where the basis is dependent or an exponent is off the grid or too large."""
    base = dims[:, basis]
    if np.linalg.matrix_rank(base, tol=_TOLERANCE) < len(basis):
        return None
    groups = []
    for j in range(n):
        if j in basis:
            continue
        exponents = np.zeros(n)
        exponents[j] = 1.0
        if j in dimensional:
            solved = _on_grid(base, dims[:, j])
            if solved is None:
                return None
            exponents[basis] = -solved
        groups.append(exponents)
    prefactor = np.zeros(n)
    solved = _on_grid(base, target)
    if solved is None:
        return None
    prefactor[basis] = solved
    every = np.concatenate([prefactor, *groups]) if groups else prefactor
    if np.max(np.abs(every), initial=0.0) > MAX_EXPONENT:
        return None
    score = (float(np.sum(np.abs(every))), float(np.max(np.abs(every), initial=0.0)))
    return score, Reduction(tuple(float(v) for v in prefactor), tuple(tuple(float(v) for v in g) for g in groups))


def _on_grid(base: np.ndarray, wanted: np.ndarray) -> np.ndarray | None:
    """Exponents ``e`` with ``base @ e == wanted`` exactly, rounded to halves; None where there are none."""
    solved, *_ = np.linalg.lstsq(base, wanted, rcond=None)
    rounded = np.round(solved * _GRID) / _GRID
    if np.max(np.abs(base @ rounded - wanted), initial=0.0) > _TOLERANCE:
        return None
    return rounded + 0.0  # no -0.0


def _power_product(X: np.ndarray, exponents: Sequence[float]) -> np.ndarray:
    out = np.ones(X.shape[0])
    with np.errstate(all="ignore"):
        for j, e in enumerate(exponents):
            if e:
                out = out * np.power(X[:, j], e)
    return out


def monomial(exponents: Sequence[float]) -> Expression:
    """``prod x_j**e_j`` for exponents that are integers or halves, as a product over a product
    (``sq`` for a square, ``sqrt`` for a half, ``inv`` where nothing is above the line)."""
    numerator = _product([(j, e) for j, e in enumerate(exponents) if e > 0])
    denominator = _product([(j, -e) for j, e in enumerate(exponents) if e < 0])
    if numerator is None:
        return Expression.constant(1.0) if denominator is None else Expression.combine("inv", denominator)
    return numerator if denominator is None else Expression.combine("div", numerator, denominator)


def _product(items: list[tuple[int, float]]) -> Expression | None:
    out = None
    for j, e in items:
        factor = _power(j, e)
        out = factor if out is None else Expression.combine("mul", out, factor)
    return out


def _power(j: int, e: float) -> Expression:
    """``x_j**e`` for a positive integer or half ``e`` up to 3: a root times an integer power,
    the integer power a square times ``x_j`` for what is left."""
    x = Expression.variable(j)
    whole = int(e)
    parts = [Expression.combine("sqrt", x)] if e != whole else []
    if whole % 2 == 1:
        parts.append(x)
    parts += [Expression.combine("sq", x)] * (whole // 2)
    out = parts[0]
    for part in parts[1:]:
        out = Expression.combine("mul", out, part)
    return out
