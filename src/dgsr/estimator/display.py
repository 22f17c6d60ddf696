"""The fitted front as people read it: the ``equations_`` table (simplified by SymPy within a time
cap, in the user's column names and units) and a row as text.

The functions take the fitted values they read; the estimator keeps the simplified rows and
the seconds left for simplifying between calls (``SymbolicRegressor._simplified_rows``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import sympy
from sklearn.utils.validation import check_is_fitted

from dgsr.core.display import FrontTable, equation_text
from dgsr.core.exponent_scaling import Scaling
from dgsr.core.expression import Expression
from dgsr.core.pareto import front_scores
from dgsr.core.simplify import (
    complexity,
    display_order,
    exact_fractions,
    exact_half_exponents,
    factors_into_roots,
    half_angles,
    merged_logs,
    merged_powers,
    multiplied_out,
    simplify,
    whole_numbers,
)
from dgsr.core.units import UnitCheck
from dgsr.estimator.fit_units import unit_columns
from dgsr.estimator.front import FrontEntry
from dgsr.estimator.interrupts import warn_interrupted
from dgsr.estimator.user_warnings import entry_point
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

# Total seconds of SymPy simplification for the whole front, and per expression.
_SIMPLIFY_TOTAL, _SIMPLIFY_EACH = 10.0, 1.0
DIGITS = 4  # significant digits of constants in the displayed equations


def simplify_seconds(max_time: float | None, start: float) -> float:
    """Seconds of SymPy simplification allowed: at most 10, and within max_time when possible."""
    if max_time is None:
        return _SIMPLIFY_TOTAL
    left = max_time - (time.perf_counter() - start)
    return max(min(_SIMPLIFY_TOTAL, left), 0.5)


def equations_table(entries: Sequence[FrontEntry], scaling: Scaling, best_index: int,
                    exprs: dict[int, sympy.Expr], units: UnitCheck | None = None) -> pd.DataFrame:
    """The ``equations_`` table of the front ``entries`` whose rows simplified are ``exprs``: sizes
    and scores from the search's units (scale-free), losses in the user's units (``scaling``; a
    loss beyond the float range shows as inf or 0), ``best_index`` marked as selected; with
    ``units``, which rows are dimensionally consistent (:func:`dgsr.estimator.fit_units.unit_columns`)."""
    rows = []
    for i, (e, score) in enumerate(zip(entries, front_scores(entries))):
        expr = exprs[i]
        rows.append({"complexity": e.size, "loss": scaling.unscale_loss(e.mse), "r2": e.r2, "score": float(score),
                     "equation": equation_text(expr, DIGITS), "sympy": expr,
                     "simplified_size": complexity(expr)})
    table = FrontTable(rows, columns=["complexity", "loss", "r2", "score", "equation", "sympy", "simplified_size"])
    for name, values in unit_columns(entries, units).items():
        table[name] = values
    table.selected_row = best_index
    return table


def simplify_rows(done: dict[int, sympy.Expr], rows: Sequence[int], expressions: Sequence[Expression],
                  names: Sequence[str], deadline: float, signs: Sequence[int] | None = None,
                  magnitudes: Sequence[Sequence[float]] | None = None) -> None:
    """Add ``rows`` of ``expressions`` (user units, variables ``x0..``) to ``done`` as SymPy in the
    column ``names``, simplified until ``deadline`` (a ``time.perf_counter()``), at most 1 s each.

    ``signs``: per column, 1 where every training value is positive, -1 where every one is
    negative, 0 otherwise. Where a column has a sign, the row is also simplified with that sign
    assumed (``x*sqrt(y/x**2)`` is ``sqrt(y)`` for a positive ``x``), and, where every column is
    positive, with powers of one exponent merged (``sqrt(a)*sqrt(b)`` as ``sqrt(a*b)``) and sums
    of logarithms merged. Each form is also tried with positive factors moved into its roots
    (:func:`dgsr.core.simplify.factors_into_roots`), and with ``c - c*cos(w)`` as
    ``2*c*sin(w/2)**2`` (:func:`dgsr.core.simplify.half_angles`); the simplified form is also tried
    multiplied out, where constants cancel to float noise
    (:func:`dgsr.core.simplify.multiplied_out`). The smallest form is kept (of equal size, the one
    with fewer floats that are not whole, :func:`dgsr.core.simplify.display_order`), the one
    simplified without signs on a tie (the same function on the training data's signs), among those that
    take the fitted expression's values at the columns' typical values (else the expression). Its
    floats that are simple fractions to float noise show exactly where that is no longer
    (:func:`dgsr.core.simplify.exact_fractions`).

    ``magnitudes``: per column, typical magnitudes on the training rows
    (:func:`dgsr.estimator.fit_front.column_magnitudes`), at which a term counts as float noise
    (:func:`dgsr.core.simplify.without_float_noise`) and the forms are checked (with the
    columns' signs); without them every column counts as 1 and no form is checked."""
    # SymPy works on x0, x1, ... and the user's names come in last, so a column called E, I or
    # "a b" is only ever a Symbol's name, and simplification does not depend on the names.
    rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(str(n)) for i, n in enumerate(names)}
    signed = _signed_symbols(signs)
    positive = frozenset(s for s, t in signed.items() if t.is_positive)
    probes = [{f"x{i}": float(m[k]) for i, m in enumerate(magnitudes)} for k in range(len(magnitudes[0]))] \
        if magnitudes else []
    points = [{sympy.Symbol(name): sympy.Float(-v if signs and signs[int(name[1:])] < 0 else v)
               for name, v in probe.items()} for probe in probes]
    for i in rows:
        if i in done:
            continue
        raw = expressions[i].to_sympy()
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        form = simplify(raw, timeout=cap, probes=probes) if cap > 0.05 else raw
        candidates = [factors_into_roots(form)]
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        used = {s: t for s, t in signed.items() if s in raw.free_symbols}
        if used and cap > 0.05:
            plain = {t: s for s, t in used.items()}
            with_signs = simplify(raw.xreplace(used), timeout=cap, probes=probes).xreplace(plain)
            signed_forms = [with_signs]
            if len(used) == len(raw.free_symbols) and all(t.is_positive for t in used.values()):
                # sqrt(a)*sqrt(b) as sqrt(a*b), log(b) - log(a) as log(b/a): a, b > 0 here
                signed_forms += [merged_powers(with_signs), merged_logs(with_signs), merged_logs(form)]
            candidates += [c for f in signed_forms for c in (f, factors_into_roots(f, positive))]
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        if cap > 0.05:
            candidates.append(multiplied_out(form, timeout=cap, probes=probes))
        # Exact half exponents first: on a tie, (m1 + m2)**(1/2) rather than (m1 + m2)**0.5.
        forms = [exact_half_exponents(form), form,
                 *(exact_half_exponents(whole_numbers(c)) for c in [*candidates, *map(half_angles, candidates)])]
        # the smallest (the first on a tie) that is still the fitted function on the data
        form = next((f for f in sorted(forms, key=display_order) if _agrees(raw, f, points)), raw)
        exact = exact_fractions(form)
        done[i] = (exact if complexity(exact) <= complexity(form) else form).xreplace(rename)


def _agrees(raw: sympy.Expr, form: sympy.Expr, points: list[dict[sympy.Symbol, sympy.Float]]) -> bool:
    """Whether ``form`` takes ``raw``'s values at ``points`` (typical values of the columns), to
    1e-6 of ``raw``'s largest there: whatever a rewriting did, the form shown is the function fitted."""
    if not points or form == raw:
        return True
    pairs = []
    for point in points:
        expected = _value_at(raw, point)
        if expected is None:  # outside the fitted function's domain: nothing to compare
            continue
        shown = _value_at(form, point)
        if shown is None:
            return False
        pairs.append((expected, shown))
    scale = max((abs(e) for e, _ in pairs), default=0.0)
    return all(abs(e - s) <= 1e-6 * scale for e, s in pairs)


def _value_at(expr: sympy.Expr, point: dict[sympy.Symbol, sympy.Float]) -> float | None:
    """``expr``'s real value at ``point`` (its variables by name), or None where it has none."""
    values = {s: point.get(sympy.Symbol(s.name), sympy.Float(1.0)) for s in expr.free_symbols}
    try:
        value = complex(expr.xreplace(values).evalf(30))
    except (TypeError, ValueError, OverflowError):
        return None
    finite = np.isfinite(value.real) and abs(value.imag) <= 1e-12 * max(abs(value.real), 1e-300)
    return float(value.real) if finite else None


def _signed_symbols(signs: Sequence[int] | None) -> dict[sympy.Symbol, sympy.Symbol]:
    """``x_i`` -> ``x_i`` assumed positive (or negative) for the columns of one sign."""
    if not signs:
        return {}
    return {sympy.Symbol(f"x{i}"): sympy.Symbol(f"x{i}", positive=True) if s > 0 else sympy.Symbol(f"x{i}", negative=True)
            for i, s in enumerate(signs) if s}


def equation_line(table: pd.DataFrame, i: int) -> str:
    """Row ``i`` of an ``equations_`` table as text (its ``equation``, else its SymPy form)."""
    column = table.get("equation")
    return str(column.iloc[i]) if column is not None else str(table["sympy"].iloc[i])


class FrontTableView:
    """``equations_`` of a fitted :class:`dgsr.SymbolicRegressor`: built on first access, with its
    rows simplified within the time ``fit`` left for it, and kept."""

    @property
    @entry_point
    def equations_(self) -> pd.DataFrame:
        """The fitted front as a table (see the class docstring), built on first access (one per target: a list)."""
        if self._outputs() is not None:
            return [o.equations_ for o in self._outputs()]
        table = self._built_table()
        if table is None:
            check_is_fitted(self, "expression_")
            exprs = self._simplified_rows(range(len(self._front)))
            table = self._equations = equations_table(self._front, self._scaling, self.best_index_, exprs,
                                                      getattr(self, "_units", None))
        return table

    @equations_.setter
    def equations_(self, table: pd.DataFrame) -> None:
        self._equations = table

    def _built_table(self) -> pd.DataFrame | None:
        """The ``equations_`` table if it exists already (built, set, or stored by a pickle of
        0.9.0 and earlier, which kept the table itself under ``equations_``), else None."""
        table = self.__dict__.get("_equations")
        return self.__dict__.get("equations_") if table is None else table

    def _simplified_rows(self, rows: Any) -> dict[int, sympy.Expr]:
        """Rows of the front as SymPy in the user's column names, simplified within the seconds
        ``fit`` left for it (``_simplify_seconds``, spent as they are used) and kept, so
        ``sympy()`` of one row and the whole table agree. A first Ctrl-C while simplifying leaves
        the rest unsimplified (:mod:`dgsr.estimator.interrupts`), a second one aborts."""
        done = self.__dict__.setdefault("_sympy_rows", {})
        todo = [i for i in rows if i not in done]
        try:
            self._simplify_into(todo, done)
        except INTERRUPTS as err:
            if getattr(self, "_interrupted", False) or not is_interrupt(err):
                raise
            self._interrupted, self.stop_reason_ = True, "interrupted"
            warn_interrupted("simplification", "the constants are final")
            self._simplify_seconds = 0.0
            self._simplify_into(todo, done)
        return done

    def _simplify_into(self, rows: list[int], done: dict[int, sympy.Expr]) -> None:
        deadline = time.perf_counter() + getattr(self, "_simplify_seconds", 0.0)
        try:
            simplify_rows(done, rows, self.expressions_, self.selected_features_, deadline,
                          getattr(self, "_column_signs", None), getattr(self, "_column_magnitudes", None))
        finally:
            self._simplify_seconds = max(deadline - time.perf_counter(), 0.0)
