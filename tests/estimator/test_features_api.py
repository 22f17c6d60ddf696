"""Features users of PySR/gplearn expect (issue 12, item 5): operator choice, ``sample_weight``,
export to numpy/torch/JAX, ``dgsr --version`` and ``--target-r2``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import mean_squared_error
from sklearn.metrics import r2_score as sk_r2

import dgsr
import dgsr.cli.app as cli
from dgsr.core.budget import Budget
from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.linear_terms import fit_term_weights
from dgsr.core.operators import BINARY, OPERATORS, UNARY, resolve_operators
from dgsr.core.parser import parse
from dgsr.estimator.regressor import SymbolicRegressor
from dgsr.policies.random import RandomPolicy
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.mutations import apply_mutation

pytestmark = pytest.mark.timeout(120, method="thread")


def _operators_in(expr: Expression) -> set[str]:
    return {s for s in expr.symbols if s in OPERATORS}


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (200, 2))
    return X, X[:, 0] * X[:, 1] + np.sin(X[:, 0])


# ------------------------------------------------------------------ operators
def test_operator_names_are_checked_against_table_1():
    assert resolve_operators() is None
    assert resolve_operators(["+", "*", "square", "COS"]) == ("add", "mul", "cos", "sq")
    # PySR's defaults for the list not given: no unary operator, the four binary ones
    assert resolve_operators(binary_operators=["/"]) == ("div",)
    assert resolve_operators(binary_operators=["+", "*"]) == ("add", "mul")
    assert resolve_operators(unary_operators=["cos"]) == ("add", "sub", "mul", "div", "cos")
    assert resolve_operators(unary_operators=[]) == ("add", "sub", "mul", "div")
    assert resolve_operators(operators=list(UNARY + BINARY)) is None  # everything = unrestricted
    with pytest.raises(ValueError, match="'tanhh' is not an operator.*Table 1"):
        resolve_operators(["add", "tanhh"])
    with pytest.raises(ValueError, match="not a unary operator"):
        resolve_operators(unary_operators=["+"])
    with pytest.raises(ValueError, match="not a binary operator"):
        resolve_operators(binary_operators=["exp"])
    with pytest.raises(ValueError, match="list of operator names"):
        resolve_operators("sin")
    with pytest.raises(ValueError, match="not both"):
        resolve_operators(["sin"], unary_operators=["cos"])
    with pytest.raises(ValueError, match="empty"):
        resolve_operators([])


def test_estimator_rejects_unknown_operator_before_searching(data):
    X, y = data
    with pytest.raises(ValueError, match="'power' is not an operator"):
        SymbolicRegressor(binary_operators=["+", "power"], max_evaluations=10).fit(X, y)


def test_random_policy_proposes_only_allowed_operators(rng):
    allowed = {"add", "mul", "cos"}
    policy = RandomPolicy(operators=sorted(allowed))
    expr = Expression.empty()
    seen: set[str] = set()
    for _ in range(300):
        proposals = policy.propose(2, expr, 16, rng)
        assert proposals
        for p in proposals:
            child = apply_mutation(expr, p.mutation)
            seen |= _operators_in(child)
            assert _operators_in(child) <= allowed
        expr = apply_mutation(expr, proposals[int(rng.integers(len(proposals)))].mutation)
        if expr.size > 40:
            expr = Expression.empty()
    assert seen == allowed  # and it does use all of them


def test_search_rejects_other_operators_whatever_the_policy(data):
    X, y = data
    # An unrestricted policy (as a user's own Policy object might be): the search filters it.
    result = run_search(X, y, RandomPolicy(), config=SearchConfig(operators=("sub", "div", "exp")),
                        rng=0, budget=Budget(max_evaluations=3000))
    assert result.mutation_stats.get("invalid:operator_not_allowed", 0) > 0
    front = result.archive.front()
    assert front and all(_operators_in(e.expression) <= {"sub", "div", "exp"} for e in front)


@pytest.mark.parametrize("kwargs,allowed", [
    ({"operators": ["+", "*", "cos"]}, {"add", "mul", "cos"}),
    # PySR's style; without add and mul the search's linear scaling (a*f + b) must be off too.
    ({"binary_operators": ["-", "/"], "unary_operators": ["sin", "square"]}, {"sub", "div", "sin", "sq"}),
])
def test_fitted_front_uses_only_allowed_operators(data, kwargs, allowed):
    X, y = data
    est = SymbolicRegressor(policy="random", max_evaluations=4000, max_time=None, random_state=0, **kwargs)
    est.fit(X, y)
    assert all(_operators_in(e.expression) <= allowed for e in est._front)
    assert est.equations_["r2"].iloc[-1] > 0.5  # it still searched


def test_neural_policy_masks_excluded_operator_tokens(data, rng):
    neural_policy = pytest.importorskip("dgsr.neural.policy")
    X, y = data
    allowed = {"add", "mul", "sin"}
    policy = neural_policy.NeuralPolicy.from_pretrained(operators=sorted(allowed), use_critic=False)
    context = policy.prepare(X, y, rng)
    expr = parse("x0 + x1")
    children = [apply_mutation(expr, p.mutation) for _ in range(3) for p in policy.propose(context, expr, 16, rng)]
    assert children and all(_operators_in(c) <= allowed for c in children)


# ------------------------------------------------------------------ sample_weight
@pytest.fixture
def two_laws():
    """Rows 0..119 follow y = 2*x0 + x1, rows 120..239 a different law; the weights trust the first."""
    rng = np.random.default_rng(1)
    X = rng.uniform(1, 4, (240, 2))
    y = 2 * X[:, 0] + X[:, 1]
    y[120:] = 5 - 3 * X[120:, 0] * X[120:, 1]
    w = np.where(np.arange(240) < 120, 1.0, 1e-6)
    return X, y, w


def test_weighted_constant_fit_follows_the_heavy_rows(two_laws, rng):
    X, y, w = two_laws
    expr = parse("1.0*x0 + 1.0*x1")
    fit = fit_constants(expr, as_columns(X), y, rng=rng, sample_weight=w)
    np.testing.assert_allclose(fit.expression.constants, [2.0, 1.0], atol=1e-3)
    assert fit.r2 == pytest.approx(sk_r2(y, 2 * X[:, 0] + X[:, 1], sample_weight=w), abs=1e-6)
    unweighted = fit_constants(expr, as_columns(X), y, rng=rng)
    assert abs(unweighted.expression.constants[0] - 2.0) > 0.1  # the weights made the difference


def test_weighted_term_weights_match_weighted_least_squares(two_laws):
    X, y, w = two_laws
    weights, intercept, mse = fit_term_weights(X.T.copy(), y, w)
    A = np.column_stack([X, np.ones(len(y))])
    sw = np.sqrt(w)
    expected = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0]
    np.testing.assert_allclose([*weights, intercept], expected, atol=1e-8)
    assert mse == pytest.approx(np.average((A @ expected - y) ** 2, weights=w), rel=1e-6)


def test_sample_weight_drives_search_table_and_selection(two_laws):
    X, y, w = two_laws
    est = SymbolicRegressor(policy="random", max_evaluations=6000, max_time=None, random_state=0)
    est.fit(X, y, sample_weight=w)
    # The table's loss and R² columns are the weighted ones, for every row of the front.
    for i in range(len(est.equations_)):
        pred = est.predict(X, index=i)
        assert est.equations_["loss"].iloc[i] == pytest.approx(mean_squared_error(y, pred, sample_weight=w),
                                                               rel=1e-9, abs=1e-12)
        assert est.equations_["r2"].iloc[i] == pytest.approx(sk_r2(y, pred, sample_weight=w), abs=1e-9)
    # The selected model fits the trusted rows (the other law would give R² < 0 there).
    assert sk_r2(y[:120], est.predict(X[:120])) > 0.999
    assert est.score(X, y, sample_weight=w) > 0.999


def test_sample_weight_is_checked(data):
    X, y = data
    est = SymbolicRegressor(policy="random", max_evaluations=100)
    with pytest.raises(ValueError, match="(?i)negative"):
        est.fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="non-zero|all zero"):
        est.fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError):
        est.fit(X, y, sample_weight=np.ones(3))


# ------------------------------------------------------------------ export
@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.uniform(1, 3, 150), "unused": rng.normal(size=150), "b": rng.uniform(1, 3, 150)})
    y = 1.5 * X["a"] / X["b"] + np.sqrt(X["a"])
    est = SymbolicRegressor(policy="random", max_evaluations=3000, max_time=None, random_state=0).fit(X, y)
    return est, X


def test_numpy_export_computes_predict(fitted):
    est, X = fitted
    for i in range(len(est.equations_)):
        f = est.to_numpy(i)
        np.testing.assert_allclose(f(X), est.predict(X, index=i), rtol=1e-12)
        np.testing.assert_allclose(f(X.to_numpy()[:7]), est.predict(X.iloc[:7], index=i), rtol=1e-12)


def test_torch_export_is_a_differentiable_torch_function(fitted):
    torch = pytest.importorskip("torch")
    est, X = fitted
    f = est.to_torch()
    t = torch.tensor(X.to_numpy(), dtype=torch.float64, requires_grad=True)
    out = f(t)
    assert isinstance(out, torch.Tensor) and out.shape == (len(X),)
    np.testing.assert_allclose(out.detach().numpy(), est.predict(X), rtol=1e-10)
    out.sum().backward()
    assert torch.isfinite(t.grad).all()


def test_jax_export(fitted):
    jnp = pytest.importorskip("jax.numpy")
    est, X = fitted
    out = est.to_jax()(jnp.asarray(X.to_numpy()))
    np.testing.assert_allclose(np.asarray(out), est.predict(X), rtol=1e-5)


def test_export_of_a_constant_formula_has_one_value_per_row():
    from dgsr.estimator.export import export_function

    f = export_function(Expression.constant(2.5), [], "numpy")
    np.testing.assert_array_equal(f(np.zeros((4, 3))), np.full(4, 2.5))
    with pytest.raises(ValueError, match="backend"):
        export_function(Expression.constant(1.0), [], "tensorflow")


# ------------------------------------------------------------------ CLI
def test_cli_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"dgsr {dgsr.__version__}"


def test_pyproject_version_matches_package():
    import pathlib

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    root = pathlib.Path(__file__).resolve().parents[2]
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"] == dgsr.__version__


def test_cli_target_r2_stops_early(tmp_path, capsys):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"m": rng.uniform(1, 5, 200), "v": rng.uniform(1, 5, 200)})
    df["E"] = 0.5 * df["m"] * df["v"] ** 2
    path = tmp_path / "energy.csv"
    df.to_csv(path, index=False)
    args = ["fit", str(path), "--policy", "random", "--evals", "200000", "--time", "100", "--quiet",
            "--out", str(tmp_path / "run")]
    assert cli.main([*args, "--target-r2", "0.999"]) == 0
    out = capsys.readouterr().out
    assert "stopped by reaching --target-r2" in out
    est = pd.read_pickle(tmp_path / "run" / "model.pkl")
    assert est.n_evaluations_ < 200000 and est.equations_["r2"].max() >= 0.999
    assert cli.main([*args, "--target-r2", "1.5"]) == 2  # one-line error, no traceback


def test_cli_operators_flag(tmp_path, capsys):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(1, 3, 100), "b": rng.uniform(1, 3, 100)})
    df["y"] = df["a"] * df["b"] + df["a"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    args = ["fit", str(path), "--policy", "random", "--evals", "1500", "--quiet", "--out", str(tmp_path / "run")]
    assert cli.main([*args, "--operators", "+,*"]) == 0
    est = pd.read_pickle(tmp_path / "run" / "model.pkl")
    assert est.operators == ["+", "*"]
    assert all(_operators_in(e) <= {"add", "mul"} for e in est.expressions_)
    capsys.readouterr()
    assert cli.main([*args, "--operators", "add,power"]) == 2
    assert "'power' is not an operator" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_exports_select_dataframe_columns_by_name_as_predict_does(fitted, backend):
    # reordered or extra columns used to give wrong numbers silently (issue 26, item 2)
    lib = pytest.importorskip({"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}[backend])
    est, X = fitted
    f = getattr(est, f"to_{backend}")()
    expected = est.predict(X)
    reordered = X[list(X.columns)[::-1]]
    extra = X.assign(not_fitted=np.linspace(-5.0, 5.0, len(X)))
    for frame in (X, reordered, extra):
        np.testing.assert_allclose(np.asarray(f(frame)), expected, rtol=1e-12)
    missing = X.drop(columns=X.columns[0])
    with pytest.raises(ValueError, match="lacks the column"):
        f(missing)
    with pytest.raises(ValueError):
        est.predict(missing)  # predict refuses it too
    with pytest.raises(ValueError, match="columns"):
        f(np.ones((3, X.shape[1] + 1)))  # an array of the wrong width
    assert lib is not None
