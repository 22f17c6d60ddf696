import math

import numpy as np
import pytest
import sympy

from dgsr.core.evaluate import all_finite, evaluate, evaluate_constant, r2_score
from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from tests.conftest import random_tree


def test_matches_sympy_lambdify_on_random_trees(rng):
    X = rng.uniform(0.5, 2.0, size=(64, 3))
    names = ["x0", "x1", "x2"]
    symbols = sympy.symbols(names)
    checked = 0
    for _ in range(200):
        e = random_tree(rng, 3, int(rng.integers(1, 15)))
        ours = evaluate(e, X)
        reference = e.to_sympy(names)
        if reference.has(sympy.zoo, sympy.nan):  # SymPy folded a division by zero: nothing to compare
            continue
        ref = sympy.lambdify(symbols, reference, "numpy")
        with np.errstate(all="ignore"):
            theirs = np.broadcast_to(np.asarray(ref(*X.T), dtype=np.complex128), (64,))
        # SymPy's automatic rewrites (e.g. sqrt(a)**2 -> a) can define values where we report a
        # domain error, never the reverse: where our value is finite, both must agree.
        finite = np.isfinite(ours)
        if finite.any():
            scale = max(1.0, float(np.max(np.abs(ours[finite]))))
            np.testing.assert_allclose(ours[finite], theirs[finite].real, rtol=1e-7, atol=1e-9 * scale)
            assert np.allclose(theirs[finite].imag, 0.0)
            checked += 1
    assert checked > 150


def test_hand_computed_values():
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(evaluate(parse("x0/x1 - x1**2"), X), [0.5 - 4, 0.75 - 16])
    np.testing.assert_allclose(evaluate(parse("sqrt(x1)**-1"), X), [2**-0.5, 0.5])


def test_constant_expression_has_full_shape():
    out = evaluate(parse("2.5"), np.zeros((4, 1)))
    assert out.shape == (4,) and np.all(out == 2.5)
    assert evaluate(Expression.empty(), np.zeros((3, 2))).shape == (3,)


@pytest.mark.parametrize("text", ["log(x0)", "sqrt(x0)", "x1/x0", "x0**-1", "exp(exp_arg)".replace("exp_arg", "1000*x1")])
def test_domain_errors_give_non_finite_without_warnings(text, recwarn):
    X = np.array([[0.0, 1.0], [-1.0, 2.0]])
    values = evaluate(parse(text), X)
    assert not all_finite(values)
    assert len(recwarn) == 0


def test_evaluate_constant():
    assert evaluate_constant(parse("2*3+1")) == 7.0
    assert math.isnan(evaluate_constant(Expression.combine("log", Expression.constant(-1.0))))


def test_r2_score():
    y = np.array([1.0, 2.0, 3.0])
    assert r2_score(y, y) == 1.0
    assert r2_score(y, np.full(3, 2.0)) == pytest.approx(0.0)
    assert r2_score(y, np.array([1.0, np.nan, 3.0])) == -math.inf
    assert r2_score(y, np.array([1.5, 2.0, 2.5])) == pytest.approx(1 - (0.25 * 2 / 3) / (2 / 3))


def test_all_finite_handles_huge_finite_values():
    assert all_finite(np.array([1e308, 1e308]))
    assert not all_finite(np.array([1.0, np.inf]))
