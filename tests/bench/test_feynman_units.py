"""The units table of the Feynman/Strogatz problems and the dimension checker (issue 50)."""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pytest
import sympy

from dgsr.bench.datasets import PACKAGED_DATA
from dgsr.bench.feynman_units import (
    BASE_UNITS,
    UNITS_FILE,
    dimension_problem,
    load_units,
    parse_unit,
    unit_vector,
)


def _read_tsv(path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


EQUATIONS = _read_tsv(PACKAGED_DATA / "feynman" / "equations.tsv")
UNIT_ROWS = _read_tsv(UNITS_FILE)
UNITS = load_units()

# Problems whose formula, as SRBench/AI Feynman write it, is not dimensionally consistent with its
# target under units.tsv: name -> reason. Empty: every formula checks out (a dropped factor such as
# 4*pi or a squared probability changes no unit). A new entry needs its reason here and in
# docs/decisions/2026-11-28-feynman-units.md.
KNOWN_EXCEPTIONS: dict[str, str] = {}


def _symbols(row: dict[str, str]) -> list[str]:
    return row["variables"].split(",") + [row["target"]]


def test_every_variable_and_target_has_exactly_one_unit_row():
    counts = Counter((r["name"], r["symbol"]) for r in UNIT_ROWS)
    assert [key for key, n in counts.items() if n != 1] == []
    expected = {(row["name"], s) for row in EQUATIONS for s in _symbols(row)}
    assert expected - set(counts) == set(), "missing unit rows"
    assert set(counts) - expected == set(), "rows naming a symbol the problem does not have"
    assert len(EQUATIONS) == 133 and len(UNITS) == 133


def test_every_row_has_a_quantity_and_a_source():
    assert list(UNIT_ROWS[0]) == ["name", "symbol", "unit", "quantity", "source"]
    for r in UNIT_ROWS:
        assert r["quantity"].strip() and r["source"].strip(), r


def test_every_unit_parses_into_the_seven_base_symbols():
    base = {sympy.Symbol(b) for b in BASE_UNITS}
    for r in UNIT_ROWS:
        expr = parse_unit(r["unit"])
        assert expr.free_symbols <= base, r
        assert len(unit_vector(expr)) == 7


@pytest.mark.parametrize("row", EQUATIONS, ids=[row["name"] for row in EQUATIONS])
def test_formula_is_dimensionally_consistent_with_its_target(row):
    units = UNITS[row["name"]]
    reason = dimension_problem(row["formula"], row["variables"].split(","), units, units[row["target"]])
    if row["name"] in KNOWN_EXCEPTIONS:
        assert reason is not None, f"{row['name']} is consistent now: drop it from KNOWN_EXCEPTIONS"
    else:
        assert reason is None, f"{row['name']}: {reason}"


def test_known_units_of_constants_and_a_few_quantities():
    joule = parse_unit("kg*m**2/s**2")
    assert UNITS["feynman_I_12_2"]["epsilon"] == parse_unit("A**2*s**4/(kg*m**3)")
    assert UNITS["feynman_I_34_27"]["h"] == joule * parse_unit("s")
    assert UNITS["feynman_I_9_18"]["G"] == parse_unit("m**3/(kg*s**2)")
    assert UNITS["feynman_I_39_22"]["kb"] == joule / parse_unit("K")
    assert UNITS["feynman_I_12_11"]["B"] == parse_unit("kg/(A*s**2)")
    assert UNITS["feynman_I_26_2"]["theta1"] == 1  # angles are dimensionless
    assert UNITS["feynman_III_19_51"]["n"] == 1  # quantum numbers are counts


KG, MPS = parse_unit("kg"), parse_unit("m/s")
JOULE = parse_unit("kg*m**2/s**2")


@pytest.mark.parametrize("formula, variables, units, target, ok", [
    ("m + v", ["m", "v"], {"m": KG, "v": MPS}, KG, False),
    ("m*v**2/2 + E", ["m", "v", "E"], {"m": KG, "v": MPS, "E": JOULE}, JOULE, True),
    ("m*v**2", ["m", "v"], {"m": KG, "v": MPS}, KG, False),  # right algebra, wrong target
    ("exp(m)", ["m"], {"m": KG}, parse_unit("1"), False),
    ("sin(v/c)", ["v", "c"], {"v": MPS, "c": MPS}, parse_unit("1"), True),
    ("log(m)", ["m"], {"m": KG}, parse_unit("1"), False),
    ("tanh(m) + 1", ["m"], {"m": KG}, parse_unit("1"), False),
    ("v**m", ["v", "m"], {"v": MPS, "m": KG}, MPS, False),
    ("2**(v/c)", ["v", "c"], {"v": MPS, "c": MPS}, parse_unit("1"), True),
    ("2**v", ["v"], {"v": MPS}, parse_unit("1"), False),
    ("sqrt(2*E/m)", ["E", "m"], {"E": JOULE, "m": KG}, MPS, True),
    ("2*pi*d**(3/2)/sqrt(G*m)", ["d", "G", "m"],
     {"d": parse_unit("m"), "G": parse_unit("m**3/(kg*s**2)"), "m": KG}, parse_unit("s"), True),
    ("atan2(v, c)", ["v", "c"], {"v": MPS, "c": MPS}, parse_unit("1"), True),
    ("atan2(v, m)", ["v", "m"], {"v": MPS, "m": KG}, parse_unit("1"), False),
    ("Abs(v) - c", ["v", "c"], {"v": MPS, "c": MPS}, MPS, True),
    ("m*x", ["m", "x"], {"m": KG}, KG, False),  # x has no unit
])
def test_dimension_problem_catches_wrong_and_passes_right_formulas(formula, variables, units, target, ok):
    reason = dimension_problem(formula, variables, units, target)
    assert (reason is None) == ok, reason
    if not ok:
        assert isinstance(reason, str) and reason


def test_a_wrong_unit_in_a_real_problem_is_caught():
    units = dict(UNITS["feynman_II_4_23"])
    row = next(r for r in EQUATIONS if r["name"] == "feynman_II_4_23")
    args = (row["formula"], row["variables"].split(","))
    assert dimension_problem(*args, units, units["Volt"]) is None
    units["epsilon"] = parse_unit("1")
    assert "target has" in dimension_problem(*args, units, units["Volt"])


@pytest.mark.parametrize("text", ["2*kg", "N", "kg + m", "kg**m", "sin(m)", "kg**x", "__import__"])
def test_bad_unit_text_is_rejected(text):
    with pytest.raises(ValueError):
        parse_unit(text)


def test_load_units_rejects_a_duplicate_row(tmp_path):
    path = tmp_path / "units.tsv"
    path.write_text("name\tsymbol\tunit\tquantity\tsource\np\tx\tm\tlength\ts\np\tx\tm\tlength\ts\n")
    with pytest.raises(ValueError, match="twice"):
        load_units(path)


def test_the_units_method_fits_with_the_problems_units():
    """``dgsr bench --units`` (the ``dgsr-units`` method) hands the table's units to ``fit``."""
    import pandas as pd

    from dgsr.bench.methods import dgsr_options, problem_units
    from dgsr.bench.protocol import Split

    assert dgsr_options("dgsr-units") == {"units": True} and dgsr_options("dgsr-random-units")["units"]
    X = pd.DataFrame({"q1": [1.0], "q2": [1.0], "epsilon": [1.0], "r": [1.0]})
    split = Split(X, np.ones(1), X, np.ones(1), dataset="feynman_I_12_2")
    units = problem_units(split)
    xs = [unit_vector(parse_unit(u)) for u in units["X_units"]]
    assert xs[0] == unit_vector(parse_unit("A*s")) and xs[3] == unit_vector(parse_unit("m"))
    assert unit_vector(parse_unit(units["y_units"])) == unit_vector(parse_unit("kg*m/s**2"))  # a force
