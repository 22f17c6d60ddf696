"""The semantic policy: semantic backpropagation, the operand library, and data-aware proposals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy

from dgsr.core.budget import Budget
from dgsr.core.evaluate import as_columns, evaluate
from dgsr.core.expression import Expression
from dgsr.core.kernels import compiler
from dgsr.core.parser import parse
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic.backprop import chain_gradient, desired_values, invert, node_values, parents
from dgsr.policies.semantic.operand_library import build_library
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.mutations import apply_mutation, is_valid

NAMES = ["x0", "x1", "x2", "x3"]
pytestmark = pytest.mark.timeout(120)


def _data(n: int = 200, d: int = 3, low: float = 0.5, high: float = 2.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=(n, d))


def _r2_scaled(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1] ** 2)


# ---------------------------------------------------------------- semantic backpropagation


@pytest.mark.parametrize(
    ("formula", "child", "expected"),
    [
        # expression, which child of the root to invert, desired child values given desired root values D
        ("x0 + x1", 0, lambda D, a, b: D - b),
        ("x0 + x1", 1, lambda D, a, b: D - a),
        ("x0 - x1", 0, lambda D, a, b: D + b),
        ("x0 - x1", 1, lambda D, a, b: a - D),
        ("x0 * x1", 0, lambda D, a, b: D / b),
        ("x0 * x1", 1, lambda D, a, b: D / a),
        ("x0 / x1", 0, lambda D, a, b: D * b),
        ("x0 / x1", 1, lambda D, a, b: a / D),
    ],
)
def test_invert_binary_operators_exactly(formula, child, expected):
    X = _data()
    expr = parse(formula, NAMES[:3])
    values = node_values(expr, as_columns(X))
    D = np.random.default_rng(1).uniform(0.5, 3.0, len(X))
    a, b = values[1], values[expr.children(0)[1]]
    np.testing.assert_allclose(invert(expr.symbols[0], child, D, values, expr, 0), expected(D, a, b), rtol=1e-12)


@pytest.mark.parametrize(
    ("op", "D", "expected"),
    [
        ("inv", [0.5, 2.0, -4.0], [2.0, 0.5, -0.25]),
        ("sqrt", [0.5, 2.0, 3.0], [0.25, 4.0, 9.0]),
        ("exp", [1.0, math.e, math.e**2], [0.0, 1.0, 2.0]),
        ("log", [0.0, 1.0, -1.0], [1.0, math.e, 1 / math.e]),
    ],
)
def test_invert_unary_operators_exactly(op, D, expected):
    expr = Expression.combine(op, Expression.variable(0))
    X = np.array([[1.0], [2.0], [3.0]])
    values = node_values(expr, as_columns(X))
    np.testing.assert_allclose(invert(op, 0, np.array(D), values, expr, 0), expected, rtol=1e-12)


def test_invert_sq_keeps_the_sign_of_the_current_value():
    expr = Expression.combine("sq", Expression.variable(0))
    X = np.array([[-1.0], [2.0], [-3.0]])
    values = node_values(expr, as_columns(X))
    np.testing.assert_allclose(invert("sq", 0, np.array([4.0, 9.0, 1.0]), values, expr, 0), [-2.0, 3.0, -1.0])


def test_invert_sin_takes_the_branch_nearest_the_current_value():
    expr = Expression.combine("sin", Expression.variable(0))
    current = np.array([0.1, 2.8, 2 * math.pi + 0.2])
    values = node_values(expr, as_columns(current[:, None]))
    D = np.sin(current + 0.05)  # the nearest solution is current + 0.05 on every row
    np.testing.assert_allclose(invert("sin", 0, D, values, expr, 0), current + 0.05, atol=1e-9)


def test_non_invertible_rows_are_nan_and_silent():
    expr = Expression.combine("sqrt", Expression.variable(0))
    values = node_values(expr, as_columns(np.array([[1.0], [4.0]])))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = invert("sqrt", 0, np.array([-1.0, 2.0]), values, expr, 0)
        out_sin = invert("sin", 0, np.array([3.0, 0.5]), node_values(Expression.combine("sin", Expression.variable(0)),
                                                                     as_columns(np.array([[1.0], [0.5]]))),
                         Expression.combine("sin", Expression.variable(0)), 0)
    assert np.isnan(out[0]) and out[1] == 4.0
    assert np.isnan(out_sin[0]) and abs(out_sin[1] - math.asin(0.5)) < 1e-12


@pytest.mark.parametrize("formula", [
    "x0 + x1*x2", "x0/(x1 + x2)", "sqrt(x0) * x1 - x2", "exp(x0/x1) + x2", "log(x0 + x1) * x2",
    "sin(x0) / x1", "(x0 - x2)**2 + 1/x1",
])
def test_desired_values_of_an_exact_fit_are_the_current_values(formula):
    """When y is exactly the expression, no node needs to change: desired == current everywhere."""
    X = _data(d=3)
    expr = parse(formula, NAMES[:3])
    values = node_values(expr, as_columns(X))
    y = values[0].copy()
    parent = parents(expr)
    for pos in range(expr.size):
        desired = desired_values(expr, values, y, pos, parent)
        ok = np.isfinite(desired)
        assert ok.mean() > 0.9, (formula, pos)
        np.testing.assert_allclose(desired[ok], values[pos][ok], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("formula", ["x0*sin(x1) + x2", "sqrt(x0)/(x1 - x2**2)", "exp(x0/x1) * log(x2)",
                                     "(x0 + x1)**-1 - tan(x2)", "cos(x0*x1)**2"])
def test_chain_gradient_matches_finite_differences(formula):
    """d(root)/d(node): perturb the node's values by +-h and re-evaluate its ancestors."""
    X = _data(d=3, seed=5)
    expr = parse(formula, NAMES[:3])
    cols = as_columns(X)
    values = node_values(expr, cols)
    parent = parents(expr)
    h = 1e-6
    for pos in range(1, expr.size):
        up, down = (expr.replace_subtree(pos, Expression.combine("add", expr.subtree(pos), Expression.constant(d)))
                    for d in (h, -h))
        numeric = (evaluate(up, X) - evaluate(down, X)) / (2 * h)
        np.testing.assert_allclose(chain_gradient(expr, values, pos, parent), numeric, rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------- the operand library


def test_library_keeps_one_operand_per_distinct_values():
    X = _data(d=2)
    X = np.column_stack([X[:, 0], X[:, 0], X[:, 1]])  # x1 duplicates x0
    lib = build_library(as_columns(X), X[:, 2] * 2)
    keys = [tuple(np.round(v / np.max(np.abs(v)), 9)) for v in lib.values]
    assert len(keys) == len(set(keys))
    used = [e.variables for e in lib.expressions]
    assert frozenset({1}) not in used  # every form of x1 equals the same form of x0
    assert any(e == Expression.variable(0) for e in lib.expressions)
    # x0*x0 and sq(x0) have the same values: only the smaller (sq(x0), 2 nodes) is kept
    squares = [e for e in lib.expressions if np.allclose(evaluate(e, X), X[:, 0] ** 2)]
    assert len(squares) == 1 and squares[0].size == 2


def test_library_operands_are_finite_and_respect_allowed_operators():
    X = np.column_stack([np.linspace(-2, 2, 50), np.linspace(0, 3, 50)])  # zeros and negatives
    lib = build_library(as_columns(X), X[:, 0] + X[:, 1], allowed={"add", "mul", "sq"})
    assert np.all(np.isfinite(lib.values))
    for e in lib.expressions:
        assert set(e.symbols) - {"c", "x0", "x1"} <= {"add", "mul", "sq"}


@pytest.mark.parametrize("law", [
    lambda X: np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)),  # shifted product inside sin
    lambda X: 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2),  # bump: shifted squares under 1/
    lambda X: np.sin(2.1 * X[:, 1] + 0.3),  # a frequency and a phase
])
def test_parametric_operands_fit_laws_with_inner_constants(law):
    # Each law is one parametric form: with fit_parametric the library holds an operand whose
    # values are the law's up to scale and offset; without it, none comes close.
    X = np.random.default_rng(3).uniform(-2, 2, size=(100, 2))
    y = law(X)

    def best_r2(lib) -> float:
        v = lib.values - lib.values.mean(axis=1, keepdims=True)
        yc = y - y.mean()
        r = (v @ yc) / np.sqrt((v * v).sum(axis=1) * (yc @ yc))
        return float(np.max(r * r))

    assert best_r2(build_library(as_columns(X), y, fit_parametric=True)) > 1 - 1e-8
    assert best_r2(build_library(as_columns(X), y)) < 0.999


@pytest.mark.parametrize("law", [
    lambda X: X[:, 0] * X[:, 1] + np.sin((X[:, 0] - 1) * (X[:, 1] - 1)),  # Keijzer-11
    lambda X: 1.35 * X[:, 0] * X[:, 1] + 5.5 * np.sin((X[:, 0] - 1) * (X[:, 1] - 1)),  # Jin-6
])
def test_a_sine_of_a_shifted_product_is_fitted_beside_the_product_itself(law):
    # The product x0*x1 is the first-order part of (x0 - 1)*(x1 - 1); left in the residual while
    # the sine's constants are fitted, it pulled them off the law. Fitted jointly with the pair's
    # product, the library holds the law's sine: with x0*x1, x0 and x1 it explains y exactly.
    X = np.random.default_rng(5).uniform(-3, 3, size=(300, 2))
    y = law(X)
    lib = build_library(as_columns(X), y, fit_parametric=True)
    base = np.column_stack([X, X[:, 0] * X[:, 1], np.ones(len(y))])

    def r2_with_product(values: np.ndarray) -> float:
        design = np.column_stack([values, base])
        resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        return 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())

    best = max(r2_with_product(v) for v, par in zip(lib.values, lib.parametric) if par)
    assert best > 1 - 1e-9


@pytest.mark.parametrize("relevant", [5, 3])
def test_a_bump_in_several_variables_is_a_library_operand(relevant):
    # Vladislavleva-4 (UBall5D), 10/(5 + sum_i (x_i - 3)**2) over 5 variables, and the same over
    # the first 3 of 5 (the other two must fade out of the bump): one operand explains y exactly.
    X = np.random.default_rng(7).uniform(0.05, 6.05, size=(300, 5))
    y = 10 / (5 + ((X[:, :relevant] - 3) ** 2).sum(axis=1))
    lib = build_library(as_columns(X), y, fit_parametric=True)
    yc = y - y.mean()
    v = lib.values - lib.values.mean(axis=1, keepdims=True)
    r2 = (v @ yc) ** 2 / ((v * v).sum(axis=1) * (yc @ yc))
    assert float(np.max(r2[lib.parametric])) > 1 - 1e-9
    without_inv = build_library(as_columns(X), y, fit_parametric=True, allowed={"add", "sub", "mul", "sq"})
    assert all("inv" not in e.symbols for e in without_inv.expressions)


def test_parametric_constants_are_fitted_on_the_rows_given_for_them():
    # fit_rows: the forms are fitted on those rows and valued on the library's own rows.
    rng = np.random.default_rng(6)
    X = rng.uniform(-3, 3, size=(400, 2))
    y = X[:, 0] * X[:, 1] + np.sin((X[:, 0] - 1) * (X[:, 1] - 1))
    few, many = as_columns(X[:60]), (as_columns(X[60:]), y[60:])
    lib = build_library(few, y[:60], fit_parametric=True, fit_rows=many)
    assert lib.values.shape[1] == 60
    sines = [e for e, par in zip(lib.expressions, lib.parametric) if par and e.symbols[0] == "sin"]
    assert any(np.allclose(evaluate(e, X), np.sin((X[:, 0] - 1) * (X[:, 1] - 1)), atol=1e-6) for e in sines)


def test_parametric_operands_respect_allowed_operators():
    X = np.random.default_rng(3).uniform(-2, 2, size=(100, 2))
    y = 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2)
    lib = build_library(as_columns(X), y, allowed={"add", "sub", "mul", "sin"}, fit_parametric=True)
    assert np.all(np.isfinite(lib.values))
    for e in lib.expressions:
        assert set(e.symbols) - {"c", "x0", "x1"} <= {"add", "sub", "mul", "sin"}


# ---------------------------------------------------------------- proposals


def _first_child(policy, X, y, expr, seed=0):
    rng = np.random.default_rng(seed)
    ctx = policy.prepare(X, y, rng)
    proposals = policy.propose(ctx, expr, 16, rng)
    best = max(proposals, key=lambda p: p.prior)
    return apply_mutation(expr, best.mutation), proposals


def test_proposes_the_missing_additive_term_first():
    X = _data(d=3)
    y = X[:, 0] + X[:, 1] ** 2
    child, _ = _first_child(SemanticPolicy(), X, y, Expression.variable(0))
    # the best proposal adds x1**2 (possibly through an equivalent form), which makes the fit exact
    values = np.column_stack([np.ones(len(y)), X[:, 0], evaluate(child, X) - X[:, 0]])
    coef, *_ = np.linalg.lstsq(values, y, rcond=None)
    assert np.allclose(values @ coef, y, atol=1e-9)
    assert 1 in child.variables


def test_proposes_the_missing_divisor_first():
    X = _data(d=3)
    y = X[:, 0] * X[:, 1] / X[:, 2]
    child, _ = _first_child(SemanticPolicy(), X, y, parse("x0*x1", NAMES[:3]))
    assert _r2_scaled(evaluate(child, X), y) > 1 - 1e-12
    assert child.size <= 6


def test_root_proposal_matches_y():
    X = _data(d=3)
    y = 3.0 * np.exp(-X[:, 2])
    child, _ = _first_child(SemanticPolicy(), X, y, Expression.empty())
    assert _r2_scaled(evaluate(child, X), y) > 1 - 1e-9


def test_proposals_are_valid_distinct_and_silent_on_hostile_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) * np.array([1.0, 1e150, 1e-150])
    X[::7, 0] = 0.0
    y = X[:, 0] * 2.0 - 1.0 + rng.normal(size=300) * 1e-3
    policy = SemanticPolicy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctx = policy.prepare(X, y, rng)
        expressions = [Expression.empty(), Expression.variable(0), parse("x0/x1 + log(x2*x2)", NAMES[:3]),
                       parse("sqrt(x0*x0) - exp(x1)", NAMES[:3])]
        for expr in expressions:
            proposals = policy.propose(ctx, expr, 16, rng)
            assert 0 < len(proposals) <= 16
            priors = np.array([p.prior for p in proposals])
            assert np.all(np.isfinite(priors)) and np.all(priors > 0) and abs(priors.sum() - 1) < 1e-9
            children = [apply_mutation(expr, p.mutation) for p in proposals]
            assert all(is_valid(c) for c in children)
            assert len({c.key() for c in children}) == len(children)
            # the child each proposal carries (the search uses it as is) is the mutation's result
            assert [p.child for p in proposals] == children


def test_random_proposals_carry_the_children_they_were_checked_with():
    rng = np.random.default_rng(4)
    policy = RandomPolicy()
    for expr in (Expression.empty(), parse("x0*sin(x1) + 2", NAMES[:3]), parse("exp(x2)/x0", NAMES[:3])):
        proposals = policy.propose(3, expr, 12, rng)
        assert proposals and all(p.child == apply_mutation(expr, p.mutation) for p in proposals)


def test_proposals_are_deterministic_for_a_seed():
    X = _data(d=3)
    y = X[:, 0] / X[:, 1] + np.sin(X[:, 2])
    policy = SemanticPolicy()

    def run(seed):
        rng = np.random.default_rng(seed)
        ctx = policy.prepare(X, y, rng)
        return [(str(p.mutation), p.prior) for p in policy.propose(ctx, parse("x0*x2", NAMES[:3]), 16, rng)]

    assert run(5) == run(5)


def test_proposals_depend_on_the_pairing_of_x_and_y():
    """Shuffling y over the rows (same marginal, same X) changes what is proposed."""
    X = _data(d=3)
    y = X[:, 0] * X[:, 1] / X[:, 2]
    shuffled = np.random.default_rng(0).permutation(y)
    policy = SemanticPolicy(random_share=0.0)

    def top(target):
        rng = np.random.default_rng(0)
        ctx = policy.prepare(X, target, rng)
        return [str(p.mutation) for p in policy.propose(ctx, parse("x0*x1", NAMES[:3]), 8, rng)]

    assert top(y) != top(shuffled)


def test_value_is_nan_so_the_search_uses_accuracy():
    policy = SemanticPolicy()
    X = _data(d=2)
    ctx = policy.prepare(X, X[:, 0], np.random.default_rng(0))
    assert np.all(np.isnan(policy.value(ctx, [Expression.variable(0)])))


def test_recovers_a_law_the_random_policy_misses_at_a_small_budget():
    X = _data(n=300, d=4, seed=2)
    y = X[:, 0] * X[:, 1] / (X[:, 2] * X[:, 3])
    budget = {"max_evaluations": 600, "target_r2": 1 - 1e-12}
    sem = run_search(X, y, SemanticPolicy(), config=SearchConfig(), rng=0, budget=Budget(**budget))
    rnd = run_search(X, y, RandomPolicy(), config=SearchConfig(), rng=0, budget=Budget(**budget))
    assert rnd.best.r2 < 0.99
    exact = [e for e in sem.archive.front() if e.r2 > 1 - 1e-9]
    assert exact
    found = sympy.nsimplify(exact[0].expression.to_sympy(NAMES[:4], digits=6), rational=True, tolerance=1e-6)
    x0, x1, x2, x3 = sympy.symbols(NAMES[:4])
    ratio = sympy.simplify(found / (x0 * x1 / (x2 * x3)))
    assert ratio.free_symbols == set()  # the law itself, up to a constant factor (SRBench's check)


def test_estimator_default_is_the_semantic_policy_and_recovers_a_law():
    import pandas as pd

    from dgsr import SymbolicRegressor

    X = pd.DataFrame(_data(n=300, d=3, seed=4), columns=["m", "v", "r"])
    y = X["m"] * X["v"] ** 2 / X["r"]
    est = SymbolicRegressor(max_time=None, max_evaluations=3000, random_state=0, verbose=False)
    assert est.get_params()["policy"] == "semantic"
    est.fit(X, y)
    m, v, r = sympy.symbols("m v r")
    ratio = sympy.simplify(sympy.nsimplify(est.sympy(), rational=True, tolerance=1e-6) / (m * v**2 / r))
    assert ratio.free_symbols == set()
    assert np.all(np.isfinite(est.predict(X)))


def test_proposals_use_only_allowed_operators():
    X = _data(d=3)
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2])
    policy = SemanticPolicy(operators=["add", "mul", "sq"])
    rng = np.random.default_rng(0)
    ctx = policy.prepare(X, y, rng)
    for expr in (Expression.empty(), Expression.variable(0), parse("x0*x1", NAMES[:3])):
        for p in policy.propose(ctx, expr, 16, rng):
            child = apply_mutation(expr, p.mutation)
            assert set(child.symbols) - {"c", "x0", "x1", "x2"} <= {"add", "mul", "sq"}, str(child)


def test_the_candidates_constants_are_the_weighted_least_squares_ones():
    # at_many against a direct weighted fit of each target by c*B + d (and by c0*B alone).
    from dgsr.policies.semantic.matching import match_operands
    from dgsr.policies.semantic.operand_library import operand_library

    rng = np.random.default_rng(3)
    columns = rng.normal(size=(3, 80))
    lib = operand_library([parse(s) for s in ("x0", "x1", "x0*x1", "sin(x2)", "x2**2")], columns)
    targets = rng.normal(size=(4, 80)) + 2.0 * lib.values[2]
    weights = rng.uniform(0.0, 2.0, size=(4, 80))
    weights[1, :40] = 0.0  # rows left out
    fit = match_operands(targets, weights, lib, 1.0)
    pairs = [(t, j) for t in range(4) for j in range(len(lib))]
    got = fit.at_many(np.array([t for t, _ in pairs]), np.array([j for _, j in pairs]))
    for (t, j), (c, d, c0, sse, sse0, syy) in zip(pairs, got):
        w, y, b = weights[t], targets[t], lib.values[j]
        root = np.sqrt(w)
        (want_c, want_d), *_ = np.linalg.lstsq(np.stack([b, np.ones_like(b)], 1) * root[:, None], y * root, rcond=None)
        want_c0 = float(w * y @ b) / float(w * b @ b)
        assert c == pytest.approx(want_c, rel=1e-7) and d == pytest.approx(want_d, rel=1e-7, abs=1e-9)
        assert c0 == pytest.approx(want_c0, rel=1e-9)
        assert sse == pytest.approx(float(w @ (y - want_c * b - want_d) ** 2), rel=1e-6)
        assert sse0 == pytest.approx(float(w @ (y - want_c0 * b) ** 2), rel=1e-6)
        assert syy == pytest.approx(float(w @ y**2), rel=1e-12)


@pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")
def test_the_compiled_match_table_equals_numpys_bit_for_bit(monkeypatch):
    # Undefined entries too: a constant operand (no spread), a target with under 5 rows weighted,
    # one with no spread, a non-finite target row and a zero denominator.
    from types import SimpleNamespace

    from dgsr.policies.semantic import matching

    rng = np.random.default_rng(5)
    columns = rng.normal(size=(2, 100))
    values = np.vstack([columns, columns[0] * columns[1], np.sin(columns[0]), np.exp(columns[1]), np.full(100, 2.0)])
    lib = SimpleNamespace(values_by_row=np.ascontiguousarray(values.T),  # what the matching reads of a library
                          squares_by_row=np.ascontiguousarray((values**2).T))
    targets = rng.normal(size=(7, 100)) + 3.0 * columns[0]
    targets[1] = 4.0
    targets[2, 10] = np.nan
    weights = rng.uniform(0.0, 2.0, size=(7, 100))
    weights[3, 4:] = 0.0
    denominator = np.array([[1.0], [2.0], [0.5], [1.0], [0.0], [np.inf], [3.0]])
    compiled = matching.match_operands(targets, weights, lib, denominator)
    monkeypatch.setattr(compiler, "AVAILABLE", False)
    reference = matching.match_operands(targets, weights, lib, denominator)
    np.testing.assert_array_equal(compiled.match, reference.match)
    assert np.isneginf(compiled.match[[1, 3]]).all() and np.isfinite(compiled.match[0]).any()
