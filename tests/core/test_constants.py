import math
import warnings

import numpy as np
import pytest

import dgsr.core.constants as constants_module
from dgsr.core.constants import ConstantFit, fit_constants
from dgsr.core.evaluate import as_columns, evaluate
from dgsr.core.expression import Expression
from dgsr.core.gradients import BINARY_DERIVATIVES, DERIVATIVES, UNARY_DERIVATIVES, value_and_jacobian
from dgsr.core.linear_terms import linear_scaling, scale_expression
from dgsr.core.operators import BINARY, OPERATORS, UNARY
from dgsr.core.parser import parse
from tests.conftest import random_tree

C = Expression.constant
X0, X1 = Expression.variable(0), Expression.variable(1)


def _central_differences(expr: Expression, columns: np.ndarray) -> np.ndarray:
    """Reference Jacobian [n_constants, n_rows] by central differences."""
    theta = np.asarray(expr.constants)
    out = []
    for k in range(len(theta)):
        h = 1e-6 * max(1.0, abs(theta[k]))
        up, down = theta.copy(), theta.copy()
        up[k] += h
        down[k] -= h
        with np.errstate(all="ignore"):
            diff = (evaluate(expr.with_constants(up), columns.T) - evaluate(expr.with_constants(down), columns.T))
        out.append(diff / (2 * h))
    return np.array(out).reshape(len(theta), columns.shape[1])


def _assert_jacobian_matches(expr: Expression, columns: np.ndarray) -> bool:
    value, jac = value_and_jacobian(expr, columns)
    np.testing.assert_allclose(value, evaluate(expr, columns.T), rtol=1e-12, equal_nan=True)
    assert jac.shape == (expr.n_constants, columns.shape[1])
    reference = _central_differences(expr, columns)
    # Compare where the expression is finite and tame (finite differences lose accuracy near poles).
    # The analytic Jacobian may be nan at a finite value only where an intermediate is infinite,
    # e.g. c0/(c1/(x0 - x0)) = 0: a singular point, which the fitter treats as a zero gradient.
    rows = (np.isfinite(value) & (np.abs(value) < 1e3) & np.isfinite(reference).all(axis=0)
            & np.isfinite(jac).all(axis=0))
    if not rows.any():
        return False
    np.testing.assert_allclose(jac[:, rows], reference[:, rows], rtol=1e-4, atol=1e-5)
    return True


def test_every_operator_has_a_derivative():
    assert set(DERIVATIVES) == set(UNARY) | set(BINARY)
    assert set(UNARY_DERIVATIVES) == set(UNARY)
    assert set(BINARY_DERIVATIVES) == set(BINARY)


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_jacobian_matches_finite_differences_per_operator(op):
    # Arguments stay in (0.6, 1.4) on x in [0.5, 1.5]: inside every operator's domain.
    rng = np.random.default_rng(0)
    columns = as_columns(rng.uniform(0.5, 1.5, size=(50, 2)))
    left = Expression.combine("add", Expression.combine("mul", C(0.7), X0), C(0.25))
    if OPERATORS[op].arity == 1:
        expr = Expression.combine(op, left)
    else:
        expr = Expression.combine(op, left, Expression.combine("mul", C(0.6), X1))
    assert _assert_jacobian_matches(expr, columns)


@pytest.mark.timeout(60)
def test_jacobian_matches_finite_differences_on_random_trees(rng):
    columns = as_columns(rng.uniform(0.5, 2.0, size=(40, 3)))
    covered: set[str] = set()
    checked = 0
    for _ in range(400):
        expr = random_tree(rng, 3, int(rng.integers(1, 12)))
        if expr.n_constants == 0:
            continue
        if _assert_jacobian_matches(expr, columns):
            checked += 1
            covered |= {s for s in expr.symbols if s in OPERATORS}
    assert checked > 100
    assert covered == set(UNARY) | set(BINARY)


def test_jacobian_of_constant_only_subtrees_broadcasts():
    # sin(c0) * x0 + c1 * c2: row-constant Jacobians [k, 1] must stack with full-width ones.
    expr = Expression.combine(
        "add", Expression.combine("mul", Expression.combine("sin", C(0.3)), X0), Expression.combine("mul", C(2.0), C(5.0))
    )
    x = np.array([[1.0], [2.0], [3.0]])
    value, jac = value_and_jacobian(expr, as_columns(x))
    np.testing.assert_allclose(value, np.sin(0.3) * x[:, 0] + 10.0)
    np.testing.assert_allclose(jac, [np.cos(0.3) * x[:, 0], [5.0] * 3, [2.0] * 3])


def _data(n_rows: int = 1000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, size=(n_rows, 1))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("method", ["bfgs", "lm"])
@pytest.mark.parametrize(
    "truth, start, expected",
    [
        ("2.5*x0 + 1", "1*x0 + 1", (2.5, 1.0)),
        # Start (1, 1): a user's default guess; both methods reach the global optimum from there.
        ("3*sin(1.5*x0)", "1*sin(1*x0)", (3.0, 1.5)),
    ],
)
def test_recovers_constants(method, truth, start, expected):
    X = _data()
    y = evaluate(parse(truth), X)
    expr = parse(start, fold_constants=False)
    assert expr.constants == (1.0, 1.0)
    fit = fit_constants(expr, as_columns(X), y, method=method, rng=np.random.default_rng(0))
    assert isinstance(fit, ConstantFit)
    assert fit.improved
    assert fit.expression.symbols == expr.symbols
    np.testing.assert_allclose(fit.expression.constants, expected, rtol=1e-4)
    assert fit.r2 > 1 - 1e-8


@pytest.mark.parametrize("method", ["bfgs", "lm"])
def test_evaluations_count_batch_fractions(method, monkeypatch):
    calls = []
    real = constants_module.run_program

    def counting(program, theta, columns, **kwargs):
        calls.append(columns.shape[1])
        return real(program, theta, columns, **kwargs)

    monkeypatch.setattr(constants_module, "run_program", counting)
    X = _data(1000)
    y = evaluate(parse("3*sin(1.5*x0)"), X)
    fit = fit_constants(parse("1*sin(1*x0)", fold_constants=False), as_columns(X), y,
                        method=method, rng=np.random.default_rng(1), batch_size=256)
    assert fit.improved and len(calls) >= 3
    assert set(calls) == {256}
    assert fit.objective_calls == len(calls)
    # Each batch pass counts 256/1000; the final R² on all rows counts 1.
    assert fit.evaluations == pytest.approx(len(calls) * 256 / 1000 + 1)


def test_small_data_counts_whole_passes():
    X = _data(100)
    y = evaluate(parse("2.5*x0 + 1"), X)
    fit = fit_constants(parse("1*x0 + 1"), as_columns(X), y, rng=np.random.default_rng(0))
    assert fit.evaluations == pytest.approx(fit.objective_calls + 1)


def test_no_constants_is_one_evaluation():
    X = _data(200)
    y = 2 * X[:, 0]
    fit = fit_constants(parse("x0 + x0"), as_columns(X), y, rng=np.random.default_rng(0))
    assert fit.evaluations == 1.0 and not fit.improved and fit.r2 == pytest.approx(1.0)


def test_optimal_start_is_returned_unchanged():
    X = _data(500)
    expr = parse("2.5*x0 + 1")
    fit = fit_constants(expr, as_columns(X), evaluate(expr, X), rng=np.random.default_rng(0))
    assert not fit.improved and fit.expression is expr and fit.r2 == 1.0


@pytest.mark.timeout(30)
@pytest.mark.parametrize("method", ["bfgs", "lm"])
def test_time_cap_is_honoured(method):
    # 11 constants on 100k rows against noise: uncapped, each method runs for about 2 s here.
    expr = parse("1.1*sin(0.9*x0) + 0.8*sin(1.3*x1) + 1.2*cos(0.7*x2) + 0.5*exp(0.3*x0)"
                 " + 0.9*sqrt(1.0*x1 + 2.0)", fold_constants=False)
    assert expr.n_constants == 11
    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 2, size=(100_000, 3))
    y = rng.normal(size=100_000)
    fit = fit_constants(expr, as_columns(X), y, method=method, rng=rng, time_limit=0.05,
                        batch_size=100_000, patience=1000, max_iter=10_000)
    assert fit.seconds < 1.0
    assert math.isfinite(fit.r2)


@pytest.mark.parametrize("method", ["bfgs", "lm"])
def test_non_finite_start_returns_gracefully(method):
    X = np.random.default_rng(0).uniform(0.5, 2, size=(300, 1))
    expr = Expression.combine("log", Expression.combine("mul", C(-1.0), X0))  # log of negatives
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_constants(expr, as_columns(X), X[:, 0], method=method, rng=np.random.default_rng(0))
    assert fit.r2 == -math.inf and not fit.improved and fit.expression is expr


@pytest.mark.parametrize("method", ["bfgs", "lm"])
def test_overflowing_region_does_not_warn_or_crash(method):
    X = _data(400)
    y = np.exp(0.5 * X[:, 0])
    expr = Expression.combine("exp", Expression.combine("mul", C(300.0), X0))  # overflows at x > 2.4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_constants(expr, as_columns(X), y, method=method, rng=np.random.default_rng(0))
    assert fit.r2 == -math.inf or math.isfinite(fit.r2)


def test_same_seed_same_result():
    X = _data(2000)
    y = evaluate(parse("3*sin(1.5*x0) + x0"), X)
    start = parse("1*sin(1*x0) + x0", fold_constants=False)
    a, b = (fit_constants(start, as_columns(X), y, rng=np.random.default_rng(7)) for _ in range(2))
    assert a.expression == b.expression and a.evaluations == b.evaluations


def test_linear_scaling_closed_form():
    assert linear_scaling(np.array([0.0, 1, 2, 3]), np.array([1.0, 3, 5, 7])) == pytest.approx((2.0, 1.0))
    # mean(v) = mean(y) = 1; sum dv*dy = 1, sum dv^2 = 2 -> a = 0.5, b = 1 - 0.5 = 0.5
    assert linear_scaling(np.array([0.0, 1, 2]), np.array([0.0, 2, 1])) == pytest.approx((0.5, 0.5))
    assert linear_scaling(np.full(3, 2.0), np.array([1.0, 2, 6])) == pytest.approx((1.0, 1.0))
    assert linear_scaling(np.array([1.0, np.inf]), np.array([1.0, 2.0])) == (1.0, 0.0)


def test_scale_expression():
    expr = parse("sin(x0)")
    scaled = scale_expression(expr, 2.0, -0.5)
    assert scaled.symbols == ("add", "mul", "c", "sin", "x0", "c")
    assert scaled.constants == (2.0, -0.5)
    X = _data(10)
    np.testing.assert_allclose(evaluate(scaled, X), 2.0 * np.sin(X[:, 0]) - 0.5)


def test_unknown_method_is_an_error():
    with pytest.raises(ValueError):
        fit_constants(parse("1*x0"), as_columns(_data(10)), np.zeros(10), method="adam",
                      rng=np.random.default_rng(0))


@pytest.mark.parametrize("method", ["bfgs", "lm"])
def test_fewer_rows_than_constants(method):
    X = np.array([[1.0], [2.0]])
    expr = parse("1*x0 + 1*x0**2 + 1", fold_constants=False)
    assert expr.n_constants == 3
    fit = fit_constants(expr, as_columns(X), np.array([3.0, 5.0]), method=method, rng=np.random.default_rng(0))
    assert fit.improved and fit.r2 == pytest.approx(1.0)



def test_additive_terms_split_sums_and_differences_with_signs():
    from dgsr.core.linear_terms import additive_terms

    names = ["x0", "x1", "x2"]
    expr = parse("x0*x1 - (sin(x2) + 3)", names)
    terms = additive_terms(expr)
    assert [(s, str(t.format(names))) for s, t in terms] == [(1.0, "x0*x1"), (-1.0, "sin(x2)"), (-1.0, "3.0")]
    X = np.random.default_rng(0).uniform(1, 2, size=(20, 3))
    total = sum(s * evaluate(t, X) for s, t in terms)
    np.testing.assert_allclose(total, evaluate(expr, X))
    assert [t.format(names) for _, t in additive_terms(parse("sin(x0 + x1)", names))] == ["sin(x0 + x1)"]


def test_term_weights_are_least_squares_and_rebuild_an_expression():
    from dgsr.core.linear_terms import additive_terms, fit_term_weights, weighted_sum

    names = ["x0", "x1"]
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(100, 2))
    terms = [t for _, t in additive_terms(parse("x0*x1 + cos(x1)", names))]
    values = np.stack([evaluate(t, X) for t in terms])
    y = 2.5 * values[0] - 0.75 * values[1] + 4.0
    weights, intercept, mse = fit_term_weights(values, y)
    np.testing.assert_allclose(weights, [2.5, -0.75], rtol=1e-9)
    assert intercept == pytest.approx(4.0) and mse == pytest.approx(0.0, abs=1e-20)
    rebuilt = weighted_sum(terms, weights, intercept)
    assert rebuilt.size == sum(t.size for t in terms) + 3 * len(terms) + 1
    np.testing.assert_allclose(evaluate(rebuilt, X), y)
    # noisy targets: the residual is what numpy's least squares leaves
    noisy = y + rng.normal(size=100)
    _, _, mse = fit_term_weights(values, noisy)
    design = np.column_stack([values.T, np.ones(100)])
    expected = np.linalg.lstsq(design, noisy, rcond=None)[1][0] / 100
    assert mse == pytest.approx(expected, rel=1e-8)
    assert fit_term_weights(np.array([[1.0, np.inf], [0.0, 1.0]]), np.array([1.0, 2.0])) is None


def test_an_evaluation_cap_bounds_what_a_fit_spends():
    names = ["x0"]
    X = np.random.default_rng(3).uniform(0.5, 2, size=(64, 1))
    y = 2.0 * np.exp(0.7 * X[:, 0]) + 0.3
    expr = parse("1.0*exp(1.0*x0) + 0.5", names)
    free = fit_constants(expr, as_columns(X), y, rng=np.random.default_rng(0), batch_size=64)
    assert free.evaluations > 6
    for cap in (2.0, 5.0, 6.5):
        capped = fit_constants(expr, as_columns(X), y, rng=np.random.default_rng(0), batch_size=64,
                               max_evaluations=cap)
        assert capped.evaluations <= cap
        assert capped.r2 <= free.r2 + 1e-12


def test_weighted_sum_is_the_nested_tree_of_products_and_sums():
    from dgsr.core.linear_terms import weighted_sum

    names = ["x0", "x1", "x2"]
    terms = [parse(text, names) for text in ("x0*x1", "sin(2.0*x2 + 1.5)", "x1")]
    built = weighted_sum(terms, np.array([0.5, -3.0, 7.0]), 1.25)
    # add(add(add(mul(w0, t0), mul(w1, t1)), mul(w2, t2)), b), written out by hand
    expected = parse("0.5*(x0*x1) + (-3.0)*sin(2.0*x2 + 1.5) + 7.0*x1 + 1.25", names)
    assert built.symbols == expected.symbols and built.constants == expected.constants
    single = weighted_sum([terms[0]], np.array([2.0]), -1.0)
    assert single.format(names) == "2.0*(x0*x1) + (-1.0)"
    with pytest.raises(ValueError):
        weighted_sum([], np.array([]), 0.0)


def test_additive_terms_of_random_trees_rebuild_the_tree_and_know_their_variables(rng):
    from dgsr.core.linear_terms import additive_terms

    X = rng.uniform(0.5, 2.0, size=(30, 4))
    for _ in range(200):
        expr = random_tree(rng, 4, int(rng.integers(1, 6)))
        if rng.random() < 0.6:  # sums and differences at the top, nested
            expr = Expression.combine(("add", "sub")[int(rng.integers(2))], expr, random_tree(rng, 4, 2))
        terms = additive_terms(expr)
        again = additive_terms(expr.with_constants([c + 1.0 for c in expr.constants]))  # same structure
        for (_, t), (_, u) in zip(terms, again):
            assert t.symbols == u.symbols and u.constants == tuple(c + 1.0 for c in t.constants)
        for _, t in terms:  # the variables the memo hands over are the ones the term has
            fresh = Expression(t.symbols, t.constants)
            assert t.variables == fresh.variables
        with np.errstate(all="ignore"):
            total = sum(s * evaluate(t, X) for s, t in terms)
            whole = evaluate(expr, X)
        finite = np.isfinite(whole) & np.isfinite(total)
        np.testing.assert_allclose(total[finite], whole[finite], rtol=1e-9, atol=1e-9)
