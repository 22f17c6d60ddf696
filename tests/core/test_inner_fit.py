"""core.inner_fit: a few Levenberg-Marquardt steps on the constants inside nonlinear parts, with
each additive term's own coefficient solved alongside (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns, evaluate, r2_score
from dgsr.core.inner_fit import fit_inner_constants, inner_constant_count
from dgsr.core.parser import parse
from tests.core.kernels import oracle


@pytest.mark.parametrize("text, inner", [
    ("x0 + x1", 0),
    ("2.5*x0 + 3", 0),  # a term's own coefficient and a constant term: closed form sets them
    ("x0/2 + sin(x1)", 0),
    ("sin(1.3*x0)", 1),
    ("2*sin(1.3*x0 + 0.2)", 2),
    ("sq(x0 - 1.5) + x1*(x2 + 0.7)", 2),
    ("1/(1 + sq(x0 - 1.5))", 2),  # the numerator scales the term
    ("sin(x0)/(x1 + 0.5)", 1),
])
def test_inner_constants_are_those_closed_form_scaling_cannot_set(text, inner):
    assert inner_constant_count(parse(text)) == inner


def _law_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]
    return X, y


def test_a_few_steps_from_a_nearby_start_reach_the_law():
    X, y = _law_data()
    start = parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2")
    columns = as_columns(X)
    before = r2_score(y, evaluate(start, X))
    fit = fit_inner_constants(start, columns, y, steps=10)
    assert fit.expression.symbols == start.symbols  # the structure is kept, the weights dropped
    c = dict(zip(("freq", "shift0", "shift1"), fit.expression.constants))
    assert c["freq"] == pytest.approx(1.3, abs=1e-6)
    # x0 - c and x1 + c: the law's shifts are -0.4 and +0.7
    assert c["shift0"] == pytest.approx(0.4, abs=1e-6) and c["shift1"] == pytest.approx(0.7, abs=1e-6)
    assert before < 0.9 and fit.passes >= 3


def test_fits_are_deterministic_and_a_zero_step_budget_changes_nothing():
    X, y = _law_data()
    start = parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2")
    columns = as_columns(X)
    one = fit_inner_constants(start, columns, y, steps=5)
    two = fit_inner_constants(start, columns, y, steps=5)
    assert one == two
    assert fit_inner_constants(start, columns, y, steps=0).expression is start


def test_a_non_finite_start_is_returned_unchanged():
    X, y = _law_data()
    start = parse("log(x0 - 5) + x1")  # log of negatives on every row
    fit = fit_inner_constants(start, as_columns(X), y, steps=5)
    assert fit.expression is start


@pytest.mark.parametrize("fit_inner_constants", [fit_inner_constants, oracle.fit_inner_constants],
                         ids=["compiled", "numpy oracle"])
def test_a_repeated_term_is_fitted_once_and_its_copies_share_the_fit(fit_inner_constants):
    X, y = _law_data()
    columns = as_columns(X)
    # the sine twice (a sum grown term by term), x2 twice: collinear weights
    start = parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2 + sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2")
    fit = fit_inner_constants(start, columns, y, steps=10)
    assert fit.expression.symbols == start.symbols
    first, second = fit.expression.constants[:3], fit.expression.constants[3:]
    assert first == second  # the copies keep one set of constants
    assert first[0] == pytest.approx(1.3, abs=1e-6)
    assert first[1] == pytest.approx(0.4, abs=1e-6) and first[2] == pytest.approx(0.7, abs=1e-6)
    # the same fit as the sum with each term once
    once = fit_inner_constants(parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2"), columns, y, steps=10)
    assert once.expression.constants == first and once.passes == fit.passes


def test_terms_known_to_be_collinear_take_the_minimum_norm_start_with_the_same_result():
    # x2/x2 is 1 on every row, collinear with the intercept: the compiled fit reports the terms
    # collinear, and a caller that already knows it (the search's one-call valuation) skips that
    # kernel: the same constants and passes as running it again.
    from dgsr.core.inner_fit import INNER_FIT_TOLERANCES
    from dgsr.core.kernels import structure
    from dgsr.core.kernels.fit import fit_weighted_terms

    X, y = _law_data()
    columns = np.ascontiguousarray(as_columns(X))
    start = parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2 + x2/x2")
    shape = structure.structure(start.symbols)
    _, _, status = structure.fit_structure(shape, start.constants, columns, y, 10, **INNER_FIT_TOLERANCES)
    assert status == structure.COLLINEAR
    terms = [parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5))"), parse("x2"), parse("x2/x2")]
    rerun, rerun_passes = fit_weighted_terms(terms, columns, y, 10, **INNER_FIT_TOLERANCES)
    known, known_passes = fit_weighted_terms(terms, columns, y, 10, collinear=True, **INNER_FIT_TOLERANCES)
    assert known.tolist() == rerun.tolist() and known_passes == rerun_passes
    fit = fit_inner_constants(start, columns, y, steps=10)
    assert fit.passes == rerun_passes > 1
    assert fit.expression.constants[:3] == pytest.approx((1.3, 0.4, 0.7), abs=1e-6)
