"""``guesses`` (PySR's parameter, issue 50 item 4): formulas in the user's column names, checked at
the start of ``fit``, refitted, in the front, and roots the search starts from and improves on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr import SymbolicRegressor
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.guesses import parse_guesses

TINY = {"max_evaluations": 200, "max_time": None, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 3, 200), "b": rng.uniform(1, 3, 200), "c": rng.uniform(0.5, 2, 200)})
    return df


def _selected_r2(est: SymbolicRegressor) -> float:
    return float(est.equations_["r2"].iloc[est.best_index_])


def test_a_guess_with_wrong_constants_is_refitted_and_selected(data):
    y = 1.7 * data.a * data.b * np.sin(data.c) / (data.a + data.b)
    # Without the linearized operands, whose ratios of sums read this law off alone: the guess's
    # effect is the claim.
    from dgsr.policies.semantic.policy import SemanticPolicy

    cold = SymbolicRegressor(policy=SemanticPolicy(linearized_operands=False), **TINY).fit(data, y)
    assert _selected_r2(cold) < 1 - 1e-6  # the search alone does not find it at this budget
    est = SymbolicRegressor(guesses=["2*a*b*sin(c)/(a+b)"], policy=SemanticPolicy(linearized_operands=False),
                            **TINY).fit(data, y)
    assert _selected_r2(est) > 1 - 1e-12
    np.testing.assert_allclose(est.predict(data), y, rtol=1e-9)
    assert 1.7 in [round(float(f), 6) for f in est.sympy().atoms(sympy.Float)]  # 2 refitted to 1.7


def test_the_search_starts_from_a_guess_and_improves_on_it(data):
    # The guess lacks the 1/2 inside exp (no constant there to refit): only a search from it,
    # not its refit, reaches the law (sqrt of exp halves the exponent).
    y = 2.5 * np.exp(-data.a**2 / (2 * data.c**2)) / data.c
    guess = "exp(-a**2/c**2)/c"
    f = np.exp(-data.a**2 / data.c**2) / data.c  # the guess, with its best scale and offset:
    residual = np.linalg.lstsq(np.column_stack([f, np.ones_like(f)]), y, rcond=None)[1][0]
    assert residual / (len(y) * np.var(y)) > 1e-3  # not the law
    # Without the index's prefactor chains, which find this law (1/c times a curve of a/c) alone
    # within the budget: the guess's effect is the claim.
    from dgsr.policies.semantic.policy import SemanticPolicy

    assert _selected_r2(SymbolicRegressor(policy=SemanticPolicy(index_prefactors=False), **TINY).fit(data, y)) < 1 - 1e-6
    est = SymbolicRegressor(guesses=[guess], policy=SemanticPolicy(index_prefactors=False), **TINY).fit(data, y)
    assert _selected_r2(est) > 1 - 1e-9
    assert "exp" in str(est.sympy()) and "a" in str(est.sympy())


def test_guesses_in_x_names_for_arrays_and_several_guesses(data):
    X = data.to_numpy()
    y = 1.7 * X[:, 0] * X[:, 1] * np.sin(X[:, 2]) / (X[:, 0] + X[:, 1])
    est = SymbolicRegressor(guesses=["x2", "2*x0*x1*sin(x2)/(x0+x1)"], **TINY).fit(X, y)
    assert _selected_r2(est) > 1 - 1e-12


@pytest.mark.parametrize("guess, problem", [
    ("a*d", "unknown variable 'd'"),
    ("a*(b+", "cannot be used"),
    ("sin(a)*b", "'sin'"),
    ("a*b**2", "'sq' (written x**2)"),
])
def test_a_bad_guess_is_one_value_error_before_any_search(data, guess, problem, monkeypatch):
    from dgsr.estimator import regressor

    monkeypatch.setattr(regressor, "fit_front", lambda *a, **k: pytest.fail("searched"))
    est = SymbolicRegressor(guesses=["a*b", guess], operators=["+", "-", "*", "/"], **TINY)
    with pytest.raises(ValueError) as err:
        est.fit(data, data.a * data.b)
    assert f"guess {guess!r}" in str(err.value) and problem in str(err.value)


def test_a_guess_larger_than_max_size_and_a_string_are_refused():
    with pytest.raises(ValueError, match="more than max_size=3"):
        parse_guesses(FitConfig(guesses=["a*b*a"], max_size=3), ["a", "b"])
    with pytest.raises(ValueError, match="list of formula strings"):
        parse_guesses(FitConfig(guesses="a*b"), ["a", "b"])


def test_guesses_round_trip_through_the_model_file(data, tmp_path):
    y = 1.5 * data.a * data.b
    est = SymbolicRegressor(guesses=["a*b"], **TINY).fit(data, y)
    loaded = SymbolicRegressor.from_file(est.save(tmp_path / "model.json"))
    assert loaded.get_params()["guesses"] == ["a*b"]
    np.testing.assert_array_equal(loaded.predict(data), est.predict(data))
