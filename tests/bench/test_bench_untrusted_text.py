"""Text from data files and other libraries never reaches ``eval`` (issue 11, item 11)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr.bench import methods
from dgsr.bench.datasets import parse_formula
from dgsr.bench.methods import RunBudget
from dgsr.bench.protocol import Split, is_symbolic_solution

pytestmark = pytest.mark.timeout(60, method="thread")


def _hostile(marker) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


@pytest.mark.parametrize("adapter", ["run_operon", "run_operon_strong"])
def test_operon_adapter_does_not_execute_column_names(tmp_path, adapter):
    pytest.importorskip("pyoperon")
    marker = tmp_path / "PWNED"
    name = _hostile(marker)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({name: rng.uniform(1, 2, 60), "b c": rng.uniform(1, 2, 60)})
    y = 2.0 * X[name] + X["b c"]
    yv = np.array(y, dtype=np.float64)
    split = Split(X.iloc[:45].reset_index(drop=True), yv[:45].copy(), X.iloc[45:].reset_index(drop=True), yv[45:].copy())
    result = getattr(methods, adapter)(split, RunBudget(time=1.0, evaluations=2000, seed=0))
    assert not marker.exists()
    assert {s.name for s in result.model.free_symbols} <= {name, "b c"}
    assert np.isfinite(result.predictions).all()


@pytest.mark.parametrize("text", ["__import__('os').system('true')", "x.__class__", "m*c**2; import os",
                                  "exec(x)", "lambda: 1", "x[0]", "'x'"])
def test_parse_formula_rejects_anything_but_arithmetic(tmp_path, text):
    with pytest.raises(ValueError):
        parse_formula(text, ["x", "m", "c"])


def test_parse_formula_reads_feynman_style_formulas():
    I, theta, n = sympy.symbols("I theta n")
    assert parse_formula("I*sin(n*theta/2)**2/sin(theta/2)**2", ["I", "theta", "n"]) == \
        I * sympy.sin(n * theta / 2) ** 2 / sympy.sin(theta / 2) ** 2
    assert parse_formula("exp(-theta^2/2)/sqrt(2*pi)", ["theta"]) == sympy.exp(-theta**2 / 2) / sympy.sqrt(2 * sympy.pi)
    assert parse_formula("asin(n*sin(theta))", ["n", "theta"]) == sympy.asin(n * sympy.sin(theta))


def test_symbolic_check_parses_model_text_safely(tmp_path):
    marker = tmp_path / "PWNED"
    x = sympy.Symbol("x")
    assert is_symbolic_solution("2*x + 1", 2 * x)
    assert not is_symbolic_solution(_hostile(marker), 2 * x)
    assert not marker.exists()
