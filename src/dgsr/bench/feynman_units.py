"""Physical units of the Feynman (and Strogatz) benchmark problems, and a dimension checker.

``data/feynman/units.tsv`` gives, for every problem of ``data/feynman/equations.tsv``, the SI unit
of each input variable and of the target, written in the seven base symbols ``m kg s A K mol cd``
(``1`` for a dimensionless quantity; angles in radians and counts are dimensionless). How the
units were assigned: ``docs/decisions/2026-11-28-feynman-units.md``.

:func:`dimension_problem` propagates dimensions through a formula's SymPy tree: terms of a sum
share a unit, arguments of transcendental functions are dimensionless, a dimensioned base needs
a numeric exponent, numbers and ``pi`` are dimensionless. Text from data files goes through
:func:`dgsr.bench.datasets.parse_formula`, never through ``sympify`` unchecked.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import sympy

from dgsr.bench.datasets import PACKAGED_DATA, parse_formula

#: The SI base units, in the order of a dimension vector.
BASE_UNITS = ("m", "kg", "s", "A", "K", "mol", "cd")
UNITS_FILE = PACKAGED_DATA / "feynman" / "units.tsv"

Dim = tuple[sympy.Rational, ...]
_ZERO: Dim = tuple(sympy.Integer(0) for _ in BASE_UNITS)
#: Functions whose value has the unit of their (single) argument.
_SAME_UNIT = (sympy.Abs, sympy.sign, sympy.floor, sympy.ceiling)


class DimensionError(ValueError):
    """A formula is not dimensionally consistent; the message says where."""


def parse_unit(text: str) -> sympy.Expr:
    """SymPy expression of a unit string such as ``kg*m**2/s**2`` or ``1``.

    Raises ValueError unless the text is a product of powers of :data:`BASE_UNITS` with rational
    exponents and coefficient 1.
    """
    expr = parse_formula(text, BASE_UNITS)
    unit_vector(expr)
    return expr


def unit_vector(unit: sympy.Expr) -> Dim:
    """Exponents of the base units in ``unit`` (a monomial in the base symbols, coefficient 1)."""
    exps = dict.fromkeys(BASE_UNITS, sympy.Integer(0))
    for factor in sympy.Mul.make_args(sympy.sympify(unit)):
        base, exp = factor.as_base_exp()
        if factor == 1:
            continue
        if not (isinstance(base, sympy.Symbol) and base.name in exps and exp.is_Rational):
            raise ValueError(f"unit {unit}: {factor} is not a base unit to a rational power")
        exps[base.name] += exp
    return tuple(exps[name] for name in BASE_UNITS)


def unit_expr(dim: Dim) -> sympy.Expr:
    """The unit expression of a dimension vector (``1`` when dimensionless)."""
    return sympy.Mul(*(sympy.Symbol(name) ** e for name, e in zip(BASE_UNITS, dim)))


def _scale(dim: Dim, k: sympy.Rational) -> Dim:
    return tuple(e * k for e in dim)


def _add(a: Dim, b: Dim) -> Dim:
    return tuple(x + y for x, y in zip(a, b))


def _need_dimensionless(node: sympy.Expr, args: tuple[sympy.Expr, ...], dims: dict[str, Dim]) -> None:
    for arg in args:
        d = dimension_of(arg, dims)
        if d != _ZERO:
            raise DimensionError(f"argument of {node.func} has unit {unit_expr(d)}: {arg}")


def _power_dim(node: sympy.Pow, dims: dict[str, Dim]) -> Dim:
    base, exp = node.as_base_exp()
    d = dimension_of(base, dims)
    if d == _ZERO:
        if dimension_of(exp, dims) != _ZERO:
            raise DimensionError(f"exponent with unit {unit_expr(dimension_of(exp, dims))}: {node}")
        return _ZERO
    if not exp.is_number or not sympy.nsimplify(exp, rational=True).is_Rational:
        raise DimensionError(f"base with unit {unit_expr(d)} raised to a non-numeric power: {node}")
    return _scale(d, sympy.nsimplify(exp, rational=True))


def _same_unit_dim(node: sympy.Expr, args: tuple[sympy.Expr, ...], dims: dict[str, Dim]) -> Dim:
    found = [(arg, dimension_of(arg, dims)) for arg in args]
    first_arg, first = found[0]
    for arg, d in found[1:]:
        if d != first:
            raise DimensionError(f"terms with units {unit_expr(first)} and {unit_expr(d)}: {first_arg} and {arg}")
    return first


def dimension_of(expr: sympy.Expr, dims: dict[str, Dim]) -> Dim:
    """Dimension vector of ``expr``, each symbol's from ``dims``; DimensionError if inconsistent."""
    if isinstance(expr, sympy.Symbol):
        if expr.name not in dims:
            raise DimensionError(f"no unit for symbol {expr.name}")
        return dims[expr.name]
    if expr.is_number:
        return _ZERO
    if isinstance(expr, (sympy.Add, sympy.Min, sympy.Max)):
        return _same_unit_dim(expr, expr.args, dims)
    if isinstance(expr, sympy.Mul):
        total = _ZERO
        for arg in expr.args:
            total = _add(total, dimension_of(arg, dims))
        return total
    if isinstance(expr, sympy.Pow):
        return _power_dim(expr, dims)
    if isinstance(expr, _SAME_UNIT):
        return dimension_of(expr.args[0], dims)
    if isinstance(expr, sympy.atan2):
        _same_unit_dim(expr, expr.args, dims)
        return _ZERO
    if isinstance(expr, sympy.Function):
        _need_dimensionless(expr, expr.args, dims)
        return _ZERO
    raise DimensionError(f"cannot take the unit of {expr!r}")


def dimension_problem(formula: str, variables: list[str], units: dict[str, sympy.Expr],
                      target_unit: sympy.Expr) -> str | None:
    """None if ``formula`` is dimensionally consistent and has ``target_unit``, else a short reason.

    ``units`` maps each variable name to its unit expression in :data:`BASE_UNITS`.
    """
    try:
        expr = parse_formula(formula, variables)
        dims = {name: unit_vector(units[name]) for name in variables if name in units}
        got = dimension_of(expr, dims)
        want = unit_vector(target_unit)
    except (DimensionError, ValueError) as err:
        return str(err)
    if got != want:
        return f"formula has unit {unit_expr(got)}, target has {unit_expr(want)}"
    return None


def load_units(path: str | os.PathLike | None = None) -> dict[str, dict[str, sympy.Expr]]:
    """Problem name -> symbol -> unit expression, from ``units.tsv`` (the packaged one by default).

    Raises ValueError on a malformed unit or a (name, symbol) given twice.
    """
    table: dict[str, dict[str, sympy.Expr]] = {}
    with open(Path(path) if path is not None else UNITS_FILE, newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            per = table.setdefault(row["name"], {})
            if row["symbol"] in per:
                raise ValueError(f"{row['name']}: unit of {row['symbol']} given twice")
            per[row["symbol"]] = parse_unit(row["unit"])
    return table
