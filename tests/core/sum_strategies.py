"""Hypothesis strategies shared by the tests of the compiled structure and child valuation:
sums and differences of expressions over three variables, as the search grows them, sometimes
with a term repeated."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, UNARY

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
N_VARS = 3
constants = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -2.5]), st.floats(-3, 3, allow_nan=False))
leaves = st.one_of(st.integers(0, N_VARS - 1).map(Expression.variable), constants.map(Expression.constant))
trees = st.recursive(leaves, lambda c: st.one_of(
    st.tuples(st.sampled_from(UNARY), c).map(lambda t: Expression.combine(*t)),
    st.tuples(st.sampled_from(BINARY), c, c).map(lambda t: Expression.combine(*t))), max_leaves=8)


def chain(parts: list[tuple[str, Expression]]) -> Expression:
    """``parts[0] op1 parts[1] op2 ...`` from the left."""
    expr = parts[0][1]
    for op, term in parts[1:]:
        expr = Expression.combine(op, expr, term)
    return expr


sums = st.lists(st.tuples(st.sampled_from(["add", "sub"]), trees), min_size=1, max_size=4).flatmap(
    lambda parts: st.booleans().map(lambda twice: chain(parts + parts[:1] if twice else parts)))
