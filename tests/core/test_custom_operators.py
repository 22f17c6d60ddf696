"""User-defined operators (issue 50 item 1): definitions read from SymPy text, compiled for the
kernels and derived for numpy, differentiated and inverted, and one clear line for a bad one.

Each definition here has its own name, used by no other test with another body (a name means one
operator for the life of a process, and pytest's workers run many test modules)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.special
import sympy

from dgsr.core.custom_operators import (
    define_operator,
    expand,
    parse_definition,
    split_operator_list,
    uses_custom,
)
from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels.codes import encode
from dgsr.core.kernels.forward import run_encoded
from dgsr.core.kernels.scoring import encode_sum, score_sum
from dgsr.core.operators import OPERATORS, resolve_operators
from dgsr.core.parser import parse
from dgsr.core.sympy_json import from_tree, to_tree
from dgsr.core.units import UnitCheck, parse_unit
from dgsr.search.mutations import validity_violation

# name -> (definition, the same function written out in numpy)
DEFINITIONS = {
    "t_gauss": ("t_gauss(x) = exp(-x**2)", lambda a: np.exp(-a * a)),
    "t_soft": ("t_soft(x) = log(1 + exp(x))", lambda a: np.log1p(np.exp(a))),
    "t_cube": ("t_cube(x) = x**3 - 2*x", lambda a: a**3 - 2 * a),
    "t_act": ("t_act(x) = tanh(x) + Abs(x)/2", lambda a: np.tanh(a) + np.abs(a) / 2),
    "t_bell": ("t_bell(x) = erf(x)*cosh(x)/(1 + x**2)", lambda a: scipy.special.erf(a) * np.cosh(a) / (1 + a * a)),
    "t_hyp": ("t_hyp(x, y) = sqrt(x**2 + y**2)", lambda a, b: np.sqrt(a * a + b * b)),
    "t_pw": ("t_pw(x, y) = Abs(x)**y", lambda a, b: np.abs(a) ** b),
    "t_mix": ("t_mix(a, b) = atan(a/b) + sinh(b)", lambda a, b: np.arctan(a / b) + np.sinh(b)),
}


@pytest.fixture(scope="module", autouse=True)
def defined():
    return {name: define_operator(text) for name, (text, _) in DEFINITIONS.items()}


def _call(name: str, *children: Expression) -> Expression:
    return Expression.combine(name, *children)


def _rows(n: int = 40, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(2, n))


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_the_numpy_function_is_the_definition(name):
    _, reference = DEFINITIONS[name]
    cols = _rows()
    op = OPERATORS[name]
    with np.errstate(all="ignore"):
        expected = reference(*cols[:op.arity])
        got = op.numpy_fn(*cols[:op.arity])
    np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_the_derivatives_match_finite_differences(name):
    op = OPERATORS[name]
    a, b = _rows(seed=1)
    a = np.where(np.abs(a) < 0.05, 0.3, a)  # off the kink of Abs
    h = 1e-6
    with np.errstate(all="ignore"):
        if op.arity == 1:
            numeric = [(op.numpy_fn(a + h) - op.numpy_fn(a - h)) / (2 * h)]
            analytic = [op.derivative(a, op.numpy_fn(a))]
        else:
            out = op.numpy_fn(a, b)
            numeric = [(op.numpy_fn(a + h, b) - op.numpy_fn(a - h, b)) / (2 * h),
                       (op.numpy_fn(a, b + h) - op.numpy_fn(a, b - h)) / (2 * h)]
            analytic = list(op.derivative(a, b, out))
    for n, g in zip(numeric, analytic, strict=True):
        ok = np.isfinite(n) & np.isfinite(g)
        assert ok.sum() >= 30
        np.testing.assert_allclose(g[ok], n[ok], rtol=1e-5, atol=1e-6)


def _program(name: str) -> Expression:
    """``2.5*name(1.3*x0 + 0.2) + 0.7`` (or ``name(1.3*x0 + 0.2, x1 - 0.4)``): constants inside and outside."""
    inner = Expression.combine("add", Expression.combine("mul", Expression.constant(1.3), Expression.variable(0)),
                               Expression.constant(0.2))
    args = [inner] if OPERATORS[name].arity == 1 else [
        inner, Expression.combine("sub", Expression.variable(1), Expression.constant(0.4))]
    return Expression.combine("add", Expression.combine("mul", Expression.constant(2.5), _call(name, *args)),
                              Expression.constant(0.7))


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_the_kernels_value_the_operator_as_numpy_does(name):
    expr = _program(name)
    cols = _rows(seed=2)
    expected = evaluate_columns(expr, cols)
    ops, args = encode(expr)
    value, _ = run_encoded(ops, args, np.array(expr.constants), cols)
    np.testing.assert_allclose(value, expected, rtol=1e-12, equal_nan=True)
    score = score_sum(encode_sum(expr.symbols), expr.constants, cols, np.zeros(cols.shape[1]), False)
    np.testing.assert_allclose(score.values.sum(axis=0), expected, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_the_kernels_jacobian_matches_finite_differences(name):
    expr = _program(name)
    cols = _rows(seed=3)
    cols[0] = np.where(np.abs(1.3 * cols[0] + 0.2) < 0.05, 0.5, cols[0])
    ops, args = encode(expr)
    theta = np.array(expr.constants)
    _, jac = run_encoded(ops, args, theta, cols)
    for q in range(len(theta)):
        step = np.zeros_like(theta)
        step[q] = 1e-6
        up, _ = run_encoded(ops, args, theta + step, cols)
        down, _ = run_encoded(ops, args, theta - step, cols)
        numeric = (up - down) / 2e-6
        ok = np.isfinite(numeric) & np.isfinite(jac[q])
        assert ok.sum() >= 30
        np.testing.assert_allclose(jac[q][ok], numeric[ok], rtol=1e-5, atol=1e-6)


def test_domain_errors_are_non_finite_rows_without_warnings():
    expr = _call("t_pw", Expression.combine("sub", Expression.variable(0), Expression.constant(5.0)),
                 Expression.constant(-1.0))  # |x - 5|**-1: a pole at 5
    cols = np.array([[5.0, 1.0, 3.0]])
    with np.errstate(all="raise"):  # a numpy warning would raise here
        expected = evaluate_columns(expr, cols)
    ops, args = encode(expr)
    value, _ = run_encoded(ops, args, np.array(expr.constants), cols)
    assert np.isinf(expected[0]) and np.isinf(value[0])
    np.testing.assert_allclose(value[1:], [0.25, 0.5])


def test_the_inverse_reaches_the_desired_values_on_the_nearest_branch():
    op = OPERATORS["t_gauss"]
    desired = np.array([0.5, 0.5, 0.2, 2.0])
    current = np.array([-1.0, 1.0, 3.0, 0.0])
    got = op.inverse(desired, current)
    root = math.sqrt(-math.log(0.5))
    np.testing.assert_allclose(got[:2], [-root, root])
    np.testing.assert_allclose(op.numpy_fn(got[:3]), desired[:3])
    assert np.isnan(got[3])  # exp(-x**2) never reaches 2
    hyp = OPERATORS["t_hyp"]
    x = hyp.inverse(0, np.array([5.0, 1.0]), np.array([3.0, 2.0]))
    np.testing.assert_allclose(x[0], 4.0)
    assert np.isnan(x[1])


def test_an_operator_sympy_cannot_invert_is_opaque():
    name = define_operator("t_opaque(x) = x + sin(x)")
    assert OPERATORS[name].inverse is None


def test_transcendental_operators_obey_the_nesting_rule():
    assert OPERATORS["t_gauss"].transcendental and not OPERATORS["t_hyp"].transcendental
    nested = Expression.combine("sin", _call("t_gauss", Expression.variable(0)))
    assert validity_violation(nested) == "nested_transcendental"
    assert validity_violation(Expression.combine("sin", _call("t_hyp", Expression.variable(0),
                                                              Expression.variable(1)))) is None


def test_formulas_print_parse_and_expand():
    expr = parse("2*t_gauss(x0) + t_hyp(x1, x0 - 1)")
    assert parse(expr.format()).symbols == expr.symbols
    assert str(expr.to_sympy()) == "2*t_gauss(x0) + t_hyp(x1, x0 - 1)"
    assert str(expand(expr.to_sympy())) == "sqrt(x1**2 + (x0 - 1)**2) + 2*exp(-x0**2)"
    assert uses_custom(expr.symbols) and not uses_custom(parse("sin(x0)").symbols)
    with pytest.raises(ValueError, match="t_hyp takes 2 argument"):
        parse("t_hyp(x0)")


def test_the_same_definition_again_is_a_no_op_and_another_body_is_refused():
    assert define_operator("t_gauss(z) = exp(-z*z)") == "t_gauss"
    with pytest.raises(ValueError, match="already defined in this process"):
        define_operator("t_gauss(x) = exp(-x**2/2)")


@pytest.mark.parametrize("text, reason", [
    ("g1(x) = exp(-x**2", "SymPy cannot read"),
    ("g1 = exp(-x)", "write it as 'name(x) = expression'"),
    ("sin(x) = x", "'sin' is taken"),
    ("x3(x) = x", "'x3' is taken"),
    ("g1(x) = x + z", "it uses z besides its arguments"),
    ("g1(x) = floor(x)", "dgsr cannot compile floor"),
    ("g1(x, y, z) = x", "one or two arguments"),
    ("g1(x) = x + I", "not a finite real number"),
])
def test_a_malformed_definition_is_one_line_naming_it(text, reason):
    with pytest.raises(ValueError, match="cannot define the operator") as info:
        resolve_operators(unary_operators=[text])
    assert reason in str(info.value) and "\n" not in str(info.value)


def test_resolve_operators_takes_definitions_beside_names():
    allowed = resolve_operators(unary_operators=["sin", DEFINITIONS["t_gauss"][0]],
                                binary_operators=["+", "*", DEFINITIONS["t_hyp"][0]])
    assert set(allowed) == {"sin", "t_gauss", "add", "mul", "t_hyp"}
    with pytest.raises(ValueError, match="not a unary operator"):
        resolve_operators(unary_operators=[DEFINITIONS["t_hyp"][0]])


def test_an_operator_list_splits_outside_parentheses():
    assert split_operator_list("+,*,t_hyp(x, y) = sqrt(x**2 + y**2),sin") == [
        "+", "*", "t_hyp(x, y) = sqrt(x**2 + y**2)", "sin"]


def test_units_flow_through_the_body():
    metre, second = parse_unit("m", "x"), parse_unit("s", "x")
    check = UnitCheck((metre, metre, second), metre)
    assert check.report(parse("t_hyp(x0, x1)")).consistent
    assert not check.report(parse("t_hyp(x0, x2)")).consistent
    assert not check.report(parse("t_gauss(x0)")).consistent  # a transcendental takes a pure number
    assert check.report(parse("x0*t_gauss(x0/x1)")).consistent


def test_parse_definition_keeps_the_users_names():
    definition = parse_definition("t_gauss(width) = exp(-width**2)")
    assert [str(p) for p in definition.parameters] == ["width"]
    assert definition.text == "t_gauss(width) = exp(-width**2)"


def test_simplified_forms_round_trip_through_the_model_files_json():
    expr = sympy.sympify("2.5*t_gauss(1.3*x0) + t_hyp(x1, 2)", locals={"t_gauss": sympy.Function("t_gauss"),
                                                                     "t_hyp": sympy.Function("t_hyp")})
    tree = to_tree(expr)
    assert "Operator" in json.dumps(tree)
    assert from_tree(json.loads(json.dumps(tree))) == expr
    with pytest.raises(ValueError, match="not a user-defined operator"):
        from_tree(["Operator", "t_never_defined", ["Symbol", "x0"]])


# PySR names that other tests expect to be unknown (tanh, abs, pow, ...) are not defined here: a
# name defined in a pytest worker stays defined for the tests that worker runs next.
def test_pysr_names_define_pysr_operators():
    allowed = resolve_operators(unary_operators=["erf", "cube", "relu"], binary_operators=["+", "max"])
    assert set(allowed) == {"erf", "cube", "relu", "add", "max"}
    a, b = np.array([-1.5, 0.5, 2.0]), np.array([1.0, -3.0, 2.5])
    np.testing.assert_allclose(OPERATORS["cube"].numpy_fn(a), a**3)
    np.testing.assert_allclose(OPERATORS["relu"].numpy_fn(a), np.maximum(a, 0.0))
    np.testing.assert_allclose(OPERATORS["max"].numpy_fn(a, b), np.maximum(a, b))
    assert OPERATORS["erf"].sympy_fn is sympy.erf  # SymPy's own function, not a new one of that name
    assert str(parse("erf(x0) + cube(x1)").to_sympy()) == "cube(x1) + erf(x0)"
    with pytest.raises(ValueError, match="not an operator of the expression language"):
        resolve_operators(unary_operators=["not_an_operator"])
