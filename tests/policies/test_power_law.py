"""Power-law operands: monomials read off a log-space regression (Feynman's products of powers)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.evaluate import evaluate_columns
from dgsr.policies.semantic.operand_library import operand_library
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.power_law import (
    fitted_exponents,
    log_design,
    monomial,
    power_law_operands,
    target_monomials,
)

pytestmark = pytest.mark.timeout(120, method="thread")


def _positive(rows: int, features: int, low: float = 1.0, high: float = 5.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, (features, rows))


def _proportional(a: np.ndarray, b: np.ndarray) -> bool:
    ratio = a / b
    return bool(np.ptp(ratio) <= 1e-9 * abs(float(np.mean(ratio))))


def test_the_exponents_of_a_monomial_are_recovered():
    m, q, h, n, eps = X = _positive(100, 5)
    y = -0.125 * m * q**4 / (eps**2 * h**2 * n**2)
    exponents, misfit = fitted_exponents(X, y)
    assert misfit < 1e-9
    assert sorted(exponents) == [0, 1, 2, 3, 4]
    assert [exponents[i] for i in range(5)] == pytest.approx([1, 4, -2, -2, -2], abs=1e-6)
    operands = power_law_operands(X, y)
    assert operands, "no operand for an exact monomial"
    assert _proportional(evaluate_columns(operands[0], X), m * q**4 / (eps**2 * h**2 * n**2))


def test_a_factor_that_changes_sign_does_not_hide_the_monomial():
    # p*cos(t)*sin(t)/(eps*r**3): the trigonometric factor crosses zero at t = pi/2, where
    # log|y| goes to -inf; the variables of the monomial still get their own exponents.
    eps, p, t, r = X = _positive(1000, 4, 1.0, 3.0, seed=1)
    y = p / eps * np.cos(t) * np.sin(t) / r**3
    values = [evaluate_columns(e, X) for e in power_law_operands(X, y)]
    assert any(_proportional(v, p / (eps * r**3)) for v in values)


def test_monomial_builds_whole_and_half_powers():
    x = _positive(50, 3, 0.5, 4.0, seed=2)
    expr = monomial({0: 2.5, 1: -1.0, 2: 0.5})
    with np.errstate(all="raise"):
        expected = x[0] ** 2.5 / x[1] * np.sqrt(x[2])
    assert np.allclose(evaluate_columns(expr, x), expected, rtol=1e-12)
    only_negative = monomial({1: -3.0, 2: -5.0})
    assert np.allclose(evaluate_columns(only_negative, x), 1.0 / (x[1] ** 3 * x[2] ** 5), rtol=1e-12)
    assert monomial({}) is None


def test_columns_that_change_sign_or_data_with_gaps_give_no_operand_and_no_warning():
    rng = np.random.default_rng(3)
    standardised = rng.normal(size=(4, 200))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert power_law_operands(standardised, rng.normal(size=200)) == []
        x = _positive(200, 2, seed=4)
        y = x[0] ** 2 / x[1]
        y[::7] = 0.0
        y[3] = np.nan
        y[5] = np.inf
        operands = power_law_operands(x, y)  # the zeros and non-finite rows are left out
        assert operands and _proportional(evaluate_columns(operands[0], x), x[0] ** 2 / x[1])
        assert power_law_operands(x[:, :4], y[:4]) == []  # too few rows to say anything


def test_the_library_holds_the_monomial_beyond_its_size_limit_unless_turned_off():
    m, q, h, n, eps = X = _positive(300, 5, seed=5)
    y = m * q**4 / (eps**2 * h**2 * n**2)
    truth = power_law_operands(X, y)[0]
    assert truth.size > 6  # larger than any other library operand
    for flag in (True, False):
        policy = SemanticPolicy(power_laws=flag)
        context = policy.prepare(X.T, y, np.random.default_rng(0))
        keys = {e.key() for e in context.library.expressions}
        assert (truth.key() in keys) == flag


def test_operators_left_out_are_respected():
    x = _positive(300, 2, seed=6)
    y = np.sqrt(x[0]) / x[1] ** 3
    policy = SemanticPolicy(operators=["add", "sub", "mul", "div", "sq"])
    context = policy.prepare(x.T, y, np.random.default_rng(0))
    used = {s for e in context.library.expressions for s in e.symbols}
    assert "sqrt" not in used and "inv" not in used


@pytest.mark.parametrize("power_laws", [True, False])
def test_search_recovers_a_product_of_powers_at_a_fixed_budget(power_laws):
    # Feynman III.19.51's shape, -m*q**4/(eps**2*h**2*n**2): exact with power-law operands at
    # 3,000 evaluations; without them the search does not get there at that budget.
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (400, 5))
    m, q, h, n, eps = X.T
    y = -m * q**4 / (eps**2 * h**2 * n**2)
    est = SymbolicRegressor(max_evaluations=3000, max_time=300, random_state=0, verbose=False,
                            policy=SemanticPolicy(power_laws=power_laws))
    est.fit(X, y)
    r2 = est.score(X, y)
    if power_laws:
        assert r2 > 1 - 1e-9
    else:
        assert r2 < 0.999


def test_target_monomials_fit_each_target_and_skip_what_is_no_product_of_powers():
    x = _positive(120, 3, seed=7)
    usable, design = log_design(x)
    assert usable == [0, 1, 2]
    targets = np.stack([2.0 * x[0] ** 2 / x[2], np.sin(3 * x[1]) + 1.5, -x[1] ** 0.5 * x[2] ** 3])
    rows = np.ones_like(targets, dtype=bool)
    rows[0, :10] = False  # rows a target leaves out are not used
    targets[0, :10] = np.nan
    found = target_monomials(usable, design, targets, rows)
    assert _proportional(evaluate_columns(found[0], x), x[0] ** 2 / x[2])
    assert found[1] is None
    assert _proportional(evaluate_columns(found[2], x), np.sqrt(x[1]) * x[2] ** 3)
    assert target_monomials([], None, targets, rows) == [None, None, None]


def test_target_monomials_sharing_rows_match_one_fit_per_target_and_reuse_the_memo():
    # Targets that use the same rows share one least-squares solve: each must still get the
    # monomial its own fit gives (reference: np.linalg.lstsq on that target alone).
    x = _positive(150, 3, seed=11)
    usable, design = log_design(x)
    rng = np.random.default_rng(3)
    laws = [x[0] ** 2 / x[2], x[1] ** -1.5 * x[0], np.cos(x[2]) + 2.0, x[2] ** 3, x[0] * x[1] * x[2], x[1] ** 0.5]
    targets = np.stack([c * law * np.exp(rng.normal(0, 0.01, 150)) for c, law in zip([2, -3, 1, 0.5, 7, 1], laws)])
    rows = np.ones_like(targets, dtype=bool)
    rows[1, 40:60] = False  # a target with rows of its own
    rows[5, :146] = False  # too few rows for a fit
    memo: dict = {}
    found = target_monomials(usable, design, targets, rows, memo)
    for t, expr in enumerate(found):
        ok = rows[t]
        expected = None
        if ok.sum() >= len(usable) + 5:
            coef = np.linalg.lstsq(design[ok], np.log(np.abs(targets[t, ok])), rcond=None)[0][:-1]
            halves = np.round(2 * coef) / 2
            if np.all(np.abs(coef - halves) <= 0.1):
                expected = monomial({i: float(e) for i, e in zip(usable, halves) if e != 0})
        assert (expr is None) == (expected is None), t
        if expr is not None:
            assert expr.key() == expected.key()
    assert [e is not None for e in found] == [True, True, False, True, True, False]
    again = target_monomials(usable, design, targets, rows, memo)
    assert all(a is b for a, b in zip(found, again))  # built once, read from the memo after


def test_operand_library_reads_the_values_memo():
    x = _positive(50, 2, seed=2)
    exprs = [monomial({0: 2.0}), monomial({0: 1.0, 1: -1.0})]
    plain = operand_library(exprs, x)
    memo: dict = {}
    first = operand_library(exprs, x, memo)
    assert len(memo) == 2 and np.array_equal(first.values, plain.values)
    memo[exprs[0].key()] = memo[exprs[0].key()] * 2.0  # a memo entry is what the library uses
    assert np.array_equal(operand_library(exprs, x, memo).values[0], 2.0 * plain.values[0])


def test_laws_that_are_no_product_of_powers_get_no_half_power_lookalike():
    # 1/(1/d1 + n/d2) reads as d1**0.28*d2**0.75/n**0.72 in log space, and m*(u**2 + v**2 + w**2)/2
    # as m*(u*v*w)**0.5: rounded, such exponents made operands that fit well and drew the search
    # away from the law (Feynman I.27.6 and I.13.4 lost their exact recovery to them).
    d1, d2, n = X = _positive(1000, 3, seed=8)
    assert power_law_operands(X, 1 / (1 / d1 + n / d2)) == []
    m, u, v, w = X = _positive(1000, 4, seed=9)
    operands = power_law_operands(X, 0.5 * m * (u**2 + v**2 + w**2))
    assert all("sqrt" not in e.symbols for e in operands)
