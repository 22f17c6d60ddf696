"""The random policy recovers three short physical laws exactly, checked symbolically.

An R² near 1 alone would also accept a good approximation; these tests ask that the selected
expression, with constants rounded to 4 significant digits (negligible ones dropped), is
*equal* to the law as SymPy sees it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(90, method="thread")


def _clean(expr: sympy.Expr, digits: int = 4, negligible: float = 1e-6) -> sympy.Expr:
    """Constants rounded to ``digits`` significant digits and made rational; tiny ones become 0."""
    repl = {}
    for f in expr.atoms(sympy.Float):
        v = float(f)
        repl[f] = sympy.Integer(0) if abs(v) < negligible else sympy.nsimplify(float(f"{v:.{digits}g}"), rational=True)
    return sympy.simplify(expr.xreplace(repl))


def _recover(X: pd.DataFrame, y: np.ndarray, seed: int = 0) -> SymbolicRegressor:
    est = SymbolicRegressor(policy="random", random_state=seed, max_evaluations=60_000, max_time=20,
                            target_r2=1 - 1e-12, model_selection="accuracy")
    return est.fit(X, y)


def _assert_law(est: SymbolicRegressor, law: str) -> None:
    names = {s: sympy.Symbol(s) for s in est.selected_features_}
    truth = sympy.sympify(law, locals=names)  # the law is our own literal text, not user input
    found = _clean(est.sympy())
    assert sympy.simplify(found - truth) == 0, f"found {found} (R² {est.equations_['r2'].max():.6f}), want {truth}"


def test_recovers_potential_energy():
    rng = np.random.default_rng(10)
    X = pd.DataFrame({"m": rng.uniform(1, 10, 200), "g": rng.uniform(9, 11, 200), "z": rng.uniform(1, 5, 200)})
    _assert_law(_recover(X, X["m"] * X["g"] * X["z"]), "m*g*z")


def test_recovers_capacitor_voltage():
    rng = np.random.default_rng(11)
    X = pd.DataFrame({"q": rng.uniform(1, 5, 200), "C": rng.uniform(1, 5, 200)})
    _assert_law(_recover(X, X["q"] / X["C"]), "q/C")


def test_recovers_inverse_square():
    rng = np.random.default_rng(12)
    X = rng.uniform(1, 5, size=(200, 3))
    _assert_law(_recover(X, X[:, 0] * X[:, 1] / X[:, 2] ** 2), "x0*x1/x2**2")
