import csv
from pathlib import Path

import numpy as np
import pytest

from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, UNARY
from dgsr.core.parser import ParseError, parse
from dgsr.search.mutations import (
    MUTATION_OPERATORS,
    InvalidMutation,
    Mutation,
    apply_mutation,
    validity_violation,
)

X = Expression.variable


def test_root_builds_from_empty():
    assert apply_mutation(Expression.empty(), Mutation(0, "root", parse("x0*x1"))).format() == "x0*x1"


@pytest.mark.parametrize(
    "node,op,operand,expected",
    [
        (0, "sin", None, "sin(x0 + x1)"),
        (1, "sq", None, "x0**2 + x1"),
        (2, "inv", None, "x0 + x1**-1"),
        (0, "mul", "x2", "(x0 + x1)*x2"),
        (0, "rmul", "x2", "x2*(x0 + x1)"),
        (1, "sub", "x2", "x0 - x2 + x1"),
        (1, "rsub", "x2", "x2 - x0 + x1"),
        (2, "div", "x2", "x0 + x1/x2"),
        (2, "rdiv", "x2", "x0 + x2/x1"),
        (2, "radd", "2.5", "x0 + (2.5 + x1)"),
    ],
)
def test_each_mutation_kind_on_hand_examples(node, op, operand, expected):
    base = parse("x0 + x1")
    m = Mutation(node, op, parse(operand) if operand else None)
    assert apply_mutation(base, m).format() == expected


def test_mutations_grow_expressions_by_operand_plus_one():
    base = parse("x0 + x1")
    assert apply_mutation(base, Mutation(1, "add", parse("x2*x0"))).size == base.size + 1 + 3
    assert apply_mutation(base, Mutation(1, "exp")).size == base.size + 1


@pytest.mark.parametrize(
    "expr,m,reason",
    [
        ("x0", Mutation(1, "sin"), "node_out_of_range"),
        ("x0", Mutation(-1, "sin"), "node_out_of_range"),
        ("x0", Mutation(0, "root", Expression.variable(1)), "root_on_nonempty"),
        ("x0", Mutation(0, "add"), "missing_operand"),
        ("x0", Mutation(0, "sin", Expression.variable(1)), "unexpected_operand"),
        ("x0", Mutation(0, "pow", Expression.variable(1)), "unknown_operator"),
        ("cos(x0)", Mutation(1, "sin"), "nested_transcendental"),
        ("x0*cos(x1)", Mutation(0, "log"), "nested_transcendental"),
        ("exp(x0)", Mutation(1, "add", parse("sin(x1)")), "nested_transcendental"),
    ],
)
def test_invalid_mutations_raise_with_reason(expr, m, reason):
    with pytest.raises(InvalidMutation) as err:
        apply_mutation(parse(expr), m)
    assert err.value.reason == reason


def test_size_limit():
    big = parse("+".join(["x0"] * 30))  # 59 nodes
    assert big.size == 59
    with pytest.raises(InvalidMutation) as err:
        apply_mutation(big, Mutation(0, "add", X(1)))
    assert err.value.reason == "too_large"
    assert apply_mutation(big, Mutation(0, "sq")).size == 60
    assert validity_violation(big, max_size=50) == "too_large"


def test_free_nesting_of_algebraic_operators():
    assert validity_violation(parse("sqrt(x0**2 + x1**2)")) is None
    assert validity_violation(parse("exp(-x0**2/2)/sqrt(2*pi)")) is None
    assert validity_violation(parse("sin(x0)*cos(x1) + log(x2)")) is None
    assert validity_violation(parse("sqrt(sqrt(x0))**-1")) is None


def test_mutation_operator_table_covers_table1():
    assert set(MUTATION_OPERATORS) == {"root"} | set(UNARY) | set(BINARY) | {"r" + b for b in ("add", "sub", "mul", "div")}


def test_every_table1_feynman_law_is_buildable():
    """CONTRACTS §1: laws using only Table-1 operators parse (our parser, no eval) and obey the rules."""
    with open(Path(__file__).parents[1] / "data" / "feynman_equations.tsv") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    outside_table1 = ("asin", "acos", "tanh", "cot", "atan", "sinh", "cosh", "abs")
    built = 0
    for row in rows:
        variables = row["variables"].split(",")
        if any(f"{fn}(" in row["formula"] for fn in outside_table1):
            with pytest.raises(ParseError):
                parse(row["formula"], variables)
            continue
        expr = parse(row["formula"], variables)
        assert validity_violation(expr) is None, row["name"]
        built += 1
    assert built >= 125


def test_nesting_check_agrees_with_its_definition_on_random_trees():
    from dgsr.core.operators import TRANSCENDENTAL, UNARY
    from dgsr.training.generator import random_tree

    def by_definition(expr):  # a transcendental with another one in its subtree, where the exp
        # and log of a power exp(c*log(u)) are not transcendental (one power node)
        symbols, ends = expr.symbols, expr.subtree_ends
        power = {j for i in range(len(symbols)) if symbols[i:i + 4] == ("exp", "mul", "c", "log")
                 for j in (i, i + 3)}
        marked = [s in TRANSCENDENTAL and i not in power for i, s in enumerate(symbols)]
        return any(marked[i] and any(marked[i + 1:ends[i]]) for i in range(len(symbols)))

    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(400):
        expr = random_tree(rng, int(rng.integers(1, 8)), 3)
        if rng.random() < 0.5:  # wrap it, nesting or not
            expr = Expression.combine(str(rng.choice(UNARY)), expr)
        if rng.random() < 0.3:
            expr = Expression.combine("add", expr, random_tree(rng, 2, 3))
        nested = by_definition(expr)
        seen.add(nested)
        assert (validity_violation(expr, max_size=1000) == "nested_transcendental") == nested, expr
    assert seen == {True, False}
