"""Ratios of small polynomials read off the data (``rational_operands``): the kinetics whose
constants sit in a denominator, ``V*s/(K + s + s**2/Ki)``. Each family is recovered at a fixed
evaluation budget with them and is not without them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.operators import BINARY, UNARY
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.rational_forms import rational_operands
from tests.policies.law_families import fit_at_budget, law_data

ALL = frozenset(UNARY + BINARY)

# name: (law, ranges, the size of its simplest form)
FAMILIES = {
    "mixed_inhibition": (lambda X: 9.0 * X[:, 0] / (0.8 * (1 + X[:, 1] / 0.3) + X[:, 0] * (1 + X[:, 1] / 1.5)),
                         [(0.1, 10), (0, 2)], 19),
    "uncompetitive_inhibition": (lambda X: 6.3 * X[:, 0] / (0.9 + X[:, 0] * (1 + X[:, 1] / 0.6)), [(0.1, 10), (0, 2)], 15),
    "dual_monod": (lambda X: 0.85 * X[:, 0] / (0.3 + X[:, 0]) * X[:, 1] / (0.05 + X[:, 1]), [(0.05, 5), (0.01, 1)], 19),
}
BUDGET = 6000
MIN_EXTRAPOLATION_R2 = 0.9999


def _fit(name: str, on: bool, noise: float = 0.0) -> tuple[float, int]:
    law, ranges, _ = FAMILIES[name]
    # Without the linearized operands, which read some of these off 1/y (dual Monod) as well.
    policy = SemanticPolicy(rational_operands=on, linearized_operands=False)
    return fit_at_budget(law, ranges, noise, 2, policy, BUDGET)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_recovered_at_a_fixed_budget(name: str) -> None:
    r2, size = _fit(name, on=True)
    assert r2 >= MIN_EXTRAPOLATION_R2 and size <= FAMILIES[name][2] + 2, (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_without_rational_operands_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, on=False)
    assert not (r2 >= MIN_EXTRAPOLATION_R2 and size <= FAMILIES[name][2] + 2), (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_with_noise_the_ratio_still_extrapolates(name: str) -> None:
    r2, _ = _fit(name, on=True, noise=0.01)
    assert r2 >= 0.999, (name, r2)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_ratio_is_read_off_noise_free_data_exactly(name: str) -> None:
    law, ranges, _ = FAMILIES[name]
    X, y, _, _ = law_data(law, ranges, 0.0, 2)
    found = rational_operands(X.T, y, list(range(X.shape[1])), ALL)
    assert found
    values = evaluate_columns(found[0], X.T)
    np.testing.assert_allclose(values, y, rtol=1e-6)


def test_a_law_of_one_variable_is_read_off_exactly() -> None:
    rng = np.random.default_rng(4)
    s = np.exp(rng.uniform(np.log(0.05), np.log(20), size=300))  # log-spaced, as kinetics are sampled
    y = 5.5 * s / (0.3 + s + s**2 / 12.0)
    found = rational_operands(s[None, :], y, [0], ALL)
    np.testing.assert_allclose(evaluate_columns(found[0], s[None, :]), y, rtol=1e-6)


def test_data_that_are_no_ratio_give_none() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, size=(300, 2))
    assert rational_operands(X.T, np.sin(2 * X[:, 0]) + X[:, 1], [0, 1], ALL) == []
    assert rational_operands(X.T, rng.normal(size=300), [0, 1], ALL) == []


def test_no_ratio_has_a_pole_inside_the_data() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(1, 4, size=300)
    # 1/(1 - 0.4*x) fits exactly, but its denominator changes sign between the rows.
    assert rational_operands(x[None, :], 1.0 / (x - 2.5), [0], ALL) == []
    outside = rational_operands(x[None, :], 1.0 / (x - 4.5), [0], ALL)  # the same law, its pole beyond the data
    assert outside and np.allclose(evaluate_columns(outside[0], x[None, :]), 1.0 / (x - 4.5), rtol=1e-6)


def test_non_finite_data_or_missing_operators_give_none_and_no_warning() -> None:
    rng = np.random.default_rng(2)
    X = rng.uniform(0.1, 5, size=(200, 2))
    y = 3 * X[:, 0] / (1 + X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rational_operands(X.T, np.where(np.arange(200) == 3, np.nan, y), [0, 1], ALL) == []
        assert rational_operands(X.T, np.full(200, 1.5), [0, 1], ALL) == []
        assert rational_operands(X.T, y, [0, 1], ALL - {"div"}) == []
        assert rational_operands(X[:10].T, y[:10], [0, 1], ALL) == []
        wild = X.copy()
        wild[4, 1] = np.inf
        assert all(np.all(np.isfinite(evaluate_columns(r, X.T))) for r in rational_operands(wild.T, y, [0, 1], ALL))
