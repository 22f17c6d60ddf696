"""Synthetic expression generator: shapes, bounds, validity, determinism, canonicaliser."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.core.operators import OPERATORS, TRANSCENDENTAL, arity
from dgsr.core.parser import parse
from dgsr.search.mutations import validity_violation
from dgsr.training.generator import (
    GeneratorConfig,
    Problem,
    acceptable_targets,
    canonicalize,
    random_expression,
    random_problem,
    random_shape,
    random_tree,
    sample_inputs,
    sympy_simplify,
)

pytestmark = pytest.mark.timeout(60, method="thread")


def n_operators(expr: Expression) -> int:
    return sum(1 for s in expr.symbols if s in OPERATORS)


def test_random_shape_reaches_every_shape():
    # unary-binary trees with n internal nodes: the large Schroeder numbers 2, 6, 22, 90
    rng = np.random.default_rng(1)
    reached = [len({tuple(random_shape(rng, n)) for _ in range(3000)}) for n in range(1, 5)]
    assert reached == [2, 6, 22, 90]


def test_random_shape_is_uniform_over_shapes():
    rng = np.random.default_rng(0)
    counts = collections.Counter(tuple(random_shape(rng, 3)) for _ in range(11000))
    assert len(counts) == 22  # every unary-binary shape with 3 internal nodes
    assert min(counts.values()) > 400 and max(counts.values()) < 600  # expected 500 each


@given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, 40), d=st.integers(1, 10))
@settings(max_examples=300, deadline=None)
def test_random_tree_has_exact_operator_count_and_obeys_nesting(seed, n_ops, d):
    rng = np.random.default_rng(seed)
    shape = random_shape(rng, n_ops)
    assert sum(1 for a in shape if a) == n_ops
    assert len(shape) == sum(shape) + 1  # a well-formed tree: nodes = edges + 1
    expr = random_tree(rng, n_ops, d)
    assert n_operators(expr) == n_ops
    assert validity_violation(expr, max_size=10**6) is None
    assert all(v < d for v in expr.variables)


def test_random_tree_can_forbid_transcendental_operators_entirely():
    rng = np.random.default_rng(3)
    config = GeneratorConfig(unary_operators=("sqrt", "inv", "sq"))
    for _ in range(50):
        expr = random_tree(rng, 10, 2, config)
        assert not set(expr.symbols) & TRANSCENDENTAL


@pytest.mark.parametrize("config", [GeneratorConfig(), GeneratorConfig(max_operators=40)])
def test_random_expression_respects_bounds_and_rules(config):
    rng = np.random.default_rng(7)
    for _ in range(300):
        d = int(rng.integers(1, 11))
        expr = random_expression(rng, config, n_variables=d)
        assert validity_violation(expr, max_size=config.max_size) is None
        assert expr.size <= 60
        assert expr.variables and max(expr.variables) < d
        assert n_operators(expr) <= config.max_operators
        assert all(np.isfinite(expr.constants))
        assert canonicalize(expr) == expr  # canonical form is a fixed point


def test_generator_is_deterministic_per_seed():
    def draw(seed):
        rng = np.random.default_rng(seed)
        return [random_problem(rng, n_points=30) for _ in range(20)]

    a, b, c = draw(11), draw(11), draw(12)
    for pa, pb in zip(a, b):
        assert pa.expression == pb.expression
        np.testing.assert_array_equal(pa.X, pb.X)
        np.testing.assert_array_equal(pa.y, pb.y)
    assert [p.expression for p in a] != [p.expression for p in c]


def test_random_problem_targets_are_finite_nonconstant_and_match_expression():
    rng = np.random.default_rng(5)
    dims = set()
    for _ in range(100):
        p = random_problem(rng, n_points=50)
        assert isinstance(p, Problem)
        assert p.X.shape[0] == 50 and 1 <= p.X.shape[1] <= 10
        dims.add(p.X.shape[1])
        assert np.all(np.isfinite(p.y)) and np.ptp(p.y) > 0
        assert np.max(np.abs(p.y)) <= GeneratorConfig().max_abs_value
        np.testing.assert_array_equal(evaluate(p.expression, p.X), p.y)
    assert len(dims) >= 8  # D is drawn over 1..10


@pytest.mark.parametrize("n_points,d", [(1, 1), (7, 3), (500, 10)])
def test_sample_inputs_is_a_standardised_finite_mixture(n_points, d):
    X = sample_inputs(np.random.default_rng(n_points), n_points, d)
    assert X.shape == (n_points, d) and np.all(np.isfinite(X))
    if n_points > 1:
        np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-9)
        np.testing.assert_allclose(X.std(axis=0), 1, atol=1e-9)
    np.testing.assert_array_equal(X, sample_inputs(np.random.default_rng(n_points), n_points, d))


def test_degenerate_requests_fail_clearly():
    with pytest.raises(ValueError):
        sample_inputs(np.random.default_rng(0), 0, 3)
    with pytest.raises(ValueError):
        random_problem(np.random.default_rng(0), n_points=0)
    assert not acceptable_targets(np.array([]))
    assert not acceptable_targets(np.array([1.0, np.nan]))
    assert not acceptable_targets(np.array([1.0, np.inf]))
    assert not acceptable_targets(np.array([1.0, 1e300]))
    assert not acceptable_targets(np.full(5, 2.0))
    assert acceptable_targets(np.array([1.0, 2.0]))


# ---------------------------------------------------------------------------- canonicaliser
@pytest.mark.parametrize(
    "text,expected",
    [
        ("sin(2)*x0", "0.9092974268256817*x0"),
        ("x0 + (x1 - x1)", "x0"),
        ("x0*(sin(x1)/sin(x1))", "x0"),
        ("(x0 + 1)*0", "0"),
        ("inv(inv(x0 + x1))", "x0 + x1"),
        ("sq(sqrt(x0))", "x0"),
        ("inv(x0/x1)", "x1/x0"),
        ("2*(3*x0)", "6*x0"),
        ("(x0 + 2) + 3", "x0 + 5"),
        ("2 + (3 + x0)", "5 + x0"),
        ("x0*2 - x0", "x0*2 - x0"),
    ],
)
def test_canonicalize_rules(text, expected):
    got = canonicalize(parse(text, fold_constants=False))
    assert got == parse(expected, fold_constants=False), str(got)


@pytest.mark.parametrize("text", ["log(0 - 1) + x0", "x0*sqrt(0 - 2)", "x0 + 1/(1 - 1)", "exp(exp(8))*x0"])
def test_canonicalize_rejects_undefined_constants(text):
    assert canonicalize(parse(text, fold_constants=False)) is None


def test_canonicalize_preserves_values_where_defined():
    rng = np.random.default_rng(916)
    lost = total = 0
    for _ in range(400):
        raw = random_tree(rng, int(rng.integers(1, 20)), 3, GeneratorConfig(constant_probability=0.5))
        X = rng.normal(size=(40, 3))
        canon = canonicalize(raw)
        if canon is None:  # a variable-free part is undefined: the raw tree is undefined everywhere
            assert not np.any(np.isfinite(evaluate(raw, X)))
            continue
        assert canon.size <= raw.size
        y_raw, y_canon = evaluate(raw, X), evaluate(canon, X)
        ok = np.isfinite(y_raw) & np.isfinite(y_canon) & (np.abs(y_raw) < 1e12)
        scale = 1 + np.abs(y_raw[ok]).max(initial=0)
        np.testing.assert_allclose(y_canon[ok], y_raw[ok], rtol=1e-6, atol=1e-8 * scale)
        # finite before, not after: only through signed zeros (0/A -> +0 where A < 0, then x/0)
        total += int(np.isfinite(y_raw).sum())
        lost += int((np.isfinite(y_raw) & ~np.isfinite(y_canon)).sum())
    assert total > 5000 and lost <= 0.01 * total


def test_sympy_option_gives_valid_simplified_expressions():
    rng = np.random.default_rng(2)
    config = GeneratorConfig(simplify="sympy", sympy_timeout=2.0, max_operators=8)
    expr = random_expression(rng, config, n_variables=2)
    assert validity_violation(expr) is None and expr.variables
    assert sympy_simplify(parse("x0*x0 + 2*x0*x0"), timeout=2.0) == parse("3*sq(x0)")
    assert all(arity(s) <= 2 for s in expr.symbols)


def test_positive_inputs_option_lets_sqrt_and_log_survive():
    def share(config):
        rng = np.random.default_rng(8)
        problems = [random_problem(rng, config, n_points=30) for _ in range(300)]
        positive = np.mean([bool(np.all(p.X > 0)) for p in problems])
        with_sqrt_log = np.mean([bool({"sqrt", "log"} & set(p.expression.symbols)) for p in problems])
        return positive, with_sqrt_log

    pos0, sl0 = share(GeneratorConfig())
    pos1, sl1 = share(GeneratorConfig(positive_inputs=0.5))
    assert pos0 < 0.05 and 0.35 < pos1 < 0.65
    assert sl1 > 1.5 * sl0
