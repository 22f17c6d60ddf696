"""User variable names in SymPy, LaTeX, text and front.csv (issue 11, item 12)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

import dgsr.cli.app as cli
from dgsr.core.display import equation_latex, equation_text
from dgsr.core.evaluate import evaluate
from dgsr.core.names import is_plain, quote
from dgsr.core.parser import parse
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(120, method="thread")

HOSTILE = ["a b", "E", "I", "pi", "θ", "x`y", "sin", "1x", "x1", "back\\slash", "rate (1/s)", "c,d", "S"]


def _fit(columns: list[str], law) -> SymbolicRegressor:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.uniform(1, 3, 120) for c in columns})
    y = law(*(X[c] for c in columns))
    return SymbolicRegressor(policy="random", max_evaluations=3000, max_time=None, random_state=0).fit(X, y)


def test_columns_named_like_sympy_constants_stay_variables():
    est = _fit(["E", "I", "pi"], lambda E, I, pi: E * I + pi)
    expr = est.sympy()
    assert {s.name for s in expr.free_symbols} == {"E", "I", "pi"}
    assert not expr.has(sympy.E) and not expr.has(sympy.I) and not expr.has(sympy.pi)
    text = est.equations_["equation"].iloc[est.best_index_]
    assert "`E`" in text and "`I`" in text and "`pi`" in text
    latex = est.latex()
    assert r"\mathrm{E}" in latex and r"\mathrm{pi}" in latex and r"\pi" not in latex


def test_names_with_spaces_are_quoted_in_text_and_latex():
    est = _fit(["a b", "c d"], lambda ab, cd: ab * cd**2)
    text = est.equations_["equation"].iloc[est.best_index_]
    assert "`a b`" in text and "`c d`" in text and "a b*" not in text
    assert r"\text{a b}" in est.latex()


def test_display_of_each_hostile_name():
    for name in HOSTILE:
        s = sympy.Symbol(name)
        text = equation_text(2 * s + 1)
        assert parse(text, [name]) == parse("2*x0 + 1"), (name, text)
        latex = equation_latex(s)
        if is_plain(name):
            assert latex == sympy.latex(s)  # SymPy's own rendering (x_{1}, \theta)
        else:
            assert latex.startswith((r"\mathrm{", r"\text{")), (name, latex)


@pytest.mark.parametrize("formula", ["x0*x1 + sin(x2)/x3 - x4**2", "exp(x5 - x6*1.5e-9)/sqrt(x7 + x8)",
                                     "x9**-1 + x10 - (x11 - x12)", "log(x0/(x1 + 2.25))"])
def test_format_parse_round_trip_for_any_names(formula):
    expr = parse(formula)
    text = expr.format(HOSTILE)
    assert parse(text, HOSTILE) == expr


def test_front_csv_expressions_parse_back_for_any_column_names(tmp_path):
    rng = np.random.default_rng(1)
    names = ["a b", "E", "θ", "x`y"]
    df = pd.DataFrame({n: rng.uniform(1, 3, 80) for n in names})
    df["target value"] = df["a b"] * df["E"] + df["θ"] / df["x`y"]
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "run"
    assert cli.main(["fit", str(path), "--out", str(out), "--policy", "random", "--evals", "1500", "--time", "60",
                     "--quiet"]) == 0
    front = pd.read_csv(out / "front.csv")
    est = pd.read_pickle(out / "model.pkl")
    X = df[list(est.selected_features_)].to_numpy()
    for text, expr in zip(front["expression"], est.expressions_):
        back = parse(text, est.selected_features_)  # the same formula; `b - (-c)` is shown `b + c`
        assert back.size == expr.size
        np.testing.assert_allclose(evaluate(back, X), evaluate(expr, X), rtol=1e-12)


def test_quote_is_bare_only_for_plain_identifiers():
    assert quote("mass") == "mass" and quote("m_1") == "m_1" and quote("θ") == "θ"
    assert quote("E") == "`E`" and quote("a b") == "`a b`" and quote("x`y") == "`x\\`y`"
