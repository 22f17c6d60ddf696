"""Chains over the single-index monomial of ``y`` (``index_chains``): a product of powers of
several variables inside one nonlinear part, ``exp(-m*g*x/(kb*T))``, read off the data without
units. Each family is recovered at a fixed evaluation budget with them and is not without them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.power_law import monomial
from dgsr.policies.semantic.single_index import (
    half_integer_exponents,
    index_monomials,
    prefactor_exponents,
    single_index,
)
from tests.policies.law_families import fit_at_budget, law_data

# name: (law, ranges of its variables, the monomial inside its nonlinear part)
FAMILIES = {
    "boltzmann_factor": (lambda X: X[:, 0] * np.exp(-X[:, 1] * X[:, 2] * X[:, 3] / (X[:, 4] * X[:, 5])),
                         [(1, 5)] * 6, {1: 1, 2: 1, 3: 1, 4: -1, 5: -1}),
    "bose_occupancy": (lambda X: 1 / (np.exp(0.7 * X[:, 0] * X[:, 1] ** 2 / (X[:, 2] * X[:, 3])) - 1),
                       [(1, 3)] * 4, {0: 1, 1: 2, 2: -1, 3: -1}),
}
BUDGET = 6000
MAX_SIZE, MIN_EXTRAPOLATION_R2 = 20, 0.9999


def _keys(exponents: dict[int, float]) -> set:
    return {monomial(exponents).key(), monomial({i: -e for i, e in exponents.items()}).key()}


def _fit(name: str, on: bool) -> tuple[float, int]:
    law, ranges, _ = FAMILIES[name]
    return fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(index_chains=on), BUDGET)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_recovered_at_a_fixed_budget(name: str) -> None:
    r2, size = _fit(name, on=True)
    assert r2 >= MIN_EXTRAPOLATION_R2 and size <= MAX_SIZE, (name, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_without_index_chains_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, on=False)
    assert not (r2 >= MIN_EXTRAPOLATION_R2 and size <= MAX_SIZE), (name, r2, size)


# Noise makes the Boltzmann factor's smallest targets change sign: y is then read as is, not in
# log space, and the prefactor's power joins the index. Its noise-free law is the claim.
@pytest.mark.parametrize(("name", "noise"), [("boltzmann_factor", 0.0), ("bose_occupancy", 0.0),
                                             ("bose_occupancy", 0.01), ("bose_occupancy", 0.1)])
def test_the_monomial_inside_the_nonlinear_part_is_found(name: str, noise: float) -> None:
    law, ranges, exponents = FAMILIES[name]
    X, y, _, _ = law_data(law, ranges, noise, 2)
    found = {m.key() for m in index_monomials(X.T, y)}
    assert _keys(exponents) <= found, [str(m) for m in index_monomials(X.T, y)]


def test_a_law_of_one_variable_gets_no_index() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, size=(400, 3))
    assert index_monomials(X.T, np.exp(-0.7 * X[:, 1])) == []


def test_too_few_rows_or_variables_of_one_sign_get_no_index() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 5, size=(20, 3))
    assert index_monomials(X.T, np.exp(-X[:, 0] * X[:, 1])) == []
    X = rng.uniform(-2, 2, size=(300, 2))  # both columns change sign
    assert index_monomials(X.T, np.exp(-X[:, 0] * X[:, 1])) == []


def test_exponents_are_scaled_to_the_nearest_half_integers_with_fewest_halves() -> None:
    np.testing.assert_array_equal(half_integer_exponents(np.array([0.7071, -0.7071])), [1.0, -1.0])
    np.testing.assert_array_equal(half_integer_exponents(np.array([0.894, -0.447])), [2.0, -1.0])
    np.testing.assert_array_equal(half_integer_exponents(np.array([0.6, 0.03, -0.3])), [2.0, 0.0, -1.0])
    np.testing.assert_array_equal(half_integer_exponents(np.array([0.5, 0.75])), [2.0, 3.0])


def test_the_index_is_found_once_per_search_and_not_pickled() -> None:
    law, ranges, _ = FAMILIES["bose_occupancy"]
    X, y, _, _ = law_data(law, ranges, 0.0, 2)
    policy = SemanticPolicy(index_chains=True)
    context = policy.prepare(X, y, np.random.default_rng(0))
    memo = policy.__dict__["_index_fits"]
    assert memo.fits["index"].monomials  # found, and kept for the next trial
    policy.prepare(X, y, np.random.default_rng(1))
    assert policy.__dict__["_index_fits"] is memo and len(memo.fits) == 1
    assert "_index_fits" not in pickle.loads(pickle.dumps(policy)).__dict__
    assert any("exp" in str(e) for e in context.library.expressions)


def test_non_finite_or_constant_data_get_no_index_and_no_warning() -> None:
    import warnings

    rng = np.random.default_rng(2)
    X = rng.uniform(1, 5, size=(200, 3))
    y = np.exp(-X[:, 0] * X[:, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index_monomials(X.T, np.where(np.arange(200) == 7, np.nan, y)) == []
        assert index_monomials(X.T, np.full(200, 2.5)) == []
        wild = X.copy()
        wild[3, 0], wild[5, 1] = np.inf, 0.0  # a column that is not finite, one that reaches zero
        assert all(np.all(np.isfinite(np.asarray(m.constants, dtype=float)))
                   for m in index_monomials(wild.T, y))


# A curve of the index times a power law beside it (index_prefactors): a Planck-type spectrum
# hbar*omega**3/(exp(hbar*omega/(kb*T)) - 1), with its own constant.
PLANCK_TYPE = (lambda X: X[:, 0] * X[:, 1] ** 3 / (np.exp(0.6 * X[:, 0] * X[:, 1] / (X[:, 2] * X[:, 3])) - 1),
               [(1, 3)] * 4)
PLANCK_TYPE_SIZE = 22  # the law's own size


@pytest.mark.parametrize("on", [True, False])
def test_a_curve_of_the_index_times_a_power_law_is_recovered_only_with_the_prefactor(on: bool) -> None:
    law, ranges = PLANCK_TYPE
    r2, size = fit_at_budget(law, ranges, 0.0, 2, SemanticPolicy(index_prefactors=on), BUDGET)
    assert (r2 >= MIN_EXTRAPOLATION_R2 and size <= PLANCK_TYPE_SIZE) is on, (r2, size)


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_the_power_law_beside_the_index_is_read_off_the_data(noise: float) -> None:
    law, ranges = PLANCK_TYPE
    X, y, _, _ = law_data(law, ranges, noise, 2)
    found = single_index(X.T, y)
    # hbar*omega**3/(exp(x) - 1) = kb*T*omega**2 * x/(exp(x) - 1): as simple, so both.
    assert {p.key() for p in found.prefactors} == {monomial({0: 1, 1: 3}).key(), monomial({1: 2, 2: 1, 3: 1}).key()}


def test_the_prefactor_is_the_slopes_less_the_index_trend_rounded() -> None:
    index = np.array([1.0, 1.0, -1.0, -1.0])
    # y = x0*x1 * f(x0*x1/(x2*x3)): the linear part holds the prefactor plus any share of the index.
    for trend in (0.0, 0.37, -1.6):
        found = prefactor_exponents(np.array([1.0, 1.0, 0.0, 0.0]) + trend * index + 0.01, index)
        assert {tuple(p) for p in found} == {(1.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 1.0)}
    # A variable outside the index keeps its own exponent.
    found = prefactor_exponents(np.array([0.8, 0.3, -0.3, 2.0]), np.array([1.0, 1.0, -1.0, 0.0]))
    assert [tuple(p) for p in found] == [(0.5, 0.0, 0.0, 2.0)]
    # Exponents no shift brings near half-integers, and the empty power law, give none.
    assert prefactor_exponents(np.array([0.3, 0.0, 0.0]), np.array([1.0, -1.0, 0.0])) == []
    assert prefactor_exponents(np.array([0.4, 0.4]), np.array([1.0, 1.0])) == []


def test_a_target_that_changes_sign_gets_no_prefactor() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(1, 3, size=(400, 3))
    y = X[:, 0] * np.sin(2 * X[:, 1] / X[:, 2])
    found = single_index(X.T, y)
    assert found is None or found.prefactors == ()


def test_of_two_tied_power_laws_only_the_one_a_chain_completes_gives_operands() -> None:
    # Both power laws are as simple; over the first, y is a chain of the index, 1/(exp(0.6*u) - 1);
    # over the second it is u/(exp(0.6*u) - 1), which no chain is, and its approximations lure.
    from dgsr.policies.semantic.operand_library import build_library

    law, ranges = PLANCK_TYPE
    X, y, _, _ = law_data(law, ranges, 0.0, 2)
    index = monomial({0: 1, 1: 1, 2: -1, 3: -1})
    exact, luring = monomial({0: 1, 1: 3}), monomial({1: 2, 2: 1, 3: 1})
    library = build_library(X.T, y, fit_parametric=True, chain_arguments=[index],
                            chain_prefactors=[luring, exact])
    products = [e for e, p in zip(library.expressions, library.parametric)
                if p and e.symbols[0] == "mul" and e.subtree(1).key() in (exact.key(), luring.key())]
    assert products and all(e.subtree(1).key() == exact.key() for e in products)
    alone = build_library(X.T, y, fit_parametric=True, chain_arguments=[index], chain_prefactors=[luring])
    assert any(p and e.symbols[0] == "mul" and e.subtree(1).key() == luring.key()
               for e, p in zip(alone.expressions, alone.parametric))  # alone, its chains are kept
