"""Sums of two terms of one kind, by one mechanism: pairs of chains fitted together.

Two exponential decays, an attractive and a repulsive power, two frequencies, an anodic and a
cathodic exponential: each term's constants depend on what the other leaves, so a library of
single terms fitted to ``y`` alone holds neither (:func:`dgsr.policies.semantic.parametric_forms.chain_pair`).
Each family here (constants of our own, none from a benchmark) is recovered at a fixed
evaluation budget with the pairs on (``SemanticPolicy(chain_pairs=True)``; off by default:
docs/decisions/2026-11-28-chain-pairs.md), and not with them off.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import r2_score

from dgsr import SymbolicRegressor
from dgsr.policies.semantic.parametric_forms import best_chains
from dgsr.policies.semantic.policy import SemanticPolicy

FAMILIES = {
    "two_decays": (lambda x: 3.1 * np.exp(-0.37 * x) + 1.4 * np.exp(-2.9 * x), (0.0, 8.0)),
    "rising_and_falling_exponentials": (lambda x: 0.8 * (np.exp(1.3 * x) - np.exp(-2.1 * x)), (-1.5, 1.5)),
    "repulsive_and_attractive_powers": (lambda x: 2.0 * ((1.1 / x) ** 9 - (1.1 / x) ** 5), (0.95, 3.0)),
    "two_frequencies": (lambda x: 1.7 * np.sin(1.3 * x) + 0.9 * np.sin(3.7 * x + 0.4), (0.0, 10.0)),
}
BUDGET = 4000
#: Recovered, as issue 47 counts it: R² of at least 0.999 on a box stretched beyond the training range.
MAX_SIZE, MIN_EXTRAPOLATION_R2 = 20, 0.999
ALL_OPERATORS = ["add", "sub", "mul", "div", "exp", "sin", "log", "sqrt", "inv", "sq", "cos", "tan"]


def _data(name: str, noise: float) -> tuple:
    law, (lo, hi) = FAMILIES[name]
    rng = np.random.default_rng(5)
    # Noisy data on more rows than the estimator cross-validates its search on (cv_max_rows): on
    # fewer, the fold searches, which run without chains, bound the formula's size.
    x = lo + rng.random(300 if noise == 0 else 1500) * (hi - lo)
    y = law(x)
    y = y + noise * np.sqrt(np.mean(y**2)) * rng.normal(size=len(y))
    stretched = lo - 0.1 * (hi - lo) + rng.random(1000) * 1.2 * (hi - lo)
    stretched = np.maximum(stretched, 0.9 * lo) if lo > 0 else stretched  # a power's base stays positive
    return x[:, None], y, stretched[:, None], law(stretched)


def _fit(name: str, noise: float, pairs: bool) -> tuple[float, int]:
    X, y, stretched, truth = _data(name, noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_time=None, max_evaluations=BUDGET, random_state=0,
                                policy=SemanticPolicy(chain_pairs=pairs)).fit(X, y)
        with np.errstate(all="ignore"):
            r2 = r2_score(truth, np.nan_to_num(est.predict(stretched), posinf=1e300, neginf=-1e300))
    return r2, int(est.equations_.iloc[est.best_index_]["complexity"])


@pytest.mark.timeout(240)
@pytest.mark.parametrize("noise", [0.0, 0.01])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_sum_of_two_terms_is_recovered_at_a_fixed_budget(name: str, noise: float) -> None:
    r2, size = _fit(name, noise, pairs=True)
    assert r2 >= MIN_EXTRAPOLATION_R2 and size <= MAX_SIZE, (name, noise, r2, size)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", list(FAMILIES))
def test_without_the_pairs_the_same_budget_does_not_recover_it(name: str) -> None:
    r2, size = _fit(name, 0.0, pairs=False)
    assert r2 < MIN_EXTRAPOLATION_R2 or size > MAX_SIZE, (name, r2, size)


def test_the_pair_terms_carry_the_laws_own_constants() -> None:
    x = np.random.default_rng(2).uniform(0.0, 8.0, 300)
    y = 3.1 * np.exp(-0.37 * x) + 1.4 * np.exp(-2.9 * x)
    terms = best_chains([0], x[None, :], y, ALL_OPERATORS, [], 4, {}, pairs=True)
    rates = sorted(t.constants[0] for t in terms if t.symbols[:3] == ("exp", "add", "mul") and t.size == 6)
    assert any(r == pytest.approx(-2.9, rel=1e-4) for r in rates), rates
    assert any(r == pytest.approx(-0.37, rel=1e-4) for r in rates), rates
    assert len(best_chains([0], x[None, :], y, ALL_OPERATORS, [], 4, {})) < len(terms)


def test_noise_gets_no_pair() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(0.0, 8.0, 300)
    y = 2.0 * np.exp(-0.5 * x) + 0.05 * rng.normal(size=300)  # one decay: a second term only fits noise
    with_pairs = best_chains([0], x[None, :], y, ALL_OPERATORS, [], 4, {}, pairs=True)
    without = best_chains([0], x[None, :], y, ALL_OPERATORS, [], 4, {})
    assert [t.key() for t in with_pairs] == [t.key() for t in without]
