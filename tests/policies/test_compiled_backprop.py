"""policies.semantic.compiled_backprop: the compiled node values, desired values and chain
gradients equal the numpy definitions of backprop to rounding (NaN where they are NaN), on
expressions with every operator and on rows where poles, domain errors and overflow occur."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from dgsr.core.evaluate import as_columns
from dgsr.core.kernels import compiler
from dgsr.core.parser import parse
from dgsr.policies.semantic.compiled_backprop import CompiledBackprop, NumpyBackprop
from dgsr.policies.semantic.policy import SemanticPolicy
from tests.policies.expression_strategies import N_VARS, examples, trees

pytestmark = [pytest.mark.timeout(300, method="thread"),
              pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")]

SETTINGS = examples(200)

RNG = np.random.default_rng(5)
COLUMNS = as_columns(np.vstack([RNG.uniform(-3, 3, size=(40, N_VARS)), [[0.0, -1.0, 1e200], [710.0, 2.0, 0.0]]]))
# Root targets: smooth values, values outside [-1, 1] (arcsin, arccos), zeros, negatives and huge ones.
ROOT = np.concatenate([np.sin(COLUMNS[0, :40]) * 3.0, [0.0, 1e300]])


def _identical(a: np.ndarray, b: np.ndarray) -> None:
    """The same NaNs and infinities, and the finite values equal to rounding. Not bit for bit:
    the compiled code calls libm's exp, sin, log, ... and numpy its own vectorised versions
    (numpy 2.4 on AVX-512 machines), which differ in the last bit on some inputs."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.where(np.isinf(a), a, 0.0), np.where(np.isinf(b), b, 0.0))
    finite = np.isfinite(a) & np.isfinite(b)
    scale = max(1.0, float(np.max(np.abs(b[finite]), initial=0.0)))
    np.testing.assert_allclose(a[finite], b[finite], rtol=1e-12, atol=1e-12 * scale)


@SETTINGS
@given(trees)
def test_compiled_backprop_equals_the_numpy_definitions(expr):
    compiled, reference = CompiledBackprop(expr, COLUMNS), NumpyBackprop(expr, COLUMNS)
    assert compiled.parent == reference.parent
    _identical(compiled.values, np.array(reference.values))
    for position in range(expr.size):
        _identical(compiled.desired(position, ROOT), reference.desired(position, ROOT))
        _identical(compiled.gradient(position), reference.gradient(position))


def test_the_semantic_policy_proposes_the_same_with_either(monkeypatch):
    """The whole ranking through the compiled backpropagation proposes the same mutations, with
    the same priors up to rounding, as through the numpy one."""
    from dgsr.policies.semantic import compiled_backprop

    X = np.random.default_rng(0).uniform(0.5, 2.0, size=(200, 3))
    y = 2.5 * np.sin(1.3 * X[:, 0] * X[:, 1]) + X[:, 2] ** 2
    policy = SemanticPolicy()
    expressions = [parse(t) for t in ("sin(1.1*x0*x1) + x2", "x2*x2 + 0.5*exp(x0)/x1", "sqrt(x0 + 1.0) - log(x1)")]

    def proposals(make):
        monkeypatch.setattr(compiled_backprop, "backprop_for", make)
        monkeypatch.setattr("dgsr.policies.semantic.policy.backprop_for", make)
        context = policy.prepare(X, y, np.random.default_rng(1))
        rng = np.random.default_rng(2)
        return [[(str(p.mutation), p.prior) for p in policy.propose(context, e, 16, rng)] for e in expressions]

    compiled, reference = proposals(CompiledBackprop), proposals(NumpyBackprop)
    assert all(compiled)
    # The same mutations in the same order; the priors to rounding (with the compiled
    # backpropagation the per-position rows are compiled too, their sums taken in row order).
    assert [[m for m, _ in c] for c in compiled] == [[m for m, _ in r] for r in reference]
    for c, r in zip(compiled, reference):
        np.testing.assert_allclose([p for _, p in c], [p for _, p in r], rtol=1e-12, atol=1e-15)


def _orthogonal_to(y, v):
    yc = y - y.mean()
    return v - (v @ yc) / (yc @ yc) * yc  # no correlation with y left (to rounding)


@pytest.mark.parametrize("case", ["line", "negative", "constant", "non_finite", "uncorrelated", "zero"])
def test_the_compiled_root_targets_equal_the_numpy_definitions_to_rounding(case):
    from dgsr.policies.semantic.backprop import root_target, spread
    from dgsr.policies.semantic.compiled_backprop import root_targets

    if not compiler.AVAILABLE:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(3)
    y = rng.normal(size=100) * 3 + 2
    f = {"line": 0.5 * y - 1 + 0.1 * rng.normal(size=100), "negative": -2 * y + 0.3 * rng.normal(size=100),
         "constant": np.full(100, 1.5), "non_finite": np.where(np.arange(100) == 7, np.inf, y),
         "uncorrelated": _orthogonal_to(y, rng.normal(size=100)), "zero": np.zeros(100)}[case]
    (without, with_offset), (spread_without, spread_with) = root_targets(y, f)
    for got, got_spread, intercept in ((without, spread_without, False), (with_offset, spread_with, True)):
        want = root_target(y, f, intercept=intercept)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        assert got_spread == pytest.approx(spread(want), rel=1e-12)
    if case in ("constant", "non_finite", "zero", "uncorrelated"):  # no scaling is defined: y itself
        assert with_offset.tolist() == y.tolist()
    if case == "line":  # (y - b) / a undoes the scaling: close to f
        assert np.corrcoef(with_offset, f)[0, 1] > 0.99
