"""core.kernels.structure: the compiled analysis of a structure gives what the Python definitions
give (the additive terms of linear_terms, the program of kernels.codes.encode_symbols, the oracle's
inner constant count, the scoring program of the terms), and the inner fit built from it takes exactly the steps
of the fit of the model that weighted_sum writes out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgsr.core import inner_fit
from dgsr.core.evaluate import as_columns
from dgsr.core.expression import Expression
from dgsr.core.kernels import structure
from dgsr.core.kernels.codes import CODES_BINARY_LAST, CONST_CODE, encode_symbols
from dgsr.core.linear_terms import term_spans, weighted_sum
from dgsr.core.parser import parse
from tests.core.kernels import oracle
from tests.core.sum_strategies import N_VARS, SETTINGS, sums

pytestmark = pytest.mark.timeout(300, method="thread")

X = np.random.default_rng(3).uniform(0.2, 2.0, size=(64, N_VARS))
COLUMNS = as_columns(X)
Y = np.sin(1.3 * X[:, 0] * X[:, 1]) + 0.5 * X[:, 2]


@SETTINGS
@given(sums)
def test_the_structure_is_what_the_python_definitions_give(expr):
    shape = structure.structure(expr.symbols)
    ops, args = encode_symbols(expr.symbols)
    np.testing.assert_array_equal(shape.ops, ops)
    np.testing.assert_array_equal(shape.args, args)
    spans = term_spans(expr.symbols)
    assert [tuple(row) for row in shape.spans.tolist()] == [
        (int(sign), start, end, c0, c1, int(bool(variables))) for sign, start, end, c0, c1, variables in spans]
    assert shape.inner_count == oracle.inner_count(expr.symbols)
    # The scoring program: each term's postfix block, one after another, and the stack it needs.
    n = len(expr.symbols)
    blocks = [np.arange(n - end, n - start) for _, start, end, *_ in spans]
    np.testing.assert_array_equal(shape.sum_ops, ops[np.concatenate(blocks)])
    np.testing.assert_array_equal(shape.sum_args, args[np.concatenate(blocks)])
    np.testing.assert_array_equal(shape.starts, np.cumsum([0] + [len(b) for b in blocks]))
    heights = []
    for block in blocks:
        height = 0
        for op in ops[block]:
            height += 1 if op >= CONST_CODE else (-1 if op <= CODES_BINARY_LAST else 0)
            heights.append(height)
    assert shape.depth == max(heights)
    varying = [i for i, span in enumerate(spans) if span[5]]
    np.testing.assert_array_equal(shape.varying, varying)
    terms = [Expression._trusted(expr.symbols[s[1]:s[2]], expr.constants[s[3]:s[4]]) for s in spans]
    assert shape.varying_size == (weighted_sum([terms[i] for i in varying], np.ones(len(varying)), 0.0).size
                                  if varying else 0)


@SETTINGS
@given(sums, st.sampled_from([1, 3]))
def test_the_inner_fit_takes_the_steps_of_the_written_out_model(expr, steps):
    """The model built inside the compiled call is the one weighted_sum writes out over the
    distinct varying terms (so the same program, the same start and the same steps: equal to the
    last bit), and the copies of a repeated term take its one fitted copy's constants."""
    if inner_fit.inner_constant_count(expr) == 0:
        return
    shape = structure.structure(expr.symbols)
    fitted, passes, status = structure.fit_structure(shape, expr.constants, COLUMNS, Y, steps, tau=1e-3,
                                                         ftol=1.5e-8, exact=1e-26, rel_tol=1e-9)
    written_out = inner_fit.fit_written_out(expr, COLUMNS, Y, steps)  # the model as an expression, encoded
    if status == 2:  # collinear: the compiled call declines, the written-out fit takes the lstsq start
        return
    assert passes == written_out.passes
    if fitted is None:
        assert written_out.expression is expr
    else:
        assert tuple(fitted.tolist()) == written_out.expression.constants


def test_a_repeated_term_is_recognised_by_its_constants_too():
    same = parse("sin(1.5*x0) + x1 + sin(1.5*x0)")
    other = parse("sin(1.5*x0) + x1 + sin(1.6*x0)")
    y = np.sin(1.2 * X[:, 0]) + X[:, 1]
    for expr, copies_tied in ((same, True), (other, False)):
        fitted, _, status = structure.fit_structure(structure.structure(expr.symbols), expr.constants,
                                                        COLUMNS, y, 5, tau=1e-3, ftol=1.5e-8, exact=1e-26,
                                                        rel_tol=1e-9)
        assert status == 0 and fitted is not None
        assert (fitted[0] == fitted[-1]) == copies_tied
