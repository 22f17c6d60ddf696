"""A power of a chain's argument times the chain (``power_chains``): Planck-type spectra, gamma
responses, Rayleigh densities. Each family is recovered at a fixed evaluation budget with them and
is not without them, and at 1% noise it still extrapolates."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.operators import BINARY, UNARY
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.power_chains import power_chains
from tests.policies.law_families import fit_at_budget, law_data

ALL = frozenset(UNARY + BINARY)

# name: (law, ranges, the size of its simplest form, its power of x)
FAMILIES = {
    "planck_spectrum": (lambda X: 2.1 * X[:, 0] ** 3 / (np.exp(0.7 * X[:, 0]) - 1), [(0.2, 8)], 14, 3),
    "gamma_response": (lambda X: 4.0 * X[:, 0] ** 2 * np.exp(-0.8 * X[:, 0]), [(0.1, 10)], 10, 2),
    "rayleigh_density": (lambda X: 1.5 * X[:, 0] * np.exp(-0.3 * X[:, 0] ** 2), [(0.1, 5)], 11, 1),
}
BUDGET = 6000
MIN_EXTRAPOLATION_R2 = 0.9999


def _fit(name: str, on: bool, noise: float = 0.0) -> tuple[float, int]:
    law, ranges, _, _ = FAMILIES[name]
    return fit_at_budget(law, ranges, noise, 2, SemanticPolicy(power_chains=on), BUDGET)


def _recovered(name: str, r2: float, size: int) -> bool:
    return r2 >= MIN_EXTRAPOLATION_R2 and size <= FAMILIES[name][2] + 2


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_recovered_at_a_fixed_budget(name: str) -> None:
    r2, size = _fit(name, on=True)
    assert _recovered(name, r2, size), (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_without_power_chains_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, on=False)
    assert not _recovered(name, r2, size), (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_with_noise_the_law_still_extrapolates(name: str) -> None:
    r2, size = _fit(name, on=True, noise=0.01)
    assert r2 >= 0.999 and size <= FAMILIES[name][2] + 4, (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_power_and_the_chain_are_read_off_noise_free_data_exactly(name: str) -> None:
    law, ranges, _, power = FAMILIES[name]
    X, y, stretched, truth = law_data(law, ranges, 0.0, 2)
    found = power_chains(0, X.T, y, ALL)
    assert found
    best = found[0]
    # u**k*chain: the power's own node count is 1 (x), 2 (x**2) or 4 (x*x**2)
    assert best.symbols[0] == "mul" and best.subtree(1).size == {1: 1, 2: 2, 3: 4}[power]
    # exact up to its weight and intercept, which the search fits; and so it extrapolates
    slope, intercept = np.polyfit(evaluate_columns(best, X.T), y, 1)
    np.testing.assert_allclose(slope * evaluate_columns(best, X.T) + intercept, y, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(slope * evaluate_columns(best, stretched.T) + intercept, truth, rtol=1e-5, atol=1e-8)


def test_a_chain_alone_a_sine_or_noise_gives_none() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 12.0, size=300)
    assert power_chains(0, x[None, :], 1.0 / (np.exp(0.4 * x) - 1.0), ALL) == []  # the chain explains it
    assert power_chains(0, x[None, :], np.sin(1.3 * x + 0.2), ALL) == []
    assert power_chains(0, x[None, :], rng.normal(size=300), ALL) == []


def test_degenerate_inputs_give_none_and_no_warning() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 4.0, size=200)
    y = x * np.exp(-x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with_zero = x.copy()
        with_zero[7] = 0.0  # a power of it has no finite target there
        assert power_chains(0, with_zero[None, :], y, ALL) == []
        nan_y = y.copy()
        nan_y[3] = np.nan
        assert power_chains(0, x[None, :], nan_y, ALL) == []
        assert power_chains(0, x[None, :], np.full(200, 2.0), ALL) == []
        assert power_chains(0, np.vstack([x, np.full(200, np.inf)]), y, ALL)  # an unused infinite column: no matter
        assert power_chains(1, np.vstack([x, np.full(200, np.inf)]), y, ALL) == []
        assert power_chains(0, x[None, :5], y[:5], ALL) == []  # too few rows
        assert power_chains(0, x[None, :], y, ALL - {"inv"}) == []  # no way to write a negative power
