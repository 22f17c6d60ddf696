"""``sqrt(1 -+ u**2)`` operands for a ratio or product ``u`` of two variables (Lorentz factors)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from dgsr import SymbolicRegressor
from dgsr.bench.protocol import is_symbolic_solution
from dgsr.policies.semantic.operand_library import build_library

pytestmark = pytest.mark.timeout(120, method="thread")


def _lorentz(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m0, v, c = rng.uniform(1, 5, rows), rng.uniform(1, 2, rows), rng.uniform(3, 10, rows)
    return np.array([m0, v, c]), m0 / np.sqrt(1 - v**2 / c**2)


def test_the_library_holds_the_root_of_one_minus_a_squared_ratio():
    X, y = _lorentz(100)
    lib = build_library(X, y, fit_parametric=True)
    _, v, c = X
    with np.errstate(all="raise"):
        wanted = np.sqrt(1 - (v / c) ** 2)
    hits = [e for e, values in zip(lib.expressions, lib.values) if np.allclose(values, wanted, rtol=1e-12)]
    assert hits, "no operand equal to sqrt(1 - (v/c)**2)"
    assert hits[0].size == 7  # one node over the other operands' limit
    assert all(np.isfinite(row).all() for row in lib.values)
    # (c/v)**2 > 1 on every row: its root of 1 - u**2 is undefined and left out.
    with np.errstate(all="ignore"):
        undefined = np.sqrt(1 - (c / v) ** 2)
    assert not np.isfinite(undefined).any()
    assert not any("(x2/x1)**2" in str(e) and "1 -" in str(e) for e in lib.expressions)


def test_the_teachers_library_has_no_root_forms():
    X, y = _lorentz(100)
    lib = build_library(X, y, fit_parametric=False)
    assert not any(e.size == 7 and "sqrt" in e.symbols for e in lib.expressions)


def test_search_recovers_a_lorentz_factor_exactly():
    X, y = _lorentz(400, seed=1)
    est = SymbolicRegressor(max_evaluations=4000, max_time=300, random_state=0, verbose=False)
    est.fit(X.T, y)
    assert est.score(X.T, y) > 1 - 1e-9
    x0, x1, x2 = sympy.symbols("x0 x1 x2")
    assert is_symbolic_solution(est.sympy(), x0 / sympy.sqrt(1 - x1**2 / x2**2))
