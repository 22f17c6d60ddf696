"""A constant factor moved inside the root (or square) of a sum, and snapping's use of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

from dgsr.core import snapping
from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.root_scales import root_rescalings
from dgsr.core.snapping import snap_constants

ROWS = np.random.default_rng(3).uniform(1.0, 5.0, size=(2, 400))
x0, x1 = sympy.symbols("x0 x1")


def _values(expr: Expression) -> np.ndarray:
    with np.errstate(all="ignore"):
        return evaluate_columns(expr, ROWS)


@pytest.mark.parametrize("symbols, constants", [
    (("mul", "c", "sqrt", "sub", "x0", "mul", "c", "x1"), (2.9, 0.12)),          # c*sqrt(x0 - k*x1)
    (("mul", "sqrt", "add", "x0", "c", "c"), (0.7, 3.1)),                        # sqrt(x0 + k)*c
    (("div", "sqrt", "add", "mul", "x1", "c", "x0", "c"), (1.7, 0.4)),            # sqrt(x1*k + x0)/c
    (("mul", "c", "sqrt", "add", "div", "x0", "c", "mul", "c", "x1"), (-1.9, 4.0, 0.5)),  # c < 0: -sqrt(...)
    (("mul", "c", "sq", "sub", "div", "c", "x0", "x1"), (0.36, 2.0)),             # c*(k/x0 - x1)**2
    (("add", "x0", "mul", "c", "sqrt", "add", "x1", "c"), (1.5, 0.2)),             # deeper in the tree
])
def test_each_rewrite_is_the_same_function_and_no_larger(symbols, constants):
    expr = Expression(symbols, constants)
    rewrites = root_rescalings(expr)
    assert rewrites, "a constant times the root or square of a sum has a rewrite"
    for new in rewrites:
        assert new.size <= expr.size
        assert np.allclose(_values(new), _values(expr), rtol=1e-12, atol=0)
        assert "sqrt" in new.symbols or "sq" in new.symbols


def test_the_factor_moves_into_every_term_and_leaves_the_root_alone():
    expr = Expression(("mul", "c", "sqrt", "sub", "x0", "mul", "c", "x1"), (3.0, 0.5))
    (new,) = root_rescalings(expr)
    assert new.symbols[0] == "sqrt"
    assert sympy.simplify(new.to_sympy() - sympy.sqrt(9 * x0 - 4.5 * x1)) == 0


@pytest.mark.parametrize("symbols, constants", [
    (("mul", "c", "sq", "add", "x0", "x1"), (-2.0,)),        # a negative factor cannot enter a square
    (("div", "c", "sqrt", "add", "x0", "x1"), (2.0,)),       # c/sqrt(S) would keep a division
    (("mul", "c", "sqrt", "x0"), (2.0,)),                    # no sum under the root: nothing to gain
    (("mul", "c", "exp", "add", "x0", "x1"), (2.0,)),        # not a root or square
    (("mul", "c", "sqrt", "add", "x0", "add", "x1", "sq", "x0"), (2.0,)),  # would grow by two nodes
])
def test_no_rewrite_where_it_would_change_the_function_or_grow_it(symbols, constants):
    assert root_rescalings(Expression(symbols, constants)) == []


def test_a_held_constant_is_never_moved():
    expr = Expression(("mul", "c", "sqrt", "add", "x0", "x1"), (2.0,))
    assert root_rescalings(expr, fixed=frozenset({0})) == []


def _law_rows(noise: float, seed: int = 0) -> np.ndarray:
    y = np.sqrt(8 * np.pi / 3 * ROWS[0] - ROWS[1] / 4)  # positive on the rows: 8.4 > 5/4
    return y + np.random.default_rng(seed).normal(0.0, noise * np.std(y), y.shape)


#: The law ``sqrt(8*pi/3*x0 - x1/4)`` as a fit finds it: the 2.89 outside and -0.02984 inside fit
#: only together, and neither is a simple value.
FOUND = Expression(("mul", "c", "sqrt", "sub", "x0", "mul", "c", "x1"),
                   (math.sqrt(8 * math.pi / 3), 3 / (32 * math.pi)))


def _fitted(expr: Expression, y: np.ndarray) -> Expression:
    from scipy.optimize import least_squares

    def residual(theta):
        return _values(expr.with_constants(theta)) - y

    return expr.with_constants(least_squares(residual, np.asarray(expr.constants), xtol=1e-14, ftol=1e-14).x)


@pytest.mark.parametrize("noise", [0.0, 0.01])
def test_snapping_moves_the_factor_inside_and_finds_the_laws_coefficients(noise):
    y = _law_rows(noise)
    snapped, _ = snap_constants(_fitted(FOUND, y), ROWS, y)
    assert snapped.symbols[0] == "sqrt"
    inside = sympy.expand(snapped.to_sympy().args[0])
    assert float(inside.coeff(x1)) == -0.25
    assert float(inside.coeff(x0)) == pytest.approx(8 * math.pi / 3, rel=1e-3 if noise else 1e-9)


def test_without_the_rewrite_the_two_constants_stay_fitted(monkeypatch):
    monkeypatch.setattr(snapping, "root_rescalings", lambda expr, fixed=frozenset(): [])
    snapped, _ = snap_constants(FOUND, ROWS, _law_rows(0.01))
    assert snapped.symbols == FOUND.symbols
    assert snapping._free_constants(snapped.constants) == 2


def test_a_form_that_reads_simpler_outside_the_root_is_kept():
    law = Expression(("mul", "c", "sqrt", "add", "x0", "c"), (1.3, 2.5))  # 1.3*sqrt(x0 + 5/2)
    y = _values(law)
    snapped, _ = snap_constants(law.with_constants([1.3 * (1 + 1e-9), 2.5]), ROWS, y)
    assert snapped.symbols == law.symbols
    assert snapped.constants[1] == 2.5
