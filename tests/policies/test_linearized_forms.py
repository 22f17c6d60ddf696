"""Powers of ``y`` that are sums of a few products of simple functions (``linearized_operands``):
the law of cosines' ``sqrt(a**2 + b**2 - 2*a*b*cos(t))``, a scattered energy's
``1/(1 + k*(1 - cos(t)))``, and ratios of such sums (``(2 + g)/(1 + 0.15*g*cos(t))``). The
operands are read off exactly, and a law of the family is recovered at a fixed evaluation budget
with them and not without them."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.evaluate import evaluate_columns
from dgsr.core.operators import BINARY, UNARY
from dgsr.policies.semantic.linearized_forms import factored_operands, linearized_operands, power_factors
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.relevance import relevance
from tests.policies.law_families import fit_at_budget

ALL = frozenset(UNARY + BINARY)


def _two_columns(seed: int = 0, n: int = 400) -> np.ndarray:
    """A ratio in [0.2, 5] and an angle in [-3, 3], as rows ``[2, n]``."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.uniform(0.2, 5.0, n), rng.uniform(-3.0, 3.0, n)])


# name: the law of the two columns g = X[0], t = X[1]; each is a power of a sum of at most three
# products of simple functions, the power 1 included.
LAWS = {
    "root of a sum (law of cosines)": lambda X: np.sqrt(1 + X[0] ** 2 - 2 * X[0] * np.cos(X[1])),
    "inverse root of a sum": lambda X: 0.08 / np.sqrt(1 + X[0] ** 2 - 2 * X[0] * np.cos(X[1])),
    "inverse of a sum (scattering)": lambda X: 1 / (1 + X[0] * (1 - np.cos(X[1]))),
    "sum with a root times a cosine (interference)": lambda X: 1 + X[0] + 2 * np.sqrt(X[0]) * np.cos(X[1]),
    "root of squares (an energy)": lambda X: np.sqrt(2.5 * X[0] ** 2 + 1.7 * X[1] ** 2),
    "inverse of reciprocals (Lineweaver-Burk)": lambda X: 3 * X[0] / (2 + X[0]),
}


@pytest.mark.parametrize("name", sorted(LAWS))
def test_each_law_is_read_off_noise_free_data_exactly(name: str) -> None:
    X = _two_columns()
    y = LAWS[name](X)
    found = linearized_operands(X, y, [0, 1], ALL)
    assert found, name
    np.testing.assert_allclose(evaluate_columns(found[0], X), y, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(LAWS))
def test_with_noise_the_operand_is_still_the_law_on_other_rows(name: str) -> None:
    X, other = _two_columns(0), _two_columns(7)
    y = LAWS[name](X)
    noisy = y + 0.01 * np.std(y) * np.random.default_rng(3).normal(size=len(y))
    found = linearized_operands(X, noisy, [0, 1], ALL)
    assert found, name
    truth = LAWS[name](other)
    residual = evaluate_columns(found[0], other) - truth
    assert 1 - np.mean(residual**2) / np.var(truth) >= 0.9999, name


def test_products_many_decades_apart_do_not_hide_the_law() -> None:
    # t reaches 1e-3, so 1/t**4 reaches 1e12 beside cos(t): the selection works on unit columns.
    rng = np.random.default_rng(2)
    X = np.vstack([rng.uniform(0.5, 3, 300), rng.uniform(0, 3, 300)])
    y = X[0] / (1 + 0.4 * X[0] * (1 - np.cos(X[1])))
    found = linearized_operands(X, y, [0, 1], ALL)
    assert found and np.min(X[1]) < 0.01
    np.testing.assert_allclose(evaluate_columns(found[0], X), y, rtol=1e-6)


def test_data_without_such_a_law_give_none() -> None:
    X = _two_columns(1)
    rng = np.random.default_rng(5)
    assert linearized_operands(X, rng.normal(size=X.shape[1]), [0, 1], ALL) == []
    assert linearized_operands(X, np.exp(X[0]) * np.tanh(3 * X[1]), [0, 1], ALL) == []


def test_a_sum_that_only_approximates_the_data_is_not_taken_for_a_law() -> None:
    # g + sqrt(g**2 + 2*g)*cos(t) is no power of a sum of simple products, but three of them
    # (g, sqrt(g)*cos(t), g*cos(t)) leave under 0.1% of its variance: a lure whose error is a
    # smooth function of g and t, not noise.
    rng = np.random.default_rng(0)
    for low, high in [(0.1, 1.0), (0.5, 5.0), (1.0, 10.0)]:
        X = np.vstack([rng.uniform(low, high, 2000), rng.uniform(-2.0, 2.0, 2000)])
        y = X[0] + np.sqrt(X[0] ** 2 + 2 * X[0]) * np.cos(X[1])
        assert linearized_operands(X, y, [0, 1], ALL) == [], (low, high)


# Ratios of such sums: y*(1 + sum b*g) = c0 + sum a*f, linear in its coefficients.
RATIOS = {
    "a cosine over a line": lambda X: (1 + X[0] * np.cos(X[1])) / (1 + 0.5 * X[0]),
    "a line over a cosine": lambda X: (2 + X[0]) / (1 + 0.15 * X[0] * np.cos(X[1])),
}


@pytest.mark.parametrize("name", sorted(RATIOS))
def test_a_ratio_of_sums_is_read_off_with_ratio_terms_and_not_without(name: str) -> None:
    X, other = _two_columns(0), _two_columns(7)
    y, truth = RATIOS[name](X), RATIOS[name](other)
    found = linearized_operands(X, y, [0, 1], ALL)
    assert found and "div" in found[0].symbols, name
    np.testing.assert_allclose(evaluate_columns(found[0], X), y, rtol=1e-6)
    assert not any(np.allclose(evaluate_columns(f, X), y, rtol=1e-3)
                   for f in linearized_operands(X, y, [0, 1], ALL, ratio_terms=False))
    assert all("div" not in f.symbols for f in linearized_operands(X, y, [0, 1], ALL - {"div"}))
    noisy = y + 0.01 * np.std(y) * np.random.default_rng(3).normal(size=len(y))
    found = linearized_operands(X, noisy, [0, 1], ALL)
    assert found, name
    residual = evaluate_columns(found[0], other) - truth
    assert 1 - np.mean(residual**2) / np.var(truth) >= 0.9999, name


def test_a_ratio_whose_constant_does_not_count_is_not_proposed() -> None:
    # With noise, a line is also (c*1e4 + ...)/(1 + 1e4/g): the denominator's 1 is negligible there.
    X = _two_columns(0)
    y = 2 * X[0] + X[1]
    noisy = y + 0.01 * np.std(y) * np.random.default_rng(3).normal(size=len(y))
    found = linearized_operands(X, noisy, [0, 1], ALL)
    assert found and all("div" not in f.symbols for f in found)


def test_a_power_needs_its_operators_and_a_target_of_one_sign() -> None:
    X = _two_columns(2)
    y = LAWS["root of a sum (law of cosines)"](X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing leaks a numpy warning
        assert all("sqrt" not in f.symbols for f in linearized_operands(X, y, [0, 1], ALL - {"sqrt"}))
        # y - 2 changes sign: no power of it is taken, so the root of a sum is not found
        shifted = linearized_operands(X, y - 2.0, [0, 1], ALL)
        assert all("sqrt" not in f.symbols and "inv" not in f.symbols for f in shifted)
        assert linearized_operands(X, np.where(np.arange(X.shape[1]) == 3, np.nan, y), [0, 1], ALL) == []
        assert linearized_operands(X, np.full(X.shape[1], 2.0), [0, 1], ALL) == []
        assert linearized_operands(X, y, [0, 1], ALL - {"mul"}) == []
        assert linearized_operands(X[:, :10], y[:10], [0, 1], ALL) == []


# name: (law, ranges, the size of its simplest form); none is a Feynman problem.
FAMILIES = {
    "scattered energy": (lambda X: X[:, 0] / (1 + 0.4 * X[:, 0] * (1 - np.cos(X[:, 1]))), [(0.5, 3), (0, 3)], 12),
}
BUDGET = 6000


def _fit(name: str, on: bool, noise: float = 0.0) -> tuple[float, int]:
    law, ranges, _ = FAMILIES[name]
    return fit_at_budget(law, ranges, noise, 2, SemanticPolicy(linearized_operands=on), BUDGET)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_recovered_at_a_fixed_budget(name: str) -> None:
    r2, size = _fit(name, on=True)
    assert r2 >= 0.9999 and size <= FAMILIES[name][2] + 2, (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_without_linearized_operands_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, on=False)
    assert not (r2 >= 0.9999 and size <= FAMILIES[name][2] + 2), (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_with_noise_the_family_still_extrapolates(name: str) -> None:
    r2, _ = _fit(name, on=True, noise=0.01)
    assert r2 >= 0.999, (name, r2)


def test_a_ratio_of_sums_is_recovered_at_a_fixed_budget_with_ratio_terms_and_not_without() -> None:
    law, ranges = (lambda X: (2 + X[:, 0]) / (1 + 0.15 * X[:, 0] * np.cos(X[:, 1]))), [(0.5, 5), (0, 3)]
    on = fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(linearized_ratios=True), BUDGET)
    assert on[0] >= 0.9999 and on[1] <= 14, on
    off = fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(linearized_ratios=False), BUDGET)
    assert not (off[0] >= 0.9999 and off[1] <= 14), off
    r2, _ = fit_at_budget(law, ranges, 0.01, 2, SemanticPolicy(linearized_ratios=True), BUDGET)
    assert r2 >= 0.999, r2


def _resultant(seed: int, far: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """The resultant of two forces at an angle, ``sqrt(F1**2 + F2**2 + 2*F1*F2*cos(theta))``:
    forces in [1, 5] N (``far``: [1, 7]), the angle in [0, 3]."""
    rng = np.random.default_rng(seed)
    hi = 7.0 if far else 5.0
    X = pd.DataFrame({"F1": rng.uniform(1, hi, 300), "F2": rng.uniform(1, hi, 300), "theta": rng.uniform(0, 3, 300)})
    return X, np.sqrt(X.F1**2 + X.F2**2 + 2 * X.F1 * X.F2 * np.cos(X.theta)).to_numpy()


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_with_units_the_square_of_a_law_in_its_groups_is_read_off(noise: float) -> None:
    # With units, the search over the groups fits (F/F1)**2 = 1 + g**2 + 2*g*cos(theta), g = F2/F1.
    X, y = _resultant(1)
    y = y * (1 + noise * np.random.default_rng(2).standard_normal(len(y)))
    X_far, y_far = _resultant(5, far=True)

    def extrapolation_r2(on: bool) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = SymbolicRegressor(max_time=None, max_evaluations=3000, random_state=0,
                                    policy=SemanticPolicy(linearized_operands=on))
            est.fit(X, y, X_units=["N", "N", "1"], y_units="N")
        residual = y_far - est.predict(X_far)
        return 1 - float(np.sum(residual**2)) / float(np.sum((y_far - y_far.mean()) ** 2))

    assert extrapolation_r2(True) >= 0.999
    assert extrapolation_r2(False) < 0.99


# Power factors divided out (linearized_factors): y = a**2*b**2/r**2 * f(t), where the sum of
# products alone cannot hold the factors beside f.
def _pattern(seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """An antenna-like pattern ``a**2*b**2*sin(t)**2/r**2`` over rows ``[4, n]`` of (a, b, r, t)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.uniform(1, 3, n), rng.uniform(1, 3, n), rng.uniform(1, 4, n), rng.uniform(0.3, 2.8, n)])
    return X, X[0] ** 2 * X[1] ** 2 * np.sin(X[3]) ** 2 / X[2] ** 2


def test_power_factors_are_read_off_and_a_variable_inside_a_function_is_not_one() -> None:
    X, y = _pattern()
    assert power_factors(X, y, [0, 1, 2, 3]) == {0: 2.0, 1: 2.0, 2: -2.0}
    # a scattering law's (a*b)**2/sin(t/2)**4: t enters through the sine only
    rng = np.random.default_rng(1)
    Z = np.vstack([rng.uniform(1, 2, 300), rng.uniform(1, 2, 300), rng.uniform(1, 3, 300)])
    assert power_factors(Z, (Z[0] * Z[1]) ** 2 / np.sin(Z[2] / 2) ** 4, [0, 1, 2]) == {0: 2.0, 1: 2.0}
    # a column and its reciprocal are one variable: one of them is the factor
    with_reciprocal = np.vstack([X, 1 / X[2]])
    factors = power_factors(with_reciprocal, y, [0, 1, 2, 3, 4])
    assert len(set(factors) & {2, 4}) == 1 and factors.get(2, -factors.get(4, 0.0)) == -2.0
    assert power_factors(X, np.exp(X[0]) * np.sin(X[3]), [0, 1, 2, 3]) == {}


def test_a_law_with_power_factors_is_read_off_divided_by_them_and_not_without() -> None:
    X, y = _pattern()
    found = factored_operands(X, y, [0, 1, 2, 3], ALL)
    assert found
    np.testing.assert_allclose(evaluate_columns(found[0], X), y, rtol=1e-6)
    related = list(np.argsort(-relevance(X, y))[:3])
    assert not any(np.allclose(evaluate_columns(f, X), y, rtol=1e-3) for f in linearized_operands(X, y, related, ALL))
    noisy = y + 0.01 * np.std(y) * np.random.default_rng(3).normal(size=len(y))
    found = factored_operands(X, noisy, [0, 1, 2, 3], ALL)
    other, truth = _pattern(7)
    assert found
    residual = evaluate_columns(found[0], other) - truth
    assert 1 - np.mean(residual**2) / np.var(truth) >= 0.9999


def test_without_a_factor_or_its_operators_none_is_proposed() -> None:
    X = _two_columns()
    y = LAWS["root of a sum (law of cosines)"](X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert factored_operands(X, y, [0, 1], ALL) == []  # g is inside the root, not a factor
        P, law = _pattern()
        assert factored_operands(P, law, [0, 1, 2, 3], ALL - {"sq"}) == []
        assert factored_operands(P, np.where(np.arange(len(law)) == 5, np.inf, law), [0, 1, 2, 3], ALL) == []
        assert factored_operands(P[:, :10], law[:10], [0, 1, 2, 3], ALL) == []


def test_a_law_with_power_factors_is_recovered_at_a_fixed_budget_with_them_and_not_without() -> None:
    law, ranges = (lambda X: X[:, 0] ** 2 * X[:, 1] ** 2 * np.sin(X[:, 3]) ** 2 / X[:, 2] ** 2), \
        [(1, 3), (1, 3), (1, 4), (0.3, 2.8)]
    on = fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(linearized_factors=True), BUDGET)
    assert on[0] >= 0.9999 and on[1] <= 18, on
    off = fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(linearized_factors=False), BUDGET)
    assert not (off[0] >= 0.9999 and off[1] <= 18), off
    r2, _ = fit_at_budget(law, ranges, 0.01, 2, SemanticPolicy(linearized_factors=True), BUDGET)
    assert r2 >= 0.999, r2
