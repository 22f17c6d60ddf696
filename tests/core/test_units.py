"""Dimensions followed through a formula (PySR's units): which formulas are consistent with the
target's unit, and how many constants must carry a unit. Every expectation is worked by hand."""

from __future__ import annotations

import pytest

from dgsr.core.parser import parse
from dgsr.core.units import DIMENSIONLESS, UnitCheck, checked_units, parse_unit

NAMES = ["m1", "m2", "r", "t"]
X_UNITS = ["kg", "kg", "m", "s"]


def check(y_unit: str) -> UnitCheck:
    xs, y = checked_units(X_UNITS, y_unit, 4)
    return UnitCheck(xs, y)


def report(text: str, y_unit: str):
    return check(y_unit).report(parse(text, NAMES))


def test_units_parse_to_si_dimensions():
    assert parse_unit("kg*m/s**2", "u") == parse_unit("N", "u") == (1.0, 1.0, -2.0, 0.0, 0.0, 0.0, 0.0)
    assert parse_unit("1", "u") == parse_unit("", "u") == DIMENSIONLESS
    assert parse_unit("km/h", "u") == parse_unit("m/s", "u")  # dimensions, not scale


@pytest.mark.parametrize("text, unit, consistent, dimensional", [
    ("6.674e-11*m1*m2/r**2", "N", True, 1),  # G carries m**3/(kg*s**2)
    ("m1*m2/r**2", "N", False, 0),  # kg**2/m**2 is no force
    ("m1 + m2", "kg", True, 0),
    ("m1 + r", "kg", False, 0),  # a sum of unlike units
    ("m1 + 3.0", "kg", True, 1),  # the 3 is 3 kg
    ("exp(r)", "1", False, 0),  # exp of a length
    ("m1*exp(-0.5*t)", "kg", True, 1),  # the rate carries 1/s
    ("sqrt(m1*m2)", "kg", True, 0),
    ("r**1.5", "m**1.5", True, 0),  # a power scales the dimensions
    ("2.5*r**1.5", "s", True, 1),
    ("1.0", "J", True, 1),  # a constant alone may be anything
    ("sin(t)", "1", False, 0),
])
def test_consistency_and_dimensional_constants(text, unit, consistent, dimensional):
    got = report(text, unit)
    assert (got.consistent, got.dimensional_constants) == (consistent, dimensional)


def test_the_penalty_is_added_only_to_an_inconsistent_formula():
    xs, y = checked_units(X_UNITS, "kg", 4)
    units = UnitCheck(xs, y, penalty=7.0)
    assert units.penalised_mse(parse("m1 + m2", NAMES), 0.5) == 0.5
    assert units.penalised_mse(parse("m1 + r", NAMES), 0.5) == 7.5


@pytest.mark.parametrize("x_units, y_units, message", [
    (["kg"], None, "X_units must be a list of 4 units"),
    ("kg", None, "X_units must be a list of 4 units"),
    (["kg", "kg", "m", "parsec_per_banana"], None, "X_units[3]: 'parsec_per_banana' is not a unit"),
    (None, 3, "y_units must be a unit written as text"),
    (None, "USD", "y_units"),
])
def test_a_malformed_unit_is_one_clear_error(x_units, y_units, message):
    with pytest.raises((ValueError, TypeError)) as err:
        checked_units(x_units, y_units, 4)
    assert message in str(err.value)


def _groups(units: list[str]) -> list[str]:
    from dgsr.core.units import dimensionless_groups

    return [str(g) for g in dimensionless_groups([parse_unit(u, "u") for u in units])]


def test_dimensionless_groups_are_the_minimal_products_of_powers_whose_units_cancel():
    # h, omega, kb, T: the one group is h*omega/(kb*T)
    assert _groups(["kg*m**2/s", "1/s", "kg*m**2/(K*s**2)", "K"]) == ["x0*x1/(x2*x3)"]
    # n0, m, x, T, g, kb (a barometric law): m*g*x/(kb*T), five variables; n0 has no partner
    assert _groups(["m**-3", "kg", "m", "K", "m/s**2", "kg*m**2/(K*s**2)"]) == ["x1*x2*x4/(x3*x5)"]
    # two speeds and a pure number: v/u only (a pure number is a group alone, already a variable)
    assert _groups(["m/s", "m/s", "1", "m"]) == ["x0/x1"]
    # a squared exponent: m*omega**2*x**2/E
    assert _groups(["kg", "1/s", "m", "J"]) == ["x0*x1**2*x2**2/x3"]
    # three lengths: each pair is a group, and no group of three (it would contain a pair)
    assert _groups(["m", "m", "m"]) == ["x0/x1", "x0/x2", "x1/x2"]
    assert _groups(["kg", "m", "s"]) == []  # independent units: no group
