"""Hypothesis strategies shared by the compiled-versus-numpy tests of the semantic policy:
expressions of every operator over three variables, with constants that include 0, +-1 and
1e300 (poles, domain errors and overflow on the test rows)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, UNARY

N_VARS = 3
constants = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.5, 1e300]), st.floats(-5, 5, allow_nan=False))
leaves = st.one_of(st.integers(0, N_VARS - 1).map(Expression.variable), constants.map(Expression.constant))
trees = st.recursive(leaves, lambda c: st.one_of(
    st.tuples(st.sampled_from(UNARY), c).map(lambda t: Expression.combine(*t)),
    st.tuples(st.sampled_from(BINARY), c, c).map(lambda t: Expression.combine(*t))), max_leaves=10)


def examples(n: int) -> settings:
    """Deterministic hypothesis settings for ``n`` examples (no deadline: the first example compiles)."""
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
