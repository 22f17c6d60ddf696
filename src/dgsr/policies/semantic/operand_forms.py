"""The forms the operand library holds (:mod:`dgsr.policies.semantic.operand_library` builds
it from them and fits the parametric ones).

What goes in (all over the data's own variables, at most 6 nodes):

* every variable ``x_i``, and the unary functions of it that are defined on the rows;
* *inner-constant forms* that a law often needs and that growing mutations reach only through
  worse intermediate expressions: ``exp(c*x)``, ``sin(c*x)``, ``cos(c*x)`` for a few ``c``, and
  shifts ``sq(x - c)``, ``inv(x + c)``, ``inv(c + sq(x))``, ``sqrt(c + sq(x))`` with ``c`` taken
  from the data (quartiles of ``x``) or simple values; the search fits those constants later;
* pairwise products, quotients, sums and differences of variables, ``sq(x_i - x_j)``,
  ``sq(x_i) + sq(x_j)``, the distance ``sqrt(sq(x_i) + sq(x_j))``, and ``exp``, ``sin``, ``cos``
  of a product or quotient (``exp(-x_i*x_j)``, ``cos(x_i/x_j)``), for the variables most related
  to ``y`` when there are many.

With ``fit_parametric`` (the semantic policy's default) the library also holds *parametric*
operands, exempt from the size limit, whose inner constants are fitted to ``y`` as the library
is built: for the variables most related to ``y``, ``sin(c*x + d)``; for each pair of them,
sines and cosines of a shifted product, of ``c*u + d`` (``u`` the pair's product or sum), ``sq(u - c)``, ``inv(u + c)``
and a two-variable bump; a bump ``inv(sum_i sq(w_i*(x_i - a_i)) + c)`` over the 3, 4 and 5
most related variables; and the chains ``op(a*u + b)`` of :mod:`~dgsr.policies.semantic.parametric_forms`
over the most related variables and, in a fit with units, over the dimensionless groups of the
variables (:func:`dgsr.core.units.dimensionless_groups`).

With many columns the single-variable forms are built for the ``max_rich_variables`` variables
most related to ``y`` (rank correlation of any form with ``y``) and pairs for the
``max_pair_variables`` first of them; every variable stays in the library as itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import binary_names, unary_names

__all__ = ["pair_forms", "pair_root_forms", "parametric_bump", "parametric_pair_forms", "parametric_single_forms",
           "ratios_and_products", "single_variable_forms"]

_C = Expression.constant


def _var(i: int) -> Expression:
    return Expression.variable(i)


def _u(op: str, a: Expression) -> Expression:
    return Expression.combine(op, a)


def _b(op: str, a: Expression, b: Expression) -> Expression:
    return Expression.combine(op, a, b)


def single_variable_forms(i: int, x: np.ndarray, allowed: frozenset[str]) -> Iterable[Expression]:
    v = _var(i)
    yield v
    for op in unary_names():  # user-defined operators too, when allowed
        if op in allowed:
            yield _u(op, v)
    if {"mul", "sq"} <= allowed:
        yield _b("mul", v, _u("sq", v))  # x**3
    if "mul" in allowed:
        for c in (-1.0, 2.0, -2.0, 0.5, -0.5, math.pi, 2 * math.pi):
            for op in ("exp", "sin", "cos"):
                if op in allowed and (op == "exp" or c > 0):
                    yield _u(op, _b("mul", _C(c), v))
    finite = x[np.isfinite(x)]
    if not len(finite):
        return
    q = np.quantile(finite, [0.25, 0.5, 0.75])
    shifts = sorted({float(f"{s:.3g}") for s in (*q, 1.0, -1.0)} - {0.0})
    for c in shifts:
        if {"sq", "sub"} <= allowed:
            yield _u("sq", _b("sub", v, _C(c)))
        if {"inv", "add"} <= allowed:
            yield _u("inv", _b("add", v, _C(c)))
    for c in (1.0, float(f"{np.median(finite * finite):.3g}")):
        if c <= 0:
            continue
        if {"inv", "add", "sq"} <= allowed:
            yield _u("inv", _b("add", _C(c), _u("sq", v)))
        if {"sqrt", "add", "sq"} <= allowed:
            yield _u("sqrt", _b("add", _C(c), _u("sq", v)))
        if {"sqrt", "sub", "sq"} <= allowed:
            yield _u("sqrt", _b("sub", _C(c), _u("sq", v)))


def pair_forms(i: int, j: int, allowed: frozenset[str]) -> Iterable[Expression]:
    a, b = _var(i), _var(j)
    for op in binary_names():
        if op in allowed:
            yield _b(op, a, b)
    if "div" in allowed:
        yield _b("div", b, a)
    if "sub" in allowed:
        yield _b("sub", b, a)
    if {"sq", "sub"} <= allowed:
        yield _u("sq", _b("sub", a, b))
    if {"sq", "add"} <= allowed:
        yield _b("add", _u("sq", a), _u("sq", b))
    if {"mul", "sq"} <= allowed:
        yield _b("mul", _u("sq", a), b)
        yield _b("mul", a, _u("sq", b))
    if {"div", "sq"} <= allowed:
        yield _b("div", a, _u("sq", b))
        yield _b("div", b, _u("sq", a))
    if {"mul", "sqrt"} <= allowed:
        yield _u("sqrt", _b("mul", a, b))
    if {"sqrt", "add", "sq"} <= allowed:
        yield _u("sqrt", _b("add", _u("sq", a), _u("sq", b)))  # a distance
    for inner in ("mul", "div"):
        if inner not in allowed:
            continue
        for op in ("exp", "sin", "cos"):
            if op in allowed:
                yield _u(op, _b(inner, a, b))
        if {"exp", "mul"} <= allowed:
            yield _u("exp", _b("mul", _C(-1.0), _b(inner, a, b)))


def pair_root_forms(i: int, j: int, xi: np.ndarray, xj: np.ndarray,
                     allowed: frozenset[str]) -> Iterable[Expression]:
    """``sqrt(c - sq(u))`` and ``sqrt(c + sq(u))`` for ``u`` the ratio (either way) or product of
    two variables: the single-variable ``sqrt(c +- sq(x))`` forms, for a dimensionless ratio
    (a Lorentz factor ``sqrt(1 - v**2/c**2)``, a cosine from a sine ``sqrt(1 - (a/b)**2)``). Seven
    nodes, one more than the library's limit, so they are built apart; ``c`` starts at 1 (the
    search fits it later)."""
    if not {"sqrt", "sq"} <= allowed:
        return
    a, b = _var(i), _var(j)
    with np.errstate(all="ignore"):
        forms = [("div", _b("div", a, b), xi / xj), ("div", _b("div", b, a), xj / xi), ("mul", _b("mul", a, b), xi * xj)]
    for op, u, values in forms:
        if op not in allowed or not np.all(np.isfinite(values)):
            continue
        if "sub" in allowed and float(np.max(np.abs(values))) < 1.0:  # defined on every row
            yield _u("sqrt", _b("sub", _C(1.0), _u("sq", u)))
        if "add" in allowed:
            yield _u("sqrt", _b("add", _C(1.0), _u("sq", u)))


def parametric_pair_forms(i: int, j: int, xi: np.ndarray, xj: np.ndarray,
                           allowed: frozenset[str]) -> Iterable[list[Expression]]:
    """Operands of two variables with constants inside a nonlinear part, each as a list of
    starting points: ``sin(c*(x_i + a)*(x_j + b))``, ``sin(c*u + d)``, ``sq(u - c)``,
    ``inv(u + c)`` with ``u`` the product or sum of the two, and the bump
    ``inv(sq(x_i - a) + sq(x_j - b) + c)``. A sine's frequency has many local optima, so it starts
    at a half and at a whole period over the range of its argument (and the shifted product
    from three shift pairs)."""
    a, b = _var(i), _var(j)
    with np.errstate(all="ignore"):
        shift_i, shift_j = -float(np.min(xi)), -float(np.min(xj))  # makes both factors >= 0
        forms = [("mul", _b("mul", a, b), xi * xj), ("add", _b("add", a, b), xi + xj)]
    forms = [f for f in forms if f[0] in allowed]

    def periods(u: np.ndarray) -> list[float]:
        spread = float(np.ptp(u)) if np.all(np.isfinite(u)) else 0.0
        ok = spread > 0 and math.isfinite(spread)
        return [k * math.pi / spread for k in (1.0, 2.0, 4.0)] if ok else [1.0]

    # Shift starts: both factors non-negative, centred, both non-positive (the law's zero
    # crossings may lie anywhere in the range; LM from one start finds only the nearest).
    with np.errstate(all="ignore"):
        shift_pairs = [(shift_i, shift_j), (-float(np.median(xi)), -float(np.median(xj))),
                       (-float(np.max(xi)), -float(np.max(xj)))]
    shift_pairs = [p for p in shift_pairs if all(map(math.isfinite, p))]
    for trig in ("sin", "cos"):
        if {trig, "mul", "add"} <= allowed:
            starts = []
            for si, sj in shift_pairs:
                with np.errstate(all="ignore"):
                    values = (xi + si) * (xj + sj)
                product = _b("mul", _b("add", a, _C(si)), _b("add", b, _C(sj)))
                starts.extend(_u(trig, _b("mul", _C(c), product)) for c in periods(values))
            yield starts
            for _, u, values in forms:
                yield [_u(trig, _b("add", _b("mul", _C(c), u), _C(0.0))) for c in periods(values)]
    if {"inv", "sq", "sub", "add"} <= allowed:
        # A bump: the inverse of a sum of shifted squares (a Lorentzian / Cauchy profile),
        # centred on the data to start.
        with np.errstate(all="ignore"):
            ci, cj = float(np.median(xi)), float(np.median(xj))
            width = float(np.var(xi) + np.var(xj))
        if all(map(math.isfinite, (ci, cj, width))) and width > 0:
            bump = _b("add", _b("add", _u("sq", _b("sub", a, _C(ci))), _u("sq", _b("sub", b, _C(cj)))), _C(width))
            yield [_u("inv", bump)]
    for _, u, values in forms:
        middle = float(np.median(values)) if np.all(np.isfinite(values)) else 0.0
        if {"sq", "sub"} <= allowed:
            yield [_u("sq", _b("sub", u, _C(middle)))]
        if {"inv", "add"} <= allowed:
            yield [_u("inv", _b("add", u, _C(1.0 - float(np.min(values)) if np.all(np.isfinite(values)) else 1.0)))]


def parametric_bump(variables: Sequence[int], columns: np.ndarray, allowed: frozenset[str]) -> Expression | None:
    """The start of ``inv(sum_i sq(w_i*(x_i - a_i)) + c)`` over three or more ``variables``: a
    bump (Lorentzian profile) in several variables, each with its own width, so one that does
    not matter can fade (its ``w_i`` fitted to ~0). Centred on the medians, ``w_i = 1/std(x_i)``,
    ``c`` the number of variables; None where the operators or the data do not allow it."""
    if len(variables) < 3 or not {"inv", "sq", "mul", "sub", "add"} <= allowed:
        return None
    total: Expression | None = None
    with np.errstate(all="ignore"):
        for i in variables:
            x = columns[i]
            centre, scale = float(np.median(x)), float(np.std(x))
            if not (math.isfinite(centre) and math.isfinite(scale) and scale > 0):
                return None
            term = _u("sq", _b("mul", _C(1.0 / scale), _b("sub", _var(i), _C(centre))))
            total = term if total is None else _b("add", total, term)
    return _u("inv", _b("add", total, _C(float(len(variables)))))


def parametric_single_forms(i: int, x: np.ndarray, allowed: frozenset[str]) -> Iterable[list[Expression]]:
    """``sin(c*x_i + d)`` (a frequency and a phase, which the fixed grid of single-variable forms
    lacks), starting at a half, a whole and two periods over the variable's range."""
    if not {"sin", "mul", "add"} <= allowed:
        return
    spread = float(np.ptp(x)) if np.all(np.isfinite(x)) else 0.0
    if not (spread > 0 and math.isfinite(spread)):
        return
    v = _var(i)
    yield [_u("sin", _b("add", _b("mul", _C(k * math.pi / spread), v), _C(0.0))) for k in (1.0, 2.0, 4.0)]


def ratios_and_products(variables: Sequence[int], allowed: frozenset[str]) -> list[Expression]:
    """``x_i/x_j`` and ``x_i*x_j`` for each pair of ``variables`` (in index order; those of the
    ``allowed`` operators): the arguments a chain takes besides single variables when no units
    give the dimensionless groups."""
    ordered = sorted(variables)
    ops = [op for op in ("div", "mul") if op in allowed]
    return [_b(op, _var(i), _var(j)) for a, i in enumerate(ordered) for j in ordered[a + 1:] for op in ops]
