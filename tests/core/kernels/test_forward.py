"""core.kernels.forward and .fit: the compiled values and Jacobian equal forward mode and the plain
evaluation (issue 25), and the compiled inner fit takes the steps of the numpy oracle
(tests/core/kernels/oracle.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgsr.core import inner_fit
from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.gradients import value_and_jacobian
from dgsr.core.kernels.codes import encode
from dgsr.core.kernels.forward import run_encoded
from dgsr.core.operators import BINARY, UNARY
from dgsr.core.parser import parse
from tests.core.kernels import oracle

pytestmark = pytest.mark.timeout(300, method="thread")

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N_VARS = 3
constants = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.5, 1e-300, 1e300]),
                      st.floats(-10, 10, allow_nan=False, allow_infinity=False))
leaves = st.one_of(st.integers(0, N_VARS - 1).map(Expression.variable), constants.map(Expression.constant))


def _extend(children):
    unary = st.tuples(st.sampled_from(UNARY), children).map(lambda t: Expression.combine(t[0], t[1]))
    binary = st.tuples(st.sampled_from(BINARY), children, children).map(
        lambda t: Expression.combine(t[0], t[1], t[2]))
    return st.one_of(unary, binary)


expressions = st.recursive(leaves, _extend, max_leaves=12)
# Rows with zeros, negatives and large values, so poles, domain errors and overflow all occur.
COLUMNS = as_columns(np.vstack([np.random.default_rng(0).uniform(-3, 3, size=(40, N_VARS)),
                                [[0.0, -1.0, 1e200], [1e-300, 0.0, -1e200], [710.0, 2.0, 0.0]]]))


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """Equal to rounding where both are finite, and non-finite in the same places."""
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    both = np.isfinite(a) & np.isfinite(b)
    np.testing.assert_allclose(a[both], b[both], rtol=1e-9, atol=1e-300)


@SETTINGS
@given(expressions)
def test_compiled_values_and_jacobian_equal_forward_mode_and_plain_evaluation(expr):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither path may leak a numpy warning
        plain = evaluate_columns(expr, COLUMNS)
        forward_value, forward_jac = value_and_jacobian(expr, COLUMNS)
        ops, args = encode(expr)
        value, jac = run_encoded(ops, args, np.asarray(expr.constants, dtype=np.float64), COLUMNS)
    _same(value, plain)
    _same(forward_value, plain)
    assert jac.shape == (expr.n_constants, COLUMNS.shape[1])
    # Where the value is finite, so is each path's derivative in the same places, and they agree.
    rows = np.isfinite(plain)
    _same(jac[:, rows], forward_jac[:, rows])


LAWS = [
    ("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2", lambda X: 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]),
    ("exp(-0.5*x0)*cos(2*x1 + 0.1)", lambda X: np.exp(-0.8 * X[:, 0]) * np.cos(2.1 * X[:, 1] + 0.3)),
    ("1/(1 + sq(x0 - 1) + sq(x1 + 0.2))", lambda X: 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2)),
    ("sqrt(x0)*log(x1 + 2.2) + tan(0.3*x2)", lambda X: X[:, 0] + X[:, 1]),  # undefined at x0 < 0
    ("sin(0.7*x0) + sin(1.9*x1) + 3", lambda X: np.sin(0.5 * X[:, 0]) - 2 * np.sin(2 * X[:, 1])),
    # Two equal terms: collinear, so the start weights are the minimum-norm least-squares ones.
    ("sin(0.9*x0 + 0.1) + sin(0.9*x0 + 0.1) + x1", lambda X: np.sin(1.2 * X[:, 0] - 0.3) + X[:, 1]),
]


@pytest.mark.parametrize("text, law", LAWS)
@pytest.mark.parametrize("steps", [1, 3, 20])
def test_compiled_inner_fit_takes_the_steps_of_the_numpy_one(text, law, steps):
    X = np.random.default_rng(1).uniform(-2, 2, size=(64, 3))
    columns, y = as_columns(X), law(X)
    start = parse(text)
    compiled = inner_fit.fit_inner_constants(start, columns, y, steps=steps)
    numpy_path = oracle.fit_inner_constants(start, columns, y, steps=steps)
    assert compiled.passes == numpy_path.passes
    assert compiled.expression.symbols == numpy_path.expression.symbols
    np.testing.assert_allclose(compiled.expression.constants, numpy_path.expression.constants, rtol=1e-7)
    assert (compiled.expression is start) == (numpy_path.expression is start)


def test_with_the_kernels_switched_off_the_inner_fit_still_runs_compiled_and_fits_the_law():
    # A fresh process with DGSR_NO_JIT set: the callers with a numpy path of their own take it, the
    # inner fit (which has none in the package) still runs compiled and reaches the law.
    code = textwrap.dedent("""
        import numpy as np
        from dgsr.core.evaluate import as_columns
        from dgsr.core.inner_fit import fit_inner_constants
        from dgsr.core.kernels import compiler
        from dgsr.core.parser import parse
        assert not compiler.AVAILABLE
        X = np.random.default_rng(0).uniform(-2, 2, size=(64, 3))
        y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]
        fit = fit_inner_constants(parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2"), as_columns(X), y, steps=10)
        print(*np.round(fit.expression.constants, 6))
    """)
    env = {**os.environ, "DGSR_NO_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert [float(v) for v in out.stdout.split()] == [1.3, 0.4, 0.7]
