"""Chains over ratios and products of variables (``ratio_chains``): the arguments that laws put
inside a logarithm, a wave or an exponential (``log(V2/V1)``, ``sin(k*x/L)``), read off the data
without units. Each family is recovered at a fixed evaluation budget with them and is not
without them."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.policies.semantic.operand_forms import ratios_and_products
from dgsr.policies.semantic.operand_library import build_library
from dgsr.policies.semantic.policy import SemanticPolicy
from tests.policies.law_families import fit_at_budget

# name: (law, ranges of its variables); each law's nonlinear part takes a ratio or a product.
FAMILIES = {
    "log_of_a_ratio": (lambda X: 1.3 * X[:, 2] * np.log(X[:, 0] / X[:, 1]), [(1, 5), (1, 5), (1, 3)]),
    "log_of_a_shifted_product": (lambda X: 1.7 * np.log(1 + 0.8 * X[:, 0] * X[:, 1]), [(0.5, 4), (0.5, 3)]),
    "wave_of_a_ratio": (lambda X: X[:, 2] * np.sin(2.0 * X[:, 0] / X[:, 1]), [(0.5, 4), (1, 3), (1, 2)]),
}
BUDGET = 6000
MAX_SIZE, MIN_EXTRAPOLATION_R2 = 16, 0.9999


def _fit(name: str, noise: float, on: bool) -> tuple[float, int]:
    law, ranges = FAMILIES[name]
    # The single index takes the place of the ratios where it finds one (and recovers the shifted
    # product and the wave without them): off, to measure the ratios alone.
    return fit_at_budget(law, ranges, noise, 2, SemanticPolicy(ratio_chains=on, index_chains=False), BUDGET)


@pytest.mark.parametrize("noise", [0.0, 0.01])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_recovered_at_a_fixed_budget(name: str, noise: float) -> None:
    r2, size = _fit(name, noise, on=True)
    assert r2 >= MIN_EXTRAPOLATION_R2 and size <= MAX_SIZE, (name, noise, r2, size)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_without_ratio_chains_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, 0.0, on=False)
    assert not (r2 >= MIN_EXTRAPOLATION_R2 and size <= MAX_SIZE), (name, r2, size)


def test_ratios_and_products_of_each_pair_with_the_allowed_operators() -> None:
    everything = frozenset({"add", "sub", "mul", "div"})
    assert [str(e) for e in ratios_and_products([2, 0], everything)] == ["x0/x2", "x0*x2"]
    assert len(ratios_and_products([0, 1, 2], everything)) == 6
    assert [str(e) for e in ratios_and_products([0, 1], frozenset({"add", "mul"}))] == ["x0*x1"]


def test_the_library_takes_a_chain_over_the_ratio_only_when_asked() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, size=(300, 3))
    y = np.log(X[:, 0] / X[:, 1]) * 2.0 + 0.1 * X[:, 2]

    def over_the_ratio(ratio_chains: bool) -> list[str]:
        library = build_library(X.T, y, fit_parametric=True, ratio_chains=ratio_chains)
        return [str(e) for e in library.expressions if "x0/x1" in str(e) and "log" in str(e)]

    assert over_the_ratio(True) and not over_the_ratio(False)
