"""dgsr.bench.protocol: split, noise, R², size and SRBench's symbolic-solution check, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr.bench.methods import dgsr_options, get_method
from dgsr.bench.protocol import (
    is_symbolic_solution,
    make_split,
    model_size,
    node_count,
    r2_score,
    round_floats,
)

x, y, h, n = sympy.symbols("x y h n")


def test_r2_by_hand():
    y_true = np.array([1.0, 2.0, 3.0, 4.0])
    # residuals: only the last row is off by 1 -> SS_res = 1; mean 2.5 -> SS_tot = 2.25+0.25+0.25+2.25 = 5
    assert r2_score(y_true, np.array([1.0, 2.0, 3.0, 5.0])) == pytest.approx(1 - 1 / 5)
    assert r2_score(y_true, np.full(4, 2.5)) == pytest.approx(0.0)
    assert r2_score(y_true, y_true) == 1.0
    assert r2_score(y_true, np.array([1.0, np.nan, 3.0, 4.0])) == float("-inf")


def test_split_sizes_determinism_and_cap():
    X = pd.DataFrame({"a": np.arange(200.0)})
    y = np.arange(200.0)
    s1, s2, s3 = make_split(X, y, 0), make_split(X, y, 0), make_split(X, y, 1)
    assert len(s1.y_train) == 150 and len(s1.y_test) == 50
    np.testing.assert_array_equal(s1.y_test, s2.y_test)
    assert not np.array_equal(s1.y_test, s3.y_test)
    assert set(s1.y_train).isdisjoint(s1.y_test)
    np.testing.assert_array_equal(s1.X_train["a"].to_numpy(), s1.y_train)  # rows stay aligned
    capped = make_split(X, y, 0, max_train=40)
    assert len(capped.y_train) == 40 and len(capped.y_test) == 50


def test_noise_on_training_targets_only():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=20_000)})
    y = 3.0 + X["a"].to_numpy()
    clean, noisy = make_split(X, y, 5), make_split(X, y, 5, noise=0.1)
    np.testing.assert_array_equal(clean.y_test, noisy.y_test)
    residual = noisy.y_train - clean.y_train
    rms = np.sqrt(np.mean(clean.y_train**2))
    assert np.std(residual) == pytest.approx(0.1 * rms, rel=0.05)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("model,truth,expected", [
    (2 * x + 1, 2 * x, True),  # difference is a constant
    (3 * x * y, x * y, True),  # ratio is a nonzero constant
    (x**2, x, False),
    (x + y, x, False),
    (sympy.Integer(0), x, False),  # ratio 0 does not count
    (sympy.Float(0.5000000001) * x, x / 2, True),  # floats rounded to 6 decimals
    (sympy.Float(0.15915494309) * h * n + sympy.Float(1e-7), n * h / (2 * sympy.pi), True),
    (sympy.sin(x) ** 2, 1 - sympy.cos(x) ** 2, True),  # equal after simplification
])
def test_symbolic_solution(model, truth, expected):
    assert is_symbolic_solution(model, truth) is expected


_G, _RHO, _A, _C, _D, _H, _R, _K = sympy.symbols("G rho alpha c d H_G r k_f", positive=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("model,truth,expected", [
    # Friedmann's equation with a factor outside the root: the floats 2.894405 and 0.119366
    # (3/(8*pi) rounded) do not multiply back to the truth's 8*pi/3; with pi exact they do.
    (sympy.Float(2.89440501823307) * sympy.sqrt(_G * _RHO - 3 * _A * _C**2 / (8 * sympy.pi * _D**2)),
     sympy.sqrt(8 * sympy.pi * _G * _RHO / 3 - _A * _C**2 / _D**2), True),
    # 1/(4*pi) and 1/(8*pi) as floats round to 0.079577 and 0.039789, and twice 0.039789 is not 0.079577
    ((_C**2 * (_H**2 * _R**2 * (_A / (4 * sympy.pi) - 1 / (8 * sympy.pi)) - _C**2 * _K / (8 * sympy.pi)))
     / (_G * _R**2),
     -(_C**4 * _K / _R**2 + _H**2 * _C**2 * (1 - 2 * _A)) / (8 * sympy.pi * _G), True),
    # pi exact does not make a wrong law right
    (sympy.sqrt(_G * _RHO - _A * _C**2 / (8 * sympy.pi * _D**2)),
     sympy.sqrt(8 * sympy.pi * _G * _RHO / 3 - _A * _C**2 / _D**2), False),
])
def test_a_model_that_writes_pi_is_also_checked_with_pi_exact(model, truth, expected):
    assert is_symbolic_solution(model, truth) is expected


_T, _W1, _W2 = sympy.symbols("t omega1 omega2")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("model,truth,expected", [
    # SymPy keeps sin(0.5*u) and sin(u/2) apart; as the exact decimal it is, 0.5 is 1/2
    (2 * _A * sympy.cos(sympy.Float(0.5) * _T * (_W1 - _W2)), 2 * _A * sympy.cos((_W1 - _W2) * _T / 2), True),
    (sympy.sin(sympy.Float(0.25) * _T) ** 2 / _T, sympy.sin(_T / 4) ** 2 / _T, True),
    # a float that is not the truth's fraction stays a different law: 0.333333 is not 1/3, 0.6 not 1/2
    (sympy.cos(sympy.Float(0.333333) * _T), sympy.cos(_T / 3), False),
    (2 * _A * sympy.cos(sympy.Float(0.6) * _T * (_W1 - _W2)), 2 * _A * sympy.cos((_W1 - _W2) * _T / 2), False),
])
def test_floats_inside_functions_are_compared_as_the_decimals_they_are(model, truth, expected):
    assert is_symbolic_solution(model, truth) is expected


def test_model_size_keeps_a_tiny_coefficient():
    import sympy

    m1, m2, r = sympy.symbols("m1 m2 r")
    law = sympy.Float(6.674e-11) * m1 * m2 / r**2
    # Rounded to 6 decimals the coefficient would be 0 and the law size 1.
    assert model_size(law) == model_size(sympy.Float(6.674) * m1 * m2 / r**2) > 1


def test_model_size_counts_simplified_nodes():
    a, b = sympy.symbols("a b")
    assert node_count(a + sympy.sin(3 * b)) == 6  # SRBench's example: [+, a, sin, *, 3, b]
    assert model_size(a + a + a) == 3  # 3*a after simplification
    assert round_floats(sympy.Float(1.23456789) * a) == sympy.Float(1.234568) * a


def test_dgsr_variant_names():
    assert dgsr_options("dgsr") == {}
    assert dgsr_options("dgsr-random-const-all-k8") == {"policy": "random", "constant_fitting": "all",
                                                         "n_samples": 8}
    assert dgsr_options("operon") is None
    assert dgsr_options("dgsr-nochain-nofree-cv0") == {"inner_chains": 0, "free_exponents": False, "cv_max_rows": 0}
    assert dgsr_options("dgsr-sel-balanced-const-best") == {"model_selection": "balanced", "constant_fitting": "best"}
    assert dgsr_options("dgsr-sel-nope") is None
    assert dgsr_options("dgsr-sel-cv-nosum") == {"model_selection": "cv", "additive_roots": False}
    assert dgsr_options("dgsr-nopow") == {"power_laws": False}
    assert dgsr_options("dgsr-ratio-nogroups") == {"ratio_chains": True, "unit_chains": False}
    assert dgsr_options("dgsr-units-noreduce") == {"units": True, "reduce_units": False}
    assert dgsr_options("dgsr-nodiff-units") == {"unit_differences": False, "units": True}
    assert dgsr_options("dgsr-nolinearized-units") == {"linearized_operands": False, "units": True}
    assert dgsr_options("dgsr-nolinratio") == {"linearized_ratios": False}
    assert dgsr_options("dgsr-nolinfactor") == {"linearized_factors": False}
    assert dgsr_options("dgsr-target") == {"target_chains": True}
    assert dgsr_options("dgsr-invtrig") == {"unary_operators": ["sin", "cos", "tan", "exp", "log", "sqrt", "inv", "sq",
                                                                "asin", "acos"]}
    assert dgsr_options("dgsr-chainpair") == {"chain_pairs": True}
    assert dgsr_options("dgsr-chainpair-nochain") == {"chain_pairs": True, "inner_chains": 0}
    assert dgsr_options("dgsr-noparam-inner0-nojit") == {"parametric_operands": False, "inner_fit_steps": 0,
                                                         "jit": False}
    assert get_method("dgsr-neural-k12").name == "dgsr-neural-k12"
    with pytest.raises(KeyError):
        get_method("no-such-method")


@pytest.mark.timeout(60)
def test_dgsr_adapter_passes_budget_and_variant(monkeypatch):
    import dgsr.estimator.regressor
    from dgsr.bench.methods import RunBudget

    seen = {}

    class FakeRegressor:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def fit(self, X, y):
            from dgsr.core.parser import parse

            self.n_evaluations_ = 42.0
            self.history_ = [{"evaluations": 10, "time": 0.1, "best_r2": 0.5}]
            self.expression_, self.selected_features_ = parse("x0"), ["a"]
            return self

        def predict(self, X):
            return np.zeros(len(X))

        def sympy(self):
            return sympy.Symbol("a")

    monkeypatch.setattr(dgsr.estimator.regressor, "SymbolicRegressor", FakeRegressor)
    # keep this pytest process's thread settings (the adapter would pin them to 1 for a worker)
    monkeypatch.setattr("dgsr.bench.methods.limit_threads", lambda: None)
    X = pd.DataFrame({"a": np.arange(8.0)})
    split = make_split(X, np.arange(8.0), 0)
    result = get_method("dgsr-random-const-best-k8").fn(split, RunBudget(time=3.0, evaluations=1000, seed=7))
    assert seen == {"max_time": 3.0, "max_evaluations": 1000, "random_state": 7, "verbose": False,
                    "policy": "random", "constant_fitting": "best", "n_samples": 8}
    assert result.n_evaluations == 42.0 and result.curve == [(10.0, 0.5)] and str(result.model) == "a"
    assert str(result.fitted_model) == "a"  # the selected expression, in the column names


def test_expression_r2_falls_back_where_the_expression_is_not_finite():
    from dgsr.bench.protocol import expression_r2
    from dgsr.core.parser import parse

    X = np.array([[1.0], [2.0], [0.0], [4.0]])
    y = np.array([1.0, 0.5, 3.0, 0.25])
    inverse = parse("1/x0")
    assert expression_r2(inverse, X, y) == float("-inf")  # 1/0 at the third row
    # with the fallback, the third row predicts 3.0 exactly and the others are exact too
    assert expression_r2(inverse, X, y, fallback=3.0) == pytest.approx(1.0)
    assert expression_r2(inverse, X[[0, 1, 3]], y[[0, 1, 3]]) == pytest.approx(1.0)


def test_variant_names_for_the_inner_constant_search():
    from dgsr.bench.methods import dgsr_options

    assert dgsr_options("dgsr-param-inner3") == {"parametric_operands": True, "inner_fit_steps": 3}
    assert dgsr_options("dgsr-semantic-inner0-k8") == {"policy": "semantic", "inner_fit_steps": 0, "n_samples": 8}
    assert dgsr_options("dgsr-innerx") is None


@pytest.mark.timeout(120)
def test_the_dgsr_adapters_fitted_model_is_what_it_predicts(monkeypatch):
    from dgsr.bench.methods import RunBudget

    monkeypatch.setattr("dgsr.bench.methods.limit_threads", lambda: None)
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"m": rng.uniform(1, 5, 200), "v": rng.uniform(1, 2, 200), "c": rng.uniform(3, 10, 200)})
    y = X["m"].to_numpy() * X["c"].to_numpy() ** 2 / np.sqrt(1 - (X["v"] / X["c"]).to_numpy() ** 2)
    split = make_split(X, y, 0)
    result = get_method("dgsr").fn(split, RunBudget(time=60.0, evaluations=1500, seed=0))
    f = sympy.lambdify([sympy.Symbol(n) for n in X.columns], result.fitted_model, "numpy")
    values = np.broadcast_to(f(*split.X_test.to_numpy().T), result.predictions.shape)
    np.testing.assert_allclose(values, result.predictions, rtol=1e-6, atol=1e-9)
