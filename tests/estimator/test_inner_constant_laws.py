"""Laws with constants inside nonlinear parts, searched as users run the estimator (issue 25).

The default (inner-constant fits, parametric operands) must recover such a law at a fixed
evaluation budget where 0.2's settings (candidates valued as proposed, no parametric operands)
do not. Recovery is judged on fresh rows, as a user would check it: test R² above 1 - 1e-9.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.policies.semantic.policy import SemanticPolicy

pytestmark = pytest.mark.timeout(300, method="thread")

SEEDS = (0, 1, 2)
BUDGET = 10_000  # evaluations (CONTRACTS §2), the same for both settings


def _sin_shifted_product(X: np.ndarray) -> np.ndarray:
    return 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]


def _inverse_shifted_squares(X: np.ndarray) -> np.ndarray:
    return 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2)


def _damped_cosine(X: np.ndarray) -> np.ndarray:
    return np.exp(-0.8 * X[:, 0]) * np.cos(2.1 * X[:, 1] + 0.3)


def _rows(law, n_inputs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(-2, 2, size=(300, n_inputs))
    return X, law(X)


def _recovered(law, n_inputs: int, seed: int, **settings) -> bool:
    X, y = _rows(law, n_inputs, seed)
    X_test, y_test = _rows(law, n_inputs, seed + 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pole warning on a wrong candidate is not the point here
        est = SymbolicRegressor(max_evaluations=BUDGET, max_time=None, random_state=seed, verbose=False,
                                target_r2=1 - 1e-12, **settings).fit(X, y)
    pred = est.predict(X_test)
    assert np.all(np.isfinite(pred))
    return 1 - np.mean((pred - y_test) ** 2) / np.var(y_test) > 1 - 1e-9


def _test_r2(law, n_inputs: int, seed: int, low: float = -2, high: float = 2, **settings) -> float:
    rows = [np.random.default_rng(s).uniform(low, high, size=(300, n_inputs)) for s in (seed, seed + 1000)]
    (X, X_test), (y, y_test) = rows, [law(r) for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_evaluations=BUDGET, max_time=None, random_state=seed, verbose=False,
                                target_r2=1 - 1e-12, **settings).fit(X, y)
    return 1 - np.mean((est.predict(X_test) - y_test) ** 2) / np.var(y_test)


def _friedman1_standardised(X: np.ndarray) -> np.ndarray:
    """Friedman-1 without noise on inputs standardised as PMLB's fri_c* sets are."""
    U = X / np.sqrt(12.0) + 0.5
    return 10 * np.sin(np.pi * U[:, 0] * U[:, 1]) + 20 * (U[:, 2] - 0.5) ** 2 + 10 * U[:, 3] + 5 * U[:, 4]


def _old_settings() -> dict:
    return {"policy": SemanticPolicy(parametric_operands=False), "inner_fit_steps": 0}


@pytest.mark.parametrize("law, n_inputs", [(_sin_shifted_product, 3), (_inverse_shifted_squares, 2)])
def test_laws_with_inner_constants_are_recovered_where_valuing_as_proposed_is_not(law, n_inputs):
    new = sum(_recovered(law, n_inputs, seed) for seed in SEEDS)
    old = sum(_recovered(law, n_inputs, seed, **_old_settings()) for seed in SEEDS)
    assert new >= 2, f"recovered at {new} of {len(SEEDS)} seeds"
    assert old < new, f"0.2's settings recovered it at {old} of {len(SEEDS)} seeds, as often"


def test_a_law_the_plain_search_already_finds_is_still_found():
    # exp(-0.8*x0)*cos(2.1*x1 + 0.3): the screening found inner fits could lose this one; the
    # default must keep it.
    assert all(_recovered(_damped_cosine, 2, seed) for seed in SEEDS)


@pytest.mark.timeout(600, method="thread")  # four fits of 10,000 evaluations on 5 inputs
def test_friedman1_gets_its_shifted_product_sine_where_valuing_as_proposed_does_not():
    # The sine of a shifted product is what the black-box Friedman sets need (issue 25). Without
    # it the best formula is additive (0.2's settings stopped there, at test R² 0.82-0.87, on
    # the rows of bench/experiments/inner_constants.py); the default must get past that here at
    # every seed, and past 0.2's settings.
    half = np.sqrt(3.0)
    new = [_test_r2(_friedman1_standardised, 5, seed, -half, half) for seed in SEEDS]
    old = _test_r2(_friedman1_standardised, 5, SEEDS[0], -half, half, **_old_settings())
    assert min(new) > 0.88, new
    assert old < new[0], (old, new)


def test_a_sine_of_a_shifted_product_beside_the_product_is_recovered_exactly():
    # Jin-6 (Jin et al. 2019), 1.35*x*y + 5.5*sin((x - 1)*(y - 1)) on [-3, 3]**2: 0.6.0 reached
    # test R² 0.51 at 20,000 evaluations (its parametric sine was fitted with x*y left in the
    # residual, on 100 rows); the default recovers it.
    def jin6(X: np.ndarray) -> np.ndarray:
        return 1.35 * X[:, 0] * X[:, 1] + 5.5 * np.sin((X[:, 0] - 1) * (X[:, 1] - 1))

    assert _test_r2(jin6, 2, 0, -3, 3) > 1 - 1e-9
