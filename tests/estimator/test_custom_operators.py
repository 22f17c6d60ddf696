"""User-defined operators through the estimator (issue 50 item 1): fit, predict, ``equations_``,
``sympy()`` (named, or expanded on request), exports, the rules on formulas, ``n_jobs``, and a
pickle and a model file read in a fresh process, which knows only Table 1 until it reads them."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.special
import sympy

from dgsr import SymbolicRegressor
from dgsr.core.expression import Expression
from dgsr.core.formula_rules import formula_rules
from dgsr.core.operators import OPERATORS
from dgsr.policies.semantic.policy import SemanticPolicy
from tests.cli.dgsr_process import dgsr_env

pytestmark = pytest.mark.timeout(300, method="thread")

GAUSS = "e_gauss(x) = exp(-x**2)"
HYP = "e_hyp(x, y) = sqrt(x**2 + y**2)"
ARITHMETIC = ["+", "-", "*", "/"]


def _gauss_data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(n, 2))
    return X, 2.0 * np.exp(-(1.3 * X[:, 0]) ** 2) + X[:, 1]


@pytest.fixture(scope="module")
def gauss_fit():
    X, y = _gauss_data()
    est = SymbolicRegressor(max_evaluations=6000, max_time=None, random_state=0, unary_operators=[GAUSS],
                            binary_operators=ARITHMETIC)
    return est.fit(X, y), X, y


def test_a_law_written_with_the_operator_is_recovered(gauss_fit):
    est, X, y = gauss_fit
    assert est.score(X, y) > 0.99999
    assert "e_gauss" in est.expression_.symbols  # Table 1's exp is not allowed here: only the user's operator
    assert "e_gauss(" in est.equations_["equation"].iloc[est.best_index_]
    named = est.sympy(precision=3)
    assert str(named) in ("x1 + 2*e_gauss(1.3*x0)", "x1 + 2.0*e_gauss(1.3*x0)")
    x0, x1 = sympy.symbols("x0 x1")
    expanded = est.sympy(expand_operators=True)
    assert not expanded.atoms(sympy.core.function.AppliedUndef) and expanded.atoms(sympy.exp)
    np.testing.assert_allclose(sympy.lambdify((x0, x1), expanded)(X[:, 0], X[:, 1]), y, rtol=1e-6, atol=1e-6)
    assert "e_{gauss}" in est.latex() or "e_gauss" in est.latex()


def test_predictions_and_exports_agree(gauss_fit):
    est, X, y = gauss_fit
    np.testing.assert_allclose(est.predict(X), y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(est.to_numpy()(X), est.predict(X), rtol=1e-12)


_RELOAD = """
import pickle, sys
import numpy as np
from dgsr import SymbolicRegressor
X = np.load(sys.argv[1])
for name, est in (("json", SymbolicRegressor.from_file(sys.argv[2])), ("pkl", pickle.load(open(sys.argv[3], "rb")))):
    np.save(sys.argv[4] + name + ".npy", est.predict(X))
    print(name, est.sympy(), est.sympy(expand_operators=True))
"""


def _reloaded_in_a_fresh_process(est: SymbolicRegressor, X: np.ndarray, tmp_path) -> str:
    """Save ``est`` as a model file and a pickle, read both in a fresh process, check that they
    predict ``X`` as ``est`` does (bit for bit), and return what that process printed."""
    np.save(tmp_path / "X.npy", X)
    est.save(tmp_path / "model.json")
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(est))
    run = subprocess.run([sys.executable, "-c", _RELOAD, str(tmp_path / "X.npy"), str(tmp_path / "model.json"),
                          str(tmp_path / "model.pkl"), str(tmp_path / "pred_")],
                         capture_output=True, text=True, env=dgsr_env(), timeout=240, check=False)
    assert run.returncode == 0, run.stderr
    for name in ("json", "pkl"):
        assert np.load(tmp_path / f"pred_{name}.npy").tobytes() == est.predict(X).tobytes(), name
    return run.stdout


def test_pickle_and_model_file_are_read_in_a_fresh_process(gauss_fit, tmp_path):
    est, X, _ = gauss_fit
    printed = _reloaded_in_a_fresh_process(est, X, tmp_path)
    rows = json.loads((tmp_path / "model.json").read_text())["front"]
    assert all(r["sympy"] is not None for r in rows)  # simplified forms kept, user operators included
    assert any("Operator" in json.dumps(r["sympy"]) for r in rows)
    for name in ("json", "pkl"):
        assert f"{name} {est.sympy()} {est.sympy(expand_operators=True)}" in printed


def test_a_binary_operator_in_worker_processes():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2.0, 2.0, size=(300, 2))
    y = 1.3 * np.sqrt(X[:, 0] ** 2 + (X[:, 1] + 0.5) ** 2)
    est = SymbolicRegressor(max_evaluations=6000, max_time=None, random_state=0, n_jobs=2,
                            binary_operators=[*ARITHMETIC, HYP]).fit(X, y)
    assert est.score(X, y) > 0.99999
    assert "e_hyp" in est.expression_.symbols


def test_the_rules_on_formulas_name_the_operator():
    X, y = _gauss_data(seed=2)
    params = {"complexity_of_operators": {"e_gauss": 4}, "nested_constraints": {"e_gauss": {"e_gauss": 0}}}
    est = SymbolicRegressor(max_evaluations=3000, max_time=None, random_state=1, unary_operators=[GAUSS],
                            binary_operators=ARITHMETIC, **params).fit(X, y)
    rules = formula_rules(est.get_params())
    assert all(rules.violation(e) is None for e in est.expressions_)
    with_gauss = [i for i, e in enumerate(est.expressions_) if "e_gauss" in e.symbols]
    assert with_gauss
    for i in with_gauss:  # each e_gauss node counts 4 in the complexity column
        e = est.expressions_[i]
        assert est.equations_["complexity"].iloc[i] == e.size + 3 * e.symbols.count("e_gauss")


def test_the_semantic_policy_proposes_the_operator_where_the_data_asks_for_it():
    X, y = _gauss_data(seed=3)
    y = np.exp(-X[:, 0] ** 2)
    policy = SemanticPolicy(operators=[GAUSS, *ARITHMETIC], random_share=0.0)
    rng = np.random.default_rng(0)
    context = policy.prepare(X, y, rng)
    proposals = policy.propose(context, Expression.variable(0), 8, rng)
    assert any(p.mutation.op == "e_gauss" for p in proposals)


def test_an_operator_without_an_inverse_is_still_proposed():
    name = "e_opaque(x) = x + sin(x)"
    X = np.random.default_rng(4).uniform(-3.0, 3.0, size=(200, 2))
    policy = SemanticPolicy(operators=[name, *ARITHMETIC], random_share=0.0)
    rng = np.random.default_rng(0)
    context = policy.prepare(X, X[:, 0] + np.sin(X[:, 0]), rng)
    assert OPERATORS["e_opaque"].inverse is None  # SymPy's solve finds no inverse of x + sin(x)
    proposals = policy.propose(context, Expression.variable(0), 8, rng)
    assert proposals[0].mutation.op == "e_opaque"


def test_a_guess_may_use_the_operator():
    X, y = _gauss_data(n=200, seed=5)
    est = SymbolicRegressor(max_evaluations=300, max_time=None, random_state=0, unary_operators=[GAUSS],
                            binary_operators=ARITHMETIC, guesses=["2*e_gauss(x0) + x1"]).fit(X, y)
    assert str(est.sympy(precision=4)) == "x1 + 2*e_gauss(1.3*x0)"


def test_the_neural_policy_refuses_it_in_one_line():
    X, y = _gauss_data(n=40)
    with pytest.raises(ValueError, match="the neural policy's vocabulary holds the operators of Table 1 only"):
        SymbolicRegressor(policy="neural", unary_operators=[GAUSS]).fit(X, y)


def test_pysr_names_survive_a_fresh_process(tmp_path):
    X = np.random.default_rng(6).uniform(-2.0, 2.0, size=(200, 2))
    y = 2.0 * scipy.special.erf(1.5 * X[:, 0]) + X[:, 1] ** 3
    est = SymbolicRegressor(max_evaluations=3000, max_time=None, random_state=0, unary_operators=["erf", "cube"],
                            binary_operators=ARITHMETIC).fit(X, y)
    assert est.score(X, y) > 0.9999 and {"erf", "cube"} <= set(est.expression_.symbols)
    printed = _reloaded_in_a_fresh_process(est, X, tmp_path)
    for name in ("json", "pkl"):
        assert f"{name} {est.sympy()} {est.sympy(expand_operators=True)}" in printed
