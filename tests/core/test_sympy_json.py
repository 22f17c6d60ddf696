"""SymPy expressions as JSON trees: read back as the very same tree, and nothing but the fixed node
kinds is ever built from a file (no eval)."""

from __future__ import annotations

import json

import pytest
import sympy

from dgsr.core.sympy_json import UnsupportedSympy, from_tree, to_tree

x, y = sympy.symbols("x y")
p = sympy.Symbol("p", positive=True)


@pytest.mark.parametrize("expr", [
    x + 2 * y,
    sympy.Mul(-1, x + y, evaluate=False),  # an unevaluated tree stays unevaluated
    sympy.Float(0.1) * x ** sympy.Rational(3, 2) - sympy.sqrt(y),
    sympy.sin(x) ** 2 / 3 + sympy.pi * sympy.E - sympy.exp(-x) * sympy.log(p),
    sympy.Abs(x) + sympy.sign(y) + sympy.tan(sympy.cos(x)),
    sympy.Integer(10) ** 40 * x + sympy.Float("1e-400", 30),
    sympy.Float(-2.5e300) * x + sympy.oo, sympy.zoo, sympy.nan, sympy.Integer(0),
])
def test_a_tree_reads_back_as_the_same_expression(expr):
    back = from_tree(json.loads(json.dumps(to_tree(expr))))
    assert back == expr and sympy.srepr(back) == sympy.srepr(expr) and str(back) == str(expr)


def test_floats_keep_their_exact_binary_value_and_precision():
    for value in (0.1, -1.0 / 3.0, 5e-324, 1.7976931348623157e308):
        back = from_tree(to_tree(sympy.Float(value)))
        assert float(back) == value and back._prec == 53
    wide = sympy.Float("0.1", 40)
    assert from_tree(to_tree(wide))._mpf_ == wide._mpf_ and from_tree(to_tree(wide))._prec == wide._prec


def test_nodes_outside_the_fixed_kinds_are_refused():
    with pytest.raises(UnsupportedSympy):
        to_tree(sympy.Dummy("d") + 1)
    for tree in (["Function", "sympify", ["Symbol", "x"]], ["Function", "__import__", ["Symbol", "os"]],
                 ["S", "__class__"], ["Eval", "1+1"], ["Integer", "1_000"], ["Integer", " 7"],
                 ["Symbol", "x", {"positive": "yes"}], ["Float", 0, "1"], "x", [], [3]):
        with pytest.raises(ValueError):
            from_tree(tree)
