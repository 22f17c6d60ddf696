"""Term weights are solved on terms scaled to unit norm: whether two terms are collinear depends
on their correlation, not on their units.

A law's terms often differ by many orders of magnitude (``1/(x**3.3 + 2e5)`` is near 1e-5 where
``x`` is near 1e2); solved unscaled, the small term's direction fell below the solvers' relative
cut-offs and lost its weight. Each test here fails with the unscaled solves.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.inner_fit import fit_inner_constants
from dgsr.core.kernels import scoring
from dgsr.core.linear_terms import fit_term_weights
from dgsr.core.parser import parse

rng = np.random.default_rng(5)
X = rng.uniform(5.0, 150.0, 300)
SMALL = 1.0 / (X**3.3 + 2.0e5)  # near 1e-6 .. 5e-6
Y = 0.8 * X + 3.0e6 * SMALL - 2.0


def test_numpy_term_weights_keep_a_small_term_beside_a_large_one() -> None:
    fit = fit_term_weights(np.vstack([X, SMALL]), Y)
    assert fit is not None
    weights, intercept, mse = fit
    np.testing.assert_allclose(weights, [0.8, 3.0e6], rtol=1e-6)
    assert intercept == pytest.approx(-2.0, rel=1e-6) and mse < 1e-12 * np.var(Y)


def test_the_compiled_scoring_keeps_a_small_term_beside_a_large_one() -> None:
    expr = parse("x0 + 1/(exp(3.3*log(x0)) + 200000)", ["x0"], fold_constants=False)
    encoded = scoring.encode_sum(expr.symbols)
    result = scoring.score_sum(encoded, expr.constants, X[None, :].copy(), Y, True)
    assert result.status == scoring.FIT_DONE
    np.testing.assert_allclose(np.sort(result.weights[result.distinct]), [0.8, 3.0e6], rtol=1e-6)
    assert result.mse < 1e-12 * np.var(Y)


def test_the_inner_fit_starts_from_the_weights_of_a_small_term() -> None:
    # The shifted denominator's constant starts off (1.5e5) and is fitted beside the linear term.
    start = parse("x0 + 1/(exp(3.3*log(x0)) + 150000)", ["x0"], fold_constants=False)
    fitted = fit_inner_constants(start, X[None, :].copy(), Y, steps=30).expression
    assert 2.0e5 in [pytest.approx(c, rel=1e-4) for c in fitted.constants], fitted


def test_a_term_constant_up_to_rounding_gets_no_weight() -> None:
    flat = np.cos(1e-13 * X)  # 1 up to rounding
    fit = fit_term_weights(np.vstack([X, flat]), 0.8 * X - 2.0)
    assert fit is not None
    weights, intercept, _ = fit
    assert weights[0] == pytest.approx(0.8, rel=1e-9) and weights[1] == 0.0
    assert intercept == pytest.approx(-2.0, rel=1e-9)
    expr = parse("x0 + cos(1e-13*x0)", ["x0"], fold_constants=False)
    result = scoring.score_sum(scoring.encode_sum(expr.symbols), expr.constants, X[None, :].copy(),
                               0.8 * X - 2.0, True)
    assert result.status == scoring.FIT_COLLINEAR  # numpy's minimum-norm solve decides, as above
