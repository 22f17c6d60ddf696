"""The user's rules on formulas (PySR's nested_constraints, constraints, maxdepth and
complexity_of_*), checked on hand-written trees whose depth, nesting and argument sizes are
counted by hand in each case."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.formula_rules import FormulaRules, formula_rules
from dgsr.core.pareto import ParetoArchive
from dgsr.core.parser import parse

NAMES = ["x", "y"]


def rules(**params) -> FormulaRules:
    out = formula_rules(params)
    assert out is not None
    return out


def e(text: str):
    return parse(text, NAMES)


def test_no_parameters_set_no_rules():
    assert formula_rules({}) is None
    assert formula_rules({"maxdepth": None, "complexity_of_operators": {"exp": 1}}) is None


@pytest.mark.parametrize("text, depth", [("sin(x)", 2), ("x*y + 1", 3), ("sqrt(exp(x*y))", 4)])
def test_maxdepth_counts_a_leaf_as_one(text, depth):
    assert rules(maxdepth=depth).violation(e(text)) is None
    assert rules(maxdepth=depth - 1).violation(e(text)) == f"maxdepth={depth - 1}"
    assert rules(maxdepth=1).violation(e("x")) is None


def test_nested_constraints_count_the_most_on_one_path():
    # PySR's example: cos may hold two cosines below it, not three.
    two = rules(nested_constraints={"sqrt": {"sqrt": 2}})
    assert two.violation(e("sqrt(sqrt(sqrt(x)))")) is None
    assert "nested" in two.violation(e("sqrt(sqrt(sqrt(sqrt(x))))"))
    # Two on separate paths are one each.
    assert two.violation(e("sqrt(sqrt(x) + sqrt(sqrt(y)))")) is None
    never = rules(nested_constraints={"/": {"square": 0}})
    assert never.violation(e("1/(x**2 + 1)")) is not None
    assert never.violation(e("1/x + y**2")) is None  # side by side, not nested
    assert never.violation(e("(1/x)**2")) is None  # the square above, not below


def test_constraints_limit_each_argument_by_complexity():
    limits = rules(constraints={"/": (-1, 3)})
    assert limits.violation(e("(x*y + x*x*y)/(x + 1)")) is None  # denominator: 3 nodes, numerator free
    assert "argument 2 of div" in limits.violation(e("x/(x*y + 1)"))  # 5 nodes
    unary = rules(constraints={"sin": 1})
    assert unary.violation(e("sin(x) + x*y")) is None
    assert unary.violation(e("sin(x*y)")) is not None
    # Argument sizes are complexities: a variable weighing 2 makes sin(x) too large for 1.
    assert rules(constraints={"sin": 1}, complexity_of_variables=2).violation(e("sin(x)")) is not None


def test_complexity_weights_each_node():
    expr = e("exp(x) + 2.5")  # add, exp, x, constant
    assert rules(maxdepth=9).complexity(expr) == 4  # unweighted: the node count
    assert rules(complexity_of_operators={"exp": 3}).complexity(expr) == 6
    assert rules(complexity_of_constants=2, complexity_of_variables=3).complexity(expr) == 7
    assert rules(complexity_of_operators={"+": 0.5, "exp": 0.5}).complexity(expr) == 3


@pytest.mark.parametrize("params, message", [
    ({"maxdepth": 0}, "maxdepth must be a whole number >= 1"),
    ({"maxdepth": 2.5}, "maxdepth must be a whole number"),
    ({"nested_constraints": {"sin": 0}}, "nested_constraints (at 'sin') must be a dict"),
    ({"nested_constraints": {"sin": {"tanh": 0}}}, "'tanh' is not an operator"),
    ({"nested_constraints": {"sin": {"cos": -1}}}, "must be a whole number >= 0"),
    ({"constraints": {"/": 3}}, "'/' is binary, so its limit is a pair"),
    ({"constraints": {"sin": (1, 2)}}, "'sin' is unary, so its limit is one number"),
    ({"constraints": {"*": (1, -2)}}, "must be a whole number >= -1"),
    ({"complexity_of_operators": {"exp": 0}}, "must be a number > 0"),
    ({"complexity_of_constants": float("nan")}, "complexity_of_constants must be a number > 0"),
    ({"complexity_of_variables": [1, 2]}, "complexity_of_variables must be a number > 0"),
    ({"constraints": [("sin", 1)]}, "constraints must be a dict"),
])
def test_a_malformed_rule_is_one_clear_error(params, message):
    with pytest.raises((ValueError, TypeError)) as err:
        formula_rules(params)
    assert message in str(err.value)


def test_numpy_numbers_and_aliases_are_accepted():
    out = rules(maxdepth=np.int64(4), constraints={"square": np.int32(3)},
                complexity_of_operators={"*": np.float64(2.0)})
    assert out.max_depth == 4 and out.argument_limits == (("sq", (3,)),)
    assert out.operator_complexity == (("mul", 2.0),)


def test_the_archive_ranks_by_weighted_complexity():
    """sin(x) (2 nodes) dominates x*x + x (5 nodes) by node count; with a sine weighing 10 it
    is the larger of the two, and both are on the front."""
    sine, poly = e("sin(x)"), e("x*x + x")
    plain = ParetoArchive()
    weighted = ParetoArchive(rules(complexity_of_operators={"sin": 10}))
    for archive in (plain, weighted):
        archive.add(sine, 1.0, 0.9)
        archive.add(poly, 2.0, 0.8)
    assert [(f.size, f.expression) for f in plain.front()] == [(2, sine)]
    assert [(f.size, f.expression) for f in weighted.front()] == [(5, poly), (11, sine)]


def test_the_archive_keeps_nothing_that_breaks_the_rules():
    archive = ParetoArchive(rules(maxdepth=2))
    assert not archive.add(e("x*y + 1"), 0.5, 0.9)
    assert archive.add(e("x*y"), 1.0, 0.8)
    assert [f.expression for f in archive.front()] == [e("x*y")]
