"""``precision`` of ``sympy`` and ``latex`` is an integer >= 1 (issue 48, item 9): 0 rounded every
constant to 0, -1 and 2.5 failed inside the formatting."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


@pytest.fixture(scope="module")
def est() -> SymbolicRegressor:
    X = np.random.default_rng(0).uniform(1, 3, (60, 1))
    return SymbolicRegressor(policy="random", max_evaluations=2000, max_time=None, random_state=0,
                             model_selection="accuracy").fit(X, 2.37 * X[:, 0] + 1.61)


@pytest.mark.parametrize("method", ["sympy", "latex"])
@pytest.mark.parametrize("precision, error", [(0, ValueError), (-1, ValueError), (2.5, TypeError),
                                              ("3", TypeError), (True, TypeError)])
def test_a_bad_precision_is_one_clear_error(est, method, precision, error):
    with pytest.raises(error, match=r"^precision must be"):
        getattr(est, method)(precision=precision)


def test_a_good_precision_rounds_and_keeps_the_constants(est):
    rounded = est.sympy(precision=2)
    floats = [float(a) for a in rounded.atoms(sympy.Float)]
    assert floats and all(f != 0.0 for f in floats)
    assert est.sympy(precision=np.int64(3)) is not None and est.sympy(precision=None) is not None
    assert "x_{0}" in est.latex(precision=1) or "x0" in est.latex(precision=1)
