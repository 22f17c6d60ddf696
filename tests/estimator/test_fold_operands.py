"""The fold searches of the whole-search check refit the search's parametric operands on their
own rows rather than screening every form's starts again (:func:`dgsr.estimator.search_cv.search_operands`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.estimator.fit_config import config_from
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.estimator.search_cv import fold_policy, search_operands
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic import policy as semantic_policy
from dgsr.policies.semantic.operand_library import build_library
from dgsr.policies.semantic.policy import SemanticPolicy

pytestmark = pytest.mark.timeout(300, method="thread")


def _sine(frequency: float, phase: float) -> Expression:
    """``sin(frequency*x0 + phase)``."""
    inner = Expression.combine("add", Expression.combine("mul", Expression.constant(frequency), Expression.variable(0)),
                               Expression.constant(phase))
    return Expression.combine("sin", inner)


def test_a_seeded_library_refits_each_seed_on_its_own_rows_and_screens_nothing():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(200, 2))
    y = 2.0 * np.sin(1.7 * X[:, 0] + 0.4) + X[:, 1]
    seed = _sine(1.55, 0.25)  # near the law, as a fold's search on all rows would hand it over
    library = build_library(as_columns(X), y, fit_parametric=True, seeded=[seed])
    fitted = [e for e, p in zip(library.expressions, library.parametric) if p]
    assert len(fitted) == 1  # only the seed: no form or chain was screened
    assert fitted[0].symbols == seed.symbols
    np.testing.assert_allclose(fitted[0].constants, [1.7, 0.4], atol=1e-3)  # refitted to these rows
    # an empty seed list (a search whose library had no parametric operand) adds none
    empty = build_library(as_columns(X), y, fit_parametric=True, seeded=[])
    assert not empty.parametric.any()
    # without seeds the screening finds the sine itself
    screened = build_library(as_columns(X), y, fit_parametric=True)
    assert screened.parametric.sum() > 1


def test_the_search_operands_do_not_depend_on_what_the_policy_fitted_before():
    # n_jobs must not change a fit (CONTRACTS §4): the operands handed to the folds are built
    # from the data, whether or not this process's policy already fitted them in the search.
    rng = np.random.default_rng(5)
    X = rng.uniform(0.5, 3, size=(400, 3))
    y = np.exp(-0.7 * X[:, 0]) * X[:, 1] + np.sin(2.1 * X[:, 2])
    warm = SemanticPolicy()
    warm.prepare(X, y, np.random.default_rng(11))  # a trial of the search: its fits are memoised
    warm.prepare(X[:300], y[:300], np.random.default_rng(12))  # and others on other rows
    operands = search_operands(warm, X, y, np.random.default_rng(0))
    fresh = search_operands(SemanticPolicy(), X, y, np.random.default_rng(0))
    assert operands and [e.key() for e in operands] == [e.key() for e in fresh]
    assert all(e.n_constants > 0 for e in operands)  # fitted forms, not bare operands
    assert search_operands(RandomPolicy(), X, y, np.random.default_rng(0)) is None
    assert search_operands(SemanticPolicy(parametric_operands=False), X, y, np.random.default_rng(0)) is None


def test_the_fold_policy_carries_the_operands():
    operands = (_sine(1.0, 0.0),)
    policy = fold_policy(config_from(SymbolicRegressor().get_params()), operands)
    assert isinstance(policy, SemanticPolicy) and policy.seeded_operands == operands
    own = SemanticPolicy(n_rows=50)
    copied = fold_policy(config_from(SymbolicRegressor(policy=own).get_params()), operands)
    assert copied.seeded_operands == operands and own.seeded_operands is None
    assert fold_policy(config_from(SymbolicRegressor().get_params())).seeded_operands is None


def _noisy_fit_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(8)
    X = rng.uniform(-2, 2, size=(240, 3))
    y = np.sin(1.3 * (X[:, 0] + 0.5) * (X[:, 1] - 0.2)) + X[:, 2]
    return X, y + 0.05 * rng.normal(size=len(y))


def test_a_fit_hands_its_operands_to_every_fold_search(monkeypatch):
    built = []
    real = semantic_policy.build_library

    def recording(*args, **kwargs):
        built.append(kwargs.get("seeded"))
        return real(*args, **kwargs)

    monkeypatch.setattr(semantic_policy, "build_library", recording)
    X, y = _noisy_fit_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SymbolicRegressor(max_time=None, max_evaluations=8_000, random_state=0).fit(X, y)
    seeded = [s for s in built if s is not None]
    assert len(seeded) >= 5  # one library per fold search at least
    assert all(len(s) > 0 and s == seeded[0] for s in seeded)  # the same operands in every fold
    assert built[0] is None  # the search on all rows screens its own
    assert model.score(X, y) > 0.95


def test_n_jobs_does_not_change_a_fit_whose_folds_are_seeded():
    X, y = _noisy_fit_data()
    fits = []
    for n_jobs in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(SymbolicRegressor(max_time=None, max_evaluations=6_000, random_state=1,
                                          n_jobs=n_jobs).fit(X, y))
    assert fits[0].size_limit_ == fits[1].size_limit_
    assert fits[0].expression_.key() == fits[1].expression_.key()
