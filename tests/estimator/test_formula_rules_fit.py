"""PySR's nested_constraints, constraints, maxdepth and complexity_of_* through the estimator:
every policy's front keeps them, the front's complexity column is the weighted one, and they
survive n_jobs, the model file and pickle (issue 50, item 5)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.formula_rules import formula_rules
from tests.cli.dgsr_process import run_python

RULES = {"maxdepth": 3, "nested_constraints": {"*": {"sin": 0}}, "constraints": {"/": (-1, 1)}}


def _data(n: int = 120):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(n, 2))
    # The law itself is 4 deep and has a sine below a product: the rules exclude it.
    return X, X[:, 1] * np.sin(X[:, 0]) + X[:, 0] * X[:, 1]


def _fit(X, y, **params) -> SymbolicRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SymbolicRegressor(**{"max_evaluations": 1500, "max_time": None, "random_state": 0, **params}).fit(X, y)


def _broken(est: SymbolicRegressor, params: dict) -> list[str]:
    rules = formula_rules(params)
    return [str(e) for e in est.expressions_ if rules.violation(e) is not None]


def test_without_the_rules_the_front_breaks_them():
    """The rules below bite: the same fit without them has formulas they exclude."""
    X, y = _data()
    assert _broken(_fit(X, y), RULES)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("policy", ["semantic", "random", "neural"])
def test_every_policy_keeps_the_rules(policy):
    if policy == "neural":
        pytest.importorskip("torch")
    X, y = _data()
    # The transformer proposes far more slowly on a CPU: fewer evaluations keep the test short.
    est = _fit(X, y, policy=policy, max_evaluations=200 if policy == "neural" else 1500, **RULES)
    assert _broken(est, RULES) == []
    assert np.isfinite(est.predict(X)).all()
    assert est.equations_["r2"].max() > 0.5  # rules narrow the search, they do not end it


def test_the_complexity_column_is_the_weighted_complexity():
    X, y = _data()
    params = {"complexity_of_operators": {"sin": 4, "*": 2}, "complexity_of_constants": 2}
    est = _fit(X, y, **params)
    rules = formula_rules(params)
    table = est.equations_
    assert table["complexity"].tolist() == [rules.complexity(e) for e in est.expressions_]
    assert any(c != e.size for c, e in zip(table["complexity"], est.expressions_))
    # A Pareto front in that complexity: each row larger and more accurate than the one before.
    assert (np.diff(table["complexity"]) > 0).all() and (np.diff(table["loss"]) < 0).all()


def test_a_guess_that_breaks_the_rules_is_one_clear_error():
    X, y = _data()
    with pytest.raises(ValueError, match=r"guess 'x1\*sin\(x0\)' cannot be used: it breaks nested_constraints"):
        _fit(X, y, guesses=["x1*sin(x0)"], nested_constraints={"*": {"sin": 0}})


@pytest.mark.timeout(300)
def test_rules_hold_with_two_processes_and_survive_the_model_file_and_pickle(tmp_path):
    X, y = _data()
    params = {**RULES, "complexity_of_variables": 2}
    est = _fit(X, y, n_jobs=2, **params)
    assert _broken(est, params) == []
    path = est.save(tmp_path / "model.json")
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(est))
    np.save(tmp_path / "X.npy", X)
    code = (
        "import pickle, numpy as np\n"
        "from dgsr import SymbolicRegressor\n"
        f"X = np.load({str(tmp_path / 'X.npy')!r})\n"
        f"a = SymbolicRegressor.from_file({str(path)!r})\n"
        f"b = pickle.loads(open({str(tmp_path / 'model.pkl')!r}, 'rb').read())\n"
        "from dgsr.core.formula_rules import formula_rules\n"
        "assert formula_rules(a.get_params()) == formula_rules(b.get_params()) is not None\n"
        "print(a.maxdepth, a.complexity_of_variables, a.equations_['complexity'].tolist())\n"
        "print(np.abs(a.predict(X) - b.predict(X)).max())\n"
    )
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().split("\n")
    assert first == f"3 2 {est.equations_['complexity'].tolist()}"
    assert float(second) == 0.0
