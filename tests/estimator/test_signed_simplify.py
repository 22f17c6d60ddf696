"""Displayed formulas simplified with the signs the columns have on the training rows
(dgsr.estimator.display.simplify_rows): ``a*sqrt(b/a**2)`` is ``sqrt(b)`` where ``a`` is
positive, and stays as it is where ``a`` takes both signs."""

from __future__ import annotations

import json
import time
import warnings

import numpy as np
import pandas as pd
import sympy

from dgsr import SymbolicRegressor
from dgsr.core.parser import parse
from dgsr.estimator import display
from dgsr.estimator.display import simplify_rows

A, B = sympy.symbols("a b")


def _shown(text: str, signs) -> sympy.Expr:
    done: dict = {}
    simplify_rows(done, [0], [parse(text, ["x0", "x1"])], ["a", "b"], time.perf_counter() + 10, signs)
    return done[0]


def test_a_column_of_one_sign_simplifies_what_no_sign_cannot():
    assert _shown("x0*sqrt(x1/x0**2)", (1, 0)) == sympy.sqrt(B)
    assert _shown("x0*sqrt(x1/x0**2)", (-1, 0)) == -sympy.sqrt(B)
    unsigned = _shown("x0*sqrt(x1/x0**2)", (0, 0))
    assert unsigned == _shown("x0*sqrt(x1/x0**2)", None) and sympy.sqrt(B) != unsigned
    assert not any(s.is_positive for s in _shown("x0*sqrt(x1/x0**2)", (1, 0)).free_symbols)  # plain symbols


def test_roots_of_positive_columns_merge_and_keep_their_values():
    shown = _shown("2*sqrt(x0)*sqrt(x1) + x0", (1, 1))
    assert shown == 2 * sympy.sqrt(A * B) + A
    # Where no column has a sign nothing is merged: sqrt(a)*sqrt(b) is not sqrt(a*b) for a, b < 0
    # (it is where one of them is positive).
    assert _shown("2*sqrt(x0)*sqrt(x1) + x0", (0, 0)).has(sympy.sqrt(B))
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.1, 5, 40), rng.uniform(0.1, 5, 40)
    np.testing.assert_allclose(sympy.lambdify((A, B), shown)(a, b), 2 * np.sqrt(a) * np.sqrt(b) + a, rtol=1e-12)


def test_the_signed_form_is_kept_only_where_it_is_smaller():
    # log(b/a) reads log(b) - log(a) with positive symbols after some rewrites: never larger than shown before.
    shown = _shown("log(x1/x0)", (1, 1))
    assert sympy.count_ops(shown) <= sympy.count_ops(sympy.log(B / A))


def test_the_fit_passes_the_columns_signs_and_magnitudes_and_the_model_file_keeps_them(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(1, 3, 60), "b": rng.uniform(-1, 3, 60), "c": rng.uniform(-3e-6, -1e-6, 60)})
    y = X.a * X.b - 1e6 * X.c
    seen, magnitudes = [], []

    def spy(done, rows, expressions, names, deadline, signs=None, column_magnitudes=None):
        seen.append(tuple(signs or ()))
        magnitudes.append(column_magnitudes)
        return simplify_rows(done, rows, expressions, names, deadline, signs, column_magnitudes)

    monkeypatch.setattr(display, "simplify_rows", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_evaluations=300, max_time=None, random_state=0).fit(X, y)
    est.sympy()
    assert seen[-1] == (1, 0, -1)
    # the 5th, 50th and 95th percentiles of each column's magnitudes, in the user's units
    for column, typical in zip(X.columns, magnitudes[-1]):
        np.testing.assert_allclose(typical, np.percentile(np.abs(X[column]), [5, 50, 95]))
    path = est.save(tmp_path / "m.json")
    doc = json.loads(path.read_text())
    doc["front"][0]["sympy"] = None  # simplified again when read, with the stored signs and magnitudes
    path.write_text(json.dumps(doc))
    assert len(SymbolicRegressor.from_file(path).equations_) == len(est.equations_)
    assert seen[-1] == (1, 0, -1)
    np.testing.assert_allclose(magnitudes[-1], magnitudes[0])


def test_a_positive_column_moves_into_a_root_and_logs_merge_in_the_table():
    # sqrt(x0**2*x1**2/x2**2 - pi**2)/x1 is sqrt(x0**2/x2**2 - pi**2/x1**2) only where x1 > 0.
    done: dict = {}
    text = "sqrt(x0**2*x1**2/x2**2 - 9.869604401089358)/x1"
    simplify_rows(done, [0], [parse(text, ["x0", "x1", "x2"])], ["w", "d", "c"], time.perf_counter() + 10, (1, 1, 1))
    w, d, c = sympy.symbols("w d c")
    assert done[0] == sympy.sqrt(w**2 / c**2 - sympy.pi**2 / d**2)  # a snapped pi**2 shows as pi**2
    done = {}
    simplify_rows(done, [0], [parse(text, ["x0", "x1", "x2"])], ["w", "d", "c"], time.perf_counter() + 10, (1, 0, 1))
    assert done[0].has(1 / d) or done[0].has(d**-1)  # d takes both signs: it stays outside the root
    assert _shown("x0*x1*(log(x1) - log(x0))", (1, 1)) == A * B * sympy.log(B / A)
    assert _shown("x0*x1*(log(x1) - log(x0))", (0, 0)) != A * B * sympy.log(B / A)


def test_the_table_shows_a_squared_sine_for_a_constant_minus_its_cosine():
    # SymPy leaves 0.5 - 0.5*cos(2*a) as it is; sin(a)**2 is the same function, and smaller.
    assert _shown("0.5 - 0.5*cos(2*x0)", (0, 0)) == sympy.sin(A) ** 2


def test_the_table_shows_a_fitted_reciprocal_exactly():
    assert _shown("25/(x0 + 0.029411764705882353)", (0, 0)) == 25 / (A + sympy.Rational(1, 34))
    assert _shown("25/(x0 + 0.0294)", (0, 0)).has(sympy.Float(0.0294))


def test_a_detour_whose_constants_cancel_is_shown_multiplied_out():
    # fitted constants (1/(24*pi) and 2*pi/3 to 15 digits): a's linear term and the constant
    # cancel to float noise
    shown = _shown("x0*(x1 + 0.0132629119243246*(3*x1 - 4*pi)**2 - 2.0943951023932)", None)
    assert shown.free_symbols == {A, B} and not shown.has(sympy.pi)
    coefficient, rest = shown.as_coeff_Mul()
    assert rest == A * B**2 and abs(float(coefficient) - 9 * 0.0132629119243246) < 1e-12
    assert _shown("x0*(x1*cos(x0) + 1)", None) == A * (B * sympy.cos(A) + 1)  # nothing cancels: as it was


def test_a_peak_on_a_baseline_is_shown_as_the_peak():
    # 0.24.0 showed this fit as the constant 0.45: multiplied out, the peak split into
    # 7.8e-20*exp(14.6*a)*exp(-1.18*a**2), whose coefficient then passed for float noise.
    shown = _shown("0.450000000012 + 3.40000000007*exp(-1.17647058823*sq(x0 - 6.20000000003))", [1, 1])
    assert shown.free_symbols == {A}
    for a in (4.0, 6.2, 7.5):
        assert abs(float(shown.subs(A, a)) - (0.45 + 3.4 * np.exp(-(a - 6.2) ** 2 / 0.85))) < 1e-8


def test_a_term_large_on_the_data_is_not_taken_for_float_noise():
    # A fit to Planck's law in SI units (wavelengths near 1e-6 m): beside 4.1e11 the coefficient
    # 4.5e-12 looks like float noise, but its term is near 1e13 on the data. Without the columns'
    # magnitudes the table showed the constant -411375678463.
    text = "4.493454123053713e-12*sq(x0/(sq(x1)/(sqrt(x1*x0) - 0.03943441011594011))) - 411375678462.6237"
    typical = [(3000.0, 5000.0, 8000.0), (4e-7, 1e-6, 2.5e-6)]
    done: dict = {}
    simplify_rows(done, [0], [parse(text, ["x0", "x1"])], ["T", "lam"], time.perf_counter() + 10, (1, 1), typical)
    t, lam = sympy.symbols("T lam")
    assert done[0].free_symbols == {t, lam}
    value = 4.493454123053713e-12 * (5000.0 * (np.sqrt(5e-3) - 0.03943441011594011) / 1e-12) ** 2 - 411375678462.6237
    assert abs(float(done[0].subs({t: 5000.0, lam: 1e-6})) - value) < 1e-9 * abs(value)


def test_a_rewriting_that_changes_the_function_is_never_shown(monkeypatch):
    # Whatever a rewriting gets wrong (here one that returns the baseline alone), the table shows
    # a form that takes the fitted function's values at the columns' typical values.
    monkeypatch.setattr(display, "multiplied_out", lambda form, timeout, probes=(): sympy.Float(0.45))
    text, typical = "0.45 + 3.4*exp(-1.17647058823*sq(x0 - 6.2))", [(1.0, 5.5, 9.5)]
    done: dict = {}
    simplify_rows(done, [0], [parse(text, ["x0"])], ["a"], time.perf_counter() + 10, (1,), typical)
    assert done[0].free_symbols == {A}
    assert abs(float(done[0].subs(A, 5.5)) - (0.45 + 3.4 * np.exp(-1.17647058823 * 0.7**2))) < 1e-9
    done = {}  # without the columns' magnitudes (a model file of 0.24.0) nothing can be checked
    simplify_rows(done, [0], [parse(text, ["x0"])], ["a"], time.perf_counter() + 10, (1,))
    assert done[0] == sympy.Float(0.45)


def test_a_power_fitted_to_a_half_is_shown_as_an_exact_root():
    # exp(0.5*log(u)) is how a free exponent is written; SymPy shows it as u**0.5, which neither
    # merges with sqrt(b) nor proves equal to the law's sqrt(a + b).
    shown = _shown("x0**1.5/(sqrt(x1)*exp(0.5*log(x0 + x1)))", (1, 1))
    assert not shown.atoms(sympy.Float), shown
    assert sympy.simplify(shown - A**sympy.Rational(3, 2) / (sympy.sqrt(B) * sympy.sqrt(A + B))) == 0
    # an exponent that is no half stays as fitted
    assert _shown("exp(0.65*log(x0 + x1))", (1, 1)).atoms(sympy.Float) == {sympy.Float(0.65)}
