"""The default selection on a target spanning hundreds of orders of magnitude (issue 48, item 4):
``y = exp(x)`` with ``x`` up to 700 chose the constant although the front held exp(x) at R² 0.95+."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.core.exponent_scaling import fit_scaling
from dgsr.core.parser import parse
from dgsr.estimator.front import front_entry
from dgsr.estimator.model_selection import choose_entry, squared_errors
from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


def _exp_rows() -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(1).uniform(0, 700, 300)
    return x[:, None], np.exp(x)


def test_an_aliased_pick_on_a_few_dominant_rows_does_not_fall_to_the_constant():
    X, y = _exp_rows()
    y = fit_scaling(X, y, ["x0"]).scale_y(y)  # the search's units: y / 2**e_y, largest value in [1, 2)
    columns = as_columns(X)
    # The front of a default fit (seed 1, 6,000 evaluations) before the fix.
    formulas = ["0.007063", "1.513e-153*exp(0.504*x0) - 0.0009432",
                "-7.43e-153*exp(0.5*x0)*(tan(x0) - 0.4463) + 0.0003988"]
    entries = [front_entry(parse(f), columns, y) for f in formulas]
    assert entries[1].r2 > 0.9 and entries[0].r2 < 1e-6
    # Nearly all of each formula's squared error sits on the few largest rows, so the paired
    # standard error of "constant minus exp" is as large as their mean difference.
    errors = squared_errors([e.expression for e in entries], X, y)
    # The tan entry is chosen on these errors, but it aliases (1.6 rows per period): it gives way.
    assert choose_entry(entries, 2, X, "cv", errors) == 1


def test_exp_of_x_up_to_700_is_selected_by_default():
    X, y = _exp_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the note that losses overflow in y's units
        est = SymbolicRegressor(max_time=None, max_evaluations=6000, random_state=1).fit(X, y)
    assert est.equations_["r2"].max() > 0.9  # the front has the law...
    assert est.score(X, y) > 0.9  # ...and the selection takes it (before: the constant, R² -3.5e-12)
