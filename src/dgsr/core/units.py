"""Physical units of the columns and the target, and which formulas respect them (PySR's
``X_units``, ``y_units`` and ``dimensional_constraint_penalty``).

A unit is parsed by pint (``"kg"``, ``"m/s"``, ``"J"``, ``"1"`` for a pure number) into its
dimensions: the exponents of length, mass, time, current, temperature, amount and luminous
intensity. A formula is dimensionally consistent when its dimensions follow through the tree to
the target's: the terms of a sum agree, the argument of ``sin``, ``cos``, ``tan``, ``exp`` and
``log`` is a pure number, ``sqrt``, ``sq`` and ``inv`` halve, double and negate. A constant may
carry whatever unit it needs, as in PySR (unless ``dimensionless_constants``, PySR's
``dimensionless_constants_only``): a subtree of constants alone fits anywhere. A power
``u**c`` (written ``exp(c*log(u))``) has ``c`` times the dimensions of ``u``.
:attr:`UnitReport.dimensional_constants` counts the constant subtrees that must carry a unit
(other than a pure number) for the formula to be consistent.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import ARITY, CONSTANT, OPERATORS, TRANSCENDENTAL, is_variable, variable_index

#: pint's base dimensions, in the order of a dimension vector.
BASE_DIMENSIONS = ("[length]", "[mass]", "[time]", "[current]", "[temperature]", "[substance]", "[luminosity]")
Dims = tuple[float, ...]
DIMENSIONLESS: Dims = (0.0,) * len(BASE_DIMENSIONS)
#: Dimension exponents closer than this are equal (a fitted power's exponent is a float).
_TOLERANCE = 1e-6


def parse_unit(text: object, what: str) -> Dims:
    """The dimensions of a unit written for pint (``"kg*m/s**2"``, ``"J"``, ``"1"``); ``what``
    names it in the ValueError raised for anything pint cannot read or a unit outside SI's dimensions
    (a TypeError for a unit that is not text)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a unit written as text, such as 'kg' or 'm/s', got {text!r}")
    import pint  # only fits with units pay for importing it

    try:
        dims = _registry().parse_units(text.strip() or "dimensionless").dimensionality
    except (pint.errors.PintError, AttributeError, TypeError, ValueError, SyntaxError) as err:
        raise ValueError(f"{what}: {text!r} is not a unit pint can read ({err})") from None
    unknown = sorted(set(dims) - set(BASE_DIMENSIONS))
    if unknown:
        raise ValueError(f"{what}: {text!r} has the dimensions {', '.join(unknown)}, outside SI's seven")
    return tuple(float(dims.get(name, 0)) for name in BASE_DIMENSIONS)


_REGISTRY = None


def _registry():
    global _REGISTRY  # one pint registry per process: building it reads pint's unit tables (0.3 s)
    if _REGISTRY is None:
        import pint

        _REGISTRY = pint.UnitRegistry()
    return _REGISTRY


@dataclass(frozen=True)
class UnitReport:
    """Whether a formula is dimensionally consistent, and how many constants must carry a unit."""

    consistent: bool
    dimensional_constants: int


@dataclass(frozen=True)
class UnitCheck:
    """The units of the searched columns (``x``, one per variable ``x0, x1, ...``) and of the
    target (``y``), and the penalty added to an inconsistent formula's loss, in the loss's units
    (the estimator sets it to ``dimensional_constraint_penalty`` times the target's variance)."""

    x: tuple[Dims, ...]
    y: Dims
    penalty: float = 0.0
    #: PySR's ``dimensionless_constants_only``: constants are pure numbers, not wildcards.
    dimensionless_constants: bool = False

    def report(self, expr: Expression) -> UnitReport:
        """Dimensions followed through ``expr``: consistent with ``y``, and its dimensional constants."""
        if expr.is_empty:
            return UnitReport(True, 0)
        walk = _Walk(expr, self.x, self.dimensionless_constants)
        top = walk.dims(0)
        if top is _BROKEN or (top is not None and not _same(top, self.y)):
            return UnitReport(False, 0)
        return UnitReport(True, walk.count_dimensional(0, self.y))

    def penalised_mse(self, expr: Expression, mse: float) -> float:
        """``mse``, plus the penalty when ``expr`` is not consistent."""
        return mse if self.report(expr).consistent else mse + self.penalty


class _Broken:
    """The dimensions of an inconsistent subtree."""


_BROKEN = _Broken()


def _same(a: Dims, b: Dims) -> bool:
    return all(abs(p - q) <= _TOLERANCE for p, q in zip(a, b))


def _scaled(a: Dims, k: float) -> Dims:
    return tuple(k * v for v in a)


def _plus(a: Dims, b: Dims, sign: float = 1.0) -> Dims:
    return tuple(p + sign * q for p, q in zip(a, b))


def _body_dims(body: Any, parts: list) -> Any:
    """The dimensions of a user-defined operator's body (a SymPy ``Lambda``) given its arguments'
    (None: any unit; :data:`_BROKEN`): a sum's terms agree, a product adds, a numeric power
    scales, any other function takes and gives a pure number (``Abs`` keeps its argument's)."""
    import sympy

    given = dict(zip(body.variables, parts, strict=True))

    def walk(e: Any) -> Any:
        if e in given:
            return given[e]
        if e.is_number:
            return DIMENSIONLESS
        kids = [walk(a) for a in e.args]
        if any(k is _BROKEN for k in kids):
            return _BROKEN
        if e.is_Add:
            known = [k for k in kids if k is not None]
            return _BROKEN if any(not _same(k, known[0]) for k in known) else (known[0] if known else None)
        if e.is_Mul:
            return None if any(k is None for k in kids) else functools.reduce(_plus, kids)
        if e.is_Pow and e.exp.is_number:
            return None if kids[0] is None else _scaled(kids[0], float(e.exp))
        if isinstance(e, sympy.Abs):
            return kids[0]
        return DIMENSIONLESS if all(k is None or _same(k, DIMENSIONLESS) for k in kids) else _BROKEN

    return walk(body.expr)


class _Walk:
    """One formula's dimensions, subtree by subtree: a vector, None (constants only: any unit), or broken."""

    def __init__(self, expr: Expression, x: Sequence[Dims], dimensionless_constants: bool = False):
        self.expr, self.symbols, self.ends, self.x = expr, expr.symbols, expr.subtree_ends, x
        self.constant_dims = DIMENSIONLESS if dimensionless_constants else None
        self.memo: dict[int, object] = {}
        self.constant_at = {}  # position of each constant -> its value
        k = 0
        for i, s in enumerate(self.symbols):
            if s == CONSTANT:
                self.constant_at[i] = expr.constants[k]
                k += 1

    def power_exponent(self, i: int) -> tuple[float, int] | None:
        """(c, position of u) when node ``i`` is the power ``exp(c*log(u))``."""
        s = self.symbols
        if s[i:i + 4] == ("exp", "mul", CONSTANT, "log"):
            return self.constant_at[i + 2], i + 4
        return None

    def dims(self, i: int):
        if i not in self.memo:
            self.memo[i] = self._dims(i)
        return self.memo[i]

    def _dims(self, i: int):
        s = self.symbols[i]
        if s == CONSTANT:  # a zero is absent from the formula as shown: it may be anything
            return None if self.constant_at[i] == 0.0 else self.constant_dims
        if is_variable(s):
            return self.x[variable_index(s)]
        power = self.power_exponent(i)
        if power is not None:
            base = self.dims(power[1])
            return base if base is None or base is _BROKEN else _scaled(base, power[0])
        parts = [self.dims(c) for c in self.expr.children(i)]
        if any(p is _BROKEN for p in parts):
            return _BROKEN
        if s in TRANSCENDENTAL:
            return DIMENSIONLESS if all(p is None or _same(p, DIMENSIONLESS) for p in parts) else _BROKEN
        if OPERATORS[s].body is not None:  # a user-defined operator: the dimensions of its body
            return _body_dims(OPERATORS[s].body, parts)
        if len(parts) == 1:
            factor = {"sqrt": 0.5, "sq": 2.0, "inv": -1.0}[s]
            return None if parts[0] is None else _scaled(parts[0], factor)
        a, b = parts
        if s in ("add", "sub"):
            if a is None or b is None:
                return b if a is None else a
            return a if _same(a, b) else _BROKEN
        if a is None or b is None:
            return None
        return _plus(a, b, 1.0 if s == "mul" else -1.0)

    def count_dimensional(self, i: int, needed: Dims | None) -> int:
        """Constant subtrees below ``i`` that must carry a unit when node ``i`` must have ``needed``
        (None: not known, so not counted)."""
        s = self.symbols[i]
        if not any(is_variable(v) for v in self.symbols[i:self.ends[i]]):  # constants alone: a unit if one is needed
            return int(needed is not None and not _same(needed, DIMENSIONLESS))
        if ARITY.get(s, 0) == 0:
            return 0
        here = self.dims(i)
        power = self.power_exponent(i)
        if power is not None:
            c, base = power
            return self.count_dimensional(base, None if needed is None or c == 0 else _scaled(needed, 1.0 / c))
        kids = self.expr.children(i)
        if s in TRANSCENDENTAL:
            return sum(self.count_dimensional(k, DIMENSIONLESS) for k in kids)
        if OPERATORS[s].body is not None:  # what a user-defined operator's arguments need is not derived
            return sum(self.count_dimensional(k, None) for k in kids)
        if len(kids) == 1:
            factor = {"sqrt": 2.0, "sq": 0.5, "inv": -1.0}[s]
            return self.count_dimensional(kids[0], None if needed is None else _scaled(needed, factor))
        a, b = (self.dims(k) for k in kids)
        if s in ("add", "sub"):  # each term has the sum's unit (known from a term with variables, or needed)
            return sum(self.count_dimensional(k, needed if here is None else here) for k in kids)
        sign = 1.0 if s == "mul" else -1.0
        need_a = None if needed is None or b is None else _plus(needed, b, -sign)
        need_b = None if needed is None or a is None else _scaled(_plus(needed, a, -1.0), sign)
        return self.count_dimensional(kids[0], need_a) + self.count_dimensional(kids[1], need_b)


def checked_units(x_units: Sequence[object] | None, y_units: object, n_columns: int,
                  names: Sequence[str] | None = None) -> tuple[tuple[Dims, ...], Dims]:
    """The dimensions of ``X_units`` (one per column; None: every column dimensionless) and
    ``y_units`` (None: dimensionless); a ValueError naming the entry (and its column, from
    ``names``) for anything malformed."""
    if x_units is None:
        xs: tuple[Dims, ...] = (DIMENSIONLESS,) * n_columns
    else:
        if isinstance(x_units, str) or len(x_units) != n_columns:
            raise ValueError(f"X_units must be a list of {n_columns} units, one per column of X, got {x_units!r}")
        xs = tuple(parse_unit(u, f"X_units[{j}]" + (f" (column {names[j]!r})" if names else ""))
                   for j, u in enumerate(x_units))
    y = DIMENSIONLESS if y_units is None else parse_unit(y_units, "y_units")
    if not all(math.isfinite(v) for d in (*xs, y) for v in d):
        raise ValueError("units must have finite dimensions")
    return xs, y


def dimensionless_groups(x: Sequence[Dims], max_variables: int = 5, max_exponent: int = 2) -> list[Expression]:
    """The dimensionless products of powers of the variables with units ``x`` (Buckingham's pi
    groups), as expressions: ``h*omega/(kb*T)``, ``m*g*x/(kb*T)``, ``v/c``.

    Each is a minimal one: its variables' dimensions are dependent, every proper subset of them
    independent, so its exponents are fixed up to a scale (smallest 1, first positive); groups of
    2 to ``max_variables`` variables with units, integer exponents of at most ``max_exponent``.
    These are the arguments a unit-consistent law can give ``exp``, ``sin`` or ``log``. Fewest
    variables first."""
    dimensional = [i for i, d in enumerate(x) if any(abs(v) > _TOLERANCE for v in d)]
    groups: list[Expression] = []
    for k in range(2, min(max_variables, len(dimensional)) + 1):
        for subset in itertools.combinations(dimensional, k):
            exponents = _null_exponents(np.array([x[i] for i in subset], dtype=np.float64).T, max_exponent)
            if exponents is not None:
                groups.append(_monomial(dict(zip(subset, exponents))))
    return groups


def _null_exponents(dims: np.ndarray, max_exponent: int) -> list[int] | None:
    """The integer exponents (smallest 1 in size, first positive) of the one dimensionless
    product of the columns of ``dims`` [7, k], when there is exactly one and it uses every column
    (a minimal dependent set); None otherwise or when an exponent is not a small integer."""
    k = dims.shape[1]
    _, singular, vt = np.linalg.svd(dims)
    rank = int(np.count_nonzero(singular > 1e-9))
    if rank != k - 1:
        return None
    null = vt[-1]
    if np.min(np.abs(null)) < 1e-9:
        return None
    scaled = null / np.min(np.abs(null))
    scaled = scaled if scaled[0] > 0 else -scaled
    rounded = np.round(scaled)
    if np.max(np.abs(scaled - rounded)) > 1e-6 or np.max(np.abs(rounded)) > max_exponent:
        return None
    return [int(e) for e in rounded]


def _monomial(exponents: dict[int, int]) -> Expression:
    """``prod x_i**e_i`` as a product over a product (``sq`` for a square)."""
    def product(items: list[tuple[int, int]]) -> Expression | None:
        out = None
        for i, e in items:
            factor = Expression.variable(i)
            factor = Expression.combine("sq", factor) if abs(e) == 2 else factor
            out = factor if out is None else Expression.combine("mul", out, factor)
        return out

    numerator = product([(i, e) for i, e in sorted(exponents.items()) if e > 0])
    denominator = product([(i, e) for i, e in sorted(exponents.items()) if e < 0])
    assert numerator is not None  # the first exponent is positive
    return numerator if denominator is None else Expression.combine("div", numerator, denominator)
