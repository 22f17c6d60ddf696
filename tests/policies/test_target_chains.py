"""Chains fitted to a node's target (issue 47: constants inside a nonlinear factor).

The unit tests check that each shape's constant is read back from a target built with it, and
that only targets that are a function of one variable get fits, within the trial's budget. The
estimator tests check the mechanism where it matters: a law ``x*f(a*x)`` whose inner constant
the chains fitted to ``y`` miss is recovered at a fixed evaluation budget, and not without it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.evaluate import evaluate_columns
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.policies.semantic.target_chains import (
    FIRST_FITS,
    FIT_SHARE,
    ChainMemo,
    expansion_chains,
    one_variable_shares,
    target_chain_operands,
)

ALL = SemanticPolicy().operators


def _x(n: int = 100, seed: int = 0, low: float = 0.5, high: float = 6.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, n)


def _inner_constant(expr, shape: str) -> float:
    """The constant next to the variable in a chain (the rate, the frequency or the shift)."""
    assert expr.symbols[0] == shape, expr.format()
    return expr.constants[0]


@pytest.mark.parametrize("shape, constant, law", [
    ("exp", 0.37, lambda x: 3.0 * np.exp(0.37 * x) - 2.0),
    ("exp", -1.3, lambda x: 0.5 * np.exp(-1.3 * x) + 4.0),
    ("inv", 0.8, lambda x: 2.0 / (x + 0.8) + 1.0),
    ("log", 2.5, lambda x: -np.log(x + 2.5)),
    ("sqrt", 0.2, lambda x: 4.0 * np.sqrt(x + 0.2)),
    ("sin", 1.7, lambda x: 2.0 * np.sin(1.7 * x + 0.4) + 1.0),
])
def test_each_shape_reads_its_constant_back_from_a_target_built_with_it(shape, constant, law):
    x = _x()
    found = target_chain_operands(x[None, :], law(x), np.ones_like(x), 0, ALL)
    best = found[0]
    assert best.symbols[0] == shape, [e.format() for e in found]
    assert _inner_constant(best, shape) == pytest.approx(constant, rel=0.02)


def test_a_sine_also_gets_its_phase():
    x = _x()
    best = target_chain_operands(x[None, :], np.sin(1.7 * x + 0.4), np.ones_like(x), 0, ALL)[0]
    values = evaluate_columns(best, x[None, :])
    assert np.corrcoef(values, np.sin(1.7 * x + 0.4))[0, 1] > 0.999


def test_only_allowed_operators_and_only_good_fits_come_back():
    x = _x()
    target = 3.0 * np.exp(0.37 * x)
    no_exp = target_chain_operands(x[None, :], target, np.ones_like(x), 0, ALL - {"exp"})
    assert all("exp" not in e.symbols for e in no_exp)
    noise = np.random.default_rng(5).normal(size=x.size)
    assert target_chain_operands(x[None, :], noise, np.ones_like(x), 0, ALL) == []


def test_one_variable_share_tells_a_function_of_the_variable_from_one_of_another_and_from_noise():
    rng = np.random.default_rng(1)
    columns = rng.uniform(0.5, 6.0, (2, 100))
    targets = np.vstack([np.exp(0.4 * columns[0]), np.sin(3 * columns[1]), rng.normal(size=100)])
    shares = one_variable_shares(columns, [0, 1], targets, np.ones_like(targets))
    assert shares[0, 0] > 0.99 and shares[1, 1] > 0.95
    assert shares[0, 1] < 0.5 and shares[1, 0] < 0.5
    assert shares[2].max() < 0.5


def test_rows_without_weight_or_value_are_left_out_without_a_warning():
    x = _x()
    target = np.exp(0.4 * x)
    target[::7] = np.nan
    weights = np.where(np.isfinite(target), 1.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shares = one_variable_shares(x[None, :], [0], target[None, :], weights[None, :])
        found = target_chain_operands(x[None, :], target, weights, 0, ALL)
        empty = one_variable_shares(x[None, :], [0], np.full((1, 100), np.nan), np.zeros((1, 100)))
    assert shares[0, 0] > 0.95 and found and empty[0, 0] == 0.0


def test_huge_targets_and_weights_give_no_overflow_warning():
    # Seen on Feynman data: weights and targets near the float limit overflow the fits' sums.
    x = _x()
    target = 1e150 * np.sin(0.9 * x)
    weights = np.full_like(x, 1e160)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = target_chain_operands(x[None, :], target, weights, 0, ALL)
    assert isinstance(found, list)


def test_only_factor_targets_get_fits_and_new_fits_stay_within_the_budget():
    x = _x()
    targets = np.vstack([np.exp(0.4 * x) + k for k in range(40)])  # 40 distinct one-variable targets
    weights = np.ones_like(targets)
    memo = ChainMemo()
    none = expansion_chains(x[None, :], targets, weights, np.zeros(40, bool), [0], ALL, memo)
    assert none == [] and memo.fits == 0
    for k in range(0, 40, 2):
        expansion_chains(x[None, :], targets[k:k + 2], weights[k:k + 2], np.ones(2, bool), [0], ALL, memo)
    assert 0 < memo.fits <= FIRST_FITS + FIT_SHARE * memo.expansions + 1  # checked before each fit
    assert memo.fits < 40
    again = memo.fits
    expansion_chains(x[None, :], targets[:2], weights[:2], np.ones(2, bool), [0], ALL, memo)
    assert memo.fits == again  # the same targets are read from the memo


# ------------------------------------------------------------------ through the estimator

SEEDS = (0, 1, 2)
# Evaluations, the same with and without the mechanism. At 6,000 the Bose law was recovered at 2
# of 3 seeds on one machine and 1 on another (float results differ by CPU); at 10,000 at 3 of 3 (4
# of seeds 0-4) with it and none without.
BUDGET = 10_000


def _damped(x: np.ndarray) -> np.ndarray:  # a gamma-like response, a damped growth
    return 1.5 * x * np.exp(-0.37 * x)


def _bose(x: np.ndarray) -> np.ndarray:  # Planck's and Bose's shape
    return 0.8 * x / (np.exp(0.23 * x) - 1.0)


def _recovered(law, seed: int, target_chains: bool) -> bool:
    """Recovered = predicts beyond the training range as the law does (R² > 1 - 1e-9 there)."""
    x = np.random.default_rng(seed).uniform(0.5, 12.0, 300)
    beyond = np.random.default_rng(seed + 1000).uniform(12.0, 16.0, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pole warning on a wrong candidate is not the point here
        est = SymbolicRegressor(max_evaluations=BUDGET, max_time=None, random_state=seed, verbose=False,
                                target_r2=1 - 1e-12,
                                # power chains take both laws whole: off, to isolate the target chains
                                policy=SemanticPolicy(target_chains=target_chains, power_chains=False)
                                ).fit(x[:, None], law(x))
    pred = est.predict(beyond[:, None])
    assert np.all(np.isfinite(pred))
    return 1 - np.mean((pred - law(beyond)) ** 2) / np.var(law(beyond)) > 1 - 1e-9


@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize("law", [_damped, _bose])
def test_a_law_with_a_constant_inside_a_factor_is_recovered_only_with_target_chains(law):
    on = sum(_recovered(law, seed, True) for seed in SEEDS)
    off = sum(_recovered(law, seed, False) for seed in SEEDS)
    assert on >= 2, f"recovered at {on} of {len(SEEDS)} seeds"
    assert off < on, f"without target chains recovered at {off} of {len(SEEDS)} seeds, as often"
