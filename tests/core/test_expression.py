import math

import numpy as np
import pytest
import sympy

from dgsr.core.expression import Expression, MalformedExpression
from dgsr.core.parser import ParseError, parse
from tests.conftest import random_tree


def test_prefix_structure_and_spans():
    e = parse("x0*sin(1.5*x1) + 2")
    assert e.symbols == ("add", "mul", "x0", "sin", "mul", "c", "x1", "c")
    assert e.constants == (1.5, 2.0)
    assert e.size == 8
    # subtree of "sin" spans sin, mul, c, x1
    assert e.subtree_ends[3] == 7
    assert e.subtree(3).format() == "sin(1.5*x1)"
    assert e.children(0) == [1, 7]
    assert e.constant_offset(7) == 1
    assert e.variables == frozenset({0, 1})


def test_replace_subtree_moves_constants():
    e = parse("x0*sin(1.5*x1) + 2")
    new = e.replace_subtree(2, Expression.constant(7.0))
    assert new.format() == "7.0*sin(1.5*x1) + 2.0"
    assert new.constants == (7.0, 1.5, 2.0)


def test_with_variables_replaces_each_named_variable_and_keeps_constants_in_order():
    expr = parse("2.5*x0 + sin(x1)*x0 - 1.5", ["x0", "x1"])
    out = expr.with_variables({0: parse("3*x1 + 0.5", ["x0", "x1"])})
    x1 = sympy.Symbol("x1")
    assert sympy.simplify(out.to_sympy() - (2.5 * (3 * x1 + 0.5) + sympy.sin(x1) * (3 * x1 + 0.5) - 1.5)) == 0
    assert expr.with_variables({}) == expr


@pytest.mark.parametrize("symbols,constants", [(("add", "x0"), ()), (("x0", "x1"), ()), (("c",), ()), (("foo",), ())])
def test_malformed_sequences_are_rejected(symbols, constants):
    with pytest.raises(MalformedExpression):
        Expression(symbols, constants)


def test_size_counts_operators_variables_and_constants():
    assert parse("x0 + 1").size == 3
    assert Expression.empty().size == 0


def test_keys_and_rounding():
    a = parse("1.23456*x0")
    b = parse("1.23461*x0")
    assert a.key() != b.key()
    assert a.key(digits=4) == b.key(digits=4)
    assert hash(a) == hash(parse("1.23456*x0"))


def test_to_sympy_uses_names():
    e = parse("m*g*z", ["m", "g", "z"])
    m, g, z = sympy.symbols("m g z")
    assert sympy.simplify(e.to_sympy(["m", "g", "z"]) - m * g * z) == 0


def test_a_function_of_a_whole_constant_is_shown_as_its_value():
    # A search's cos(c) with c snapped to 4125 showed as ``cos(4125)``: a constant that reads as a
    # formula (SymPy keeps functions of integers unevaluated). Roots of numbers read well and stay.
    p = sympy.Symbol("p")
    cosine = Expression.combine("cos", Expression.constant(4125.0))
    shown = Expression.combine("add", Expression.combine("sq", Expression.variable(0)), cosine).to_sympy(["p"])
    assert not shown.atoms(sympy.cos)
    assert shown.has(p**2) and float(shown.subs(p, 0)) == pytest.approx(math.cos(4125.0))
    assert Expression.combine("sqrt", Expression.constant(2.0)).to_sympy() == sympy.sqrt(2)


def test_format_round_trips_on_random_trees(rng):
    for _ in range(300):
        e = random_tree(rng, 3, int(rng.integers(1, 12)))
        back = parse(e.format(), fold_constants=False)
        assert back.key() == e.key(), e.format()


@pytest.mark.parametrize(
    "text,symbols",
    [
        ("x0**2", ("sq", "x0")),
        ("x0**0.5", ("sqrt", "x0")),
        ("x0**-1", ("inv", "x0")),
        ("x0**3", ("mul", "sq", "x0", "x0")),
        ("x0**-2", ("inv", "sq", "x0")),
        ("x0**1.5", ("mul", "x0", "sqrt", "x0")),
        ("x0^2", ("sq", "x0")),
        ("ln(x0)", ("log", "x0")),
        ("-x0", ("mul", "c", "x0")),
        ("2*pi*x0", ("mul", "c", "x0")),
    ],
)
def test_parser_power_and_function_rewrites(text, symbols):
    assert parse(text).symbols == symbols


def test_parser_constant_folding_value():
    assert parse("2*pi*x0").constants == pytest.approx((2 * np.pi,))
    assert parse("-3").constants == (-3.0,)


@pytest.mark.parametrize(
    "text,message",
    [("asin(x0)", "not in the operator set"), ("x0**x1", "exponents must be numbers"), ("x0 +", "end"),
     ("y", "unknown variable"), ("x0**0.3", "not expressible"), ("x0 $ 1", "cannot read"), ("", "empty"),
     ("sin", "is a function")],
)
def test_parser_errors_are_clear(text, message):
    with pytest.raises(ParseError, match=message):
        parse(text)


def test_parser_never_evaluates_python():
    with pytest.raises(ParseError):
        parse("__import__('os').system('echo hi')")
