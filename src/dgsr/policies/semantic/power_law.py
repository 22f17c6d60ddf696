"""Power-law operands: ``prod_i x_i**a_i`` with exponents read off a regression in log space.

Physical laws are often a monomial times a little more (``m*q**4/(eps**2*h**2*n**2)``,
``p*cos(t)*sin(t)/(eps*r**3)``). Growing ``q**4`` or ``r**-5`` one mutation at a time goes through
intermediate expressions that fit worse than what the search already has, so it rarely gets
there. In log space the monomial part is linear: ``log|y| = sum_i a_i log|x_i| + log|g| + c``, and
least squares over the variables that keep one sign recovers the ``a_i`` (what is left, ``g``,
acts as noise when it does not depend on those variables). Exponents rounded to halves give an
operand of a few powers; the operand library adds it and the semantic policy matches it like any
other operand (a root candidate, or a factor of a product).

Two operands are offered at most: the variables whose exponent lies close to a half-integer
(a variable inside ``g`` gets a fitted exponent that means nothing, and usually lies between
halves), when ``|y|`` is close to that monomial; and the variables whose exponent lies close
to an integer (``sqrt(x**2 + y**2)`` reads as ``x**0.5*y**0.5``, which the library's distance
does better). Rounding the other exponents too gave operands that fit laws of other shapes
well (``1/(1/a + b/c)``) and drew the search away from them.

Where ``|y|`` (or a node's target) *is* a product of powers (the tight misfit) but an exponent
is no half-integer (``x**0.65``, ``x**-1.3``), the operand keeps that exponent as fitted, as a
power ``exp(c*log(x))`` (:func:`dgsr.search.mutations.validity_violation`), which the search's
constant fits then refine. An exponent is snapped to its half-integer only where that costs no
accuracy on the rows it was fitted on (:func:`snapped_exponents`), never by a list.
"""

from __future__ import annotations

import math

import numpy as np

from dgsr.core.expression import Expression

#: Largest |exponent| an operand uses (r**-5 appears in dipole and radiation laws).
MAX_EXPONENT = 5.0
#: A fitted exponent this close to a half-integer counts as that half-integer ("clean").
CLEAN_TOLERANCE = 0.1
#: Half powers are offered only when |y| is this close to the monomial (median absolute log
#: residual, ~5%): sqrt-products otherwise mimic laws of other shapes (1/(1/a + b/c) reads as
#: a**0.3*c**0.75/b**0.7 and draws the search away from the law).
TIGHT_MISFIT = 0.05
#: Exponents are kept as fitted (not halves) only when ``|y|`` is this close to the monomial
#: (median absolute log residual, ~1%): a law that is a product of powers fits within its noise,
#: while laws of other shapes read as monomials leave a few per cent (``1/(1/a + b/c)``: 2.4%).
FREE_MISFIT = 0.01
#: ``y`` itself gets the monomial of its fitted exponents where that monomial explains this share
#: of its variance (a linear fit of it): the law with 1% noise explains 0.9999, the shapes that
#: read as monomials in log space (``1/(1/a + b/c)``) explain less. Judged on y, not in log space,
#: where the relative noise of y's small values inflates the misfit of a true power law.
FREE_R2 = 0.999
#: Reweighting steps of the least-absolute-deviations fit.
_IRLS_STEPS = 12
#: A snapped exponent costs no accuracy when the fit is not significantly worse: chi-squared
#: with one degree of freedom at 5% (a likelihood-ratio test of the snapped against the fitted
#: exponents); the floor stands for float rounding on exact data.
_SNAP_CHI2 = 3.84
_SNAP_FLOOR = 1e-18


def _power(v: Expression, k: int) -> Expression:
    """``v**k`` for k in 1..5 with squares and products (Table 1 has no general power)."""
    sq = Expression.combine("sq", v)
    return {1: v, 2: sq, 3: Expression.combine("mul", v, sq), 4: Expression.combine("sq", sq),
            5: Expression.combine("mul", v, Expression.combine("sq", sq))}[k]


def _factor(i: int, exponent: float) -> Expression:
    """``x_i**|exponent|`` for a positive multiple of a half."""
    v = Expression.variable(i)
    whole = math.floor(abs(exponent) + 1e-9)
    half = abs(exponent) - whole > 0.25
    if whole == 0:
        return Expression.combine("sqrt", v)
    power = _power(v, whole)
    return Expression.combine("mul", power, Expression.combine("sqrt", v)) if half else power


def _free_factor(i: int, exponent: float) -> Expression:
    """``x_i**exponent`` as the power ``exp(c*log(x_i))`` (for a variable that is positive on the data)."""
    v = Expression.variable(i)
    return Expression.combine("exp", Expression.combine("mul", Expression.constant(exponent),
                                                        Expression.combine("log", v)))


def _halves(exponents: np.ndarray) -> np.ndarray:
    """Each exponent rounded to the nearest half, within +-:data:`MAX_EXPONENT`."""
    return np.clip(np.round(2 * exponents) / 2, -MAX_EXPONENT, MAX_EXPONENT)


def _product(factors: list[Expression]) -> Expression | None:
    out: Expression | None = None
    for f in factors:
        out = f if out is None else Expression.combine("mul", out, f)
    return out


def monomial(exponents: dict[int, float]) -> Expression | None:
    """The operand ``prod x_i**e_i`` for exponents that are nonzero multiples of a half (None when
    there is none): the positive powers over the product of the negative ones."""
    top = _product([_factor(i, e) for i, e in sorted(exponents.items()) if e > 0])
    bottom = _product([_factor(i, e) for i, e in sorted(exponents.items()) if e < 0])
    if bottom is None:
        return top
    if top is None:
        return Expression.combine("inv", bottom)
    return Expression.combine("div", top, bottom)


def free_monomial(exponents: dict[int, float], positive: frozenset[int]) -> Expression | None:
    """``prod x_i**e_i`` with any real exponents: half-integers as :func:`monomial` builds them, the
    others as powers ``exp(e*log(x_i))`` (4 significant digits; the search refines them). None when
    a non-half exponent falls on a variable that is not ``positive`` (``x**0.65`` is not real
    there) or there is no exponent."""
    halves = {i: e for i, e in exponents.items()
              if e != 0 and 2 * e == round(2 * e) and abs(e) <= MAX_EXPONENT}
    free = {i: float(f"{e:.4g}") for i, e in exponents.items() if e != 0 and i not in halves}
    if any(i not in positive for i in free):
        return None
    factors = [_free_factor(i, e) for i, e in sorted(free.items())]
    base = monomial(halves) if halves else None
    out = base
    for f in factors:
        out = f if out is None else Expression.combine("mul", out, f)
    return out


def _log_rss(design: np.ndarray, target: np.ndarray, exponents: np.ndarray) -> float:
    """Sum of squared log residuals of ``target`` against ``design`` (its last column the
    intercept) with these ``exponents`` and the intercept refitted."""
    with np.errstate(all="ignore"):
        r = target - design[:, :-1] @ exponents
        r = r - np.mean(r)
        return float(r @ r)


def snapped_exponents(design: np.ndarray, target: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """``exponents`` with each one, closest first, moved to its half-integer where that costs no
    accuracy on these rows: the snapped fit is not significantly worse (a likelihood-ratio test
    at 5%: its residual sum of squares grows by at most :data:`_SNAP_CHI2` times the residual
    variance). A decision per fit, read off the data: a law's 0.65 stays, a fitted 0.5004 on
    noisy rows becomes 0.5."""
    out = np.array(exponents, dtype=np.float64)
    dof = max(len(target) - len(out) - 1, 1)
    base = _log_rss(design, target, out)
    limit = base + _SNAP_CHI2 * base / dof + _SNAP_FLOOR
    halves = _halves(out)
    for k in np.argsort(np.abs(out - halves), kind="stable").tolist():
        if out[k] == halves[k]:
            continue
        trial = out.copy()
        trial[k] = halves[k]
        if _log_rss(design, target, trial) <= limit:
            out = trial
    return out


def positive_variables(columns: np.ndarray, usable: list[int]) -> frozenset[int]:
    """The ``usable`` variables that are positive on every row (where ``x**c`` is real for any ``c``)."""
    return frozenset(i for i in usable if bool(np.all(columns[i] > 0)))


def fitted_exponents(columns: np.ndarray, y: np.ndarray) -> tuple[dict[int, float], float]:
    """Exponents of ``log|y|`` on ``log|x_i|`` for the variables that never change sign or vanish,
    by least absolute deviations, and the median absolute log residual (how far ``|y|`` is
    from a product of powers of them); ``({}, inf)`` when the data cannot say (too few rows,
    ``y`` never nonzero, no such variable)."""
    usable, full = log_design(columns)
    with np.errstate(all="ignore"):
        rows = np.isfinite(y) & (np.abs(y) > 0)
    if full is None or int(rows.sum()) < len(usable) + 5:
        return {}, math.inf
    design = full[rows]  # finite: log_design keeps only columns that never vanish
    with np.errstate(all="ignore"):
        target = np.log(np.abs(y[rows]))
    if not np.all(np.isfinite(target)):
        return {}, math.inf
    coef = np.linalg.lstsq(design, target, rcond=None)[0]
    # Least absolute deviations by reweighting: log|g| has a long tail towards -inf near the
    # zeros of a sign-changing factor g, which drags least squares and not the median.
    for _ in range(_IRLS_STEPS):
        residual = np.abs(target - design @ coef)
        w = 1.0 / np.sqrt(np.maximum(residual, 1e-6))
        step = np.linalg.lstsq(design * w[:, None], target * w, rcond=None)[0]
        if not np.all(np.isfinite(step)):
            break
        coef = step
    if not np.all(np.isfinite(coef)):
        return {}, math.inf
    return {i: float(a) for i, a in zip(usable, coef[:-1])}, float(np.median(np.abs(target - design @ coef)))


def power_law_operands(columns: np.ndarray, y: np.ndarray, free: bool = True) -> list[Expression]:
    """Up to three monomials suggested by ``y``'s log-space regression (see the module docstring);
    ``free``: also the one with the fitted exponents where ``y`` is a product of powers."""
    exponents, misfit = fitted_exponents(columns, y)
    rounded = dict(zip(exponents, _halves(np.array(list(exponents.values()))).tolist()))
    clean = {i: e for i, e in rounded.items() if e != 0 and abs(exponents[i] - e) <= CLEAN_TOLERANCE}
    whole = {i: e for i, e in clean.items() if e == round(e)}
    candidates: list[Expression | None] = []
    for chosen in ((clean, whole) if misfit <= TIGHT_MISFIT else (whole,)):
        candidates.append(monomial(chosen) if chosen else None)
    if free and misfit <= TIGHT_MISFIT:  # y may be a product of powers: its exponents, snapped only where exact
        operand = _free_operand(columns, y, exponents)
        if operand is not None and _explained(operand, columns, y) >= FREE_R2:
            candidates.append(operand)
    out: list[Expression] = []
    for expr in candidates:
        if expr is not None and all(expr.key() != o.key() for o in out):
            out.append(expr)
    return out


def _explained(operand: Expression, columns: np.ndarray, y: np.ndarray) -> float:
    """Share of ``y``'s variance that ``w*operand + b`` explains (least squares; 0 if undefined)."""
    from dgsr.core.evaluate import evaluate_columns

    with np.errstate(all="ignore"):
        v = evaluate_columns(operand, columns)
        ok = np.isfinite(v) & np.isfinite(y)
        if ok.sum() < 3 or float(np.var(y[ok])) <= 0 or float(np.var(v[ok])) <= 0:
            return 0.0
        r = float(np.corrcoef(v[ok], y[ok])[0, 1])
    return r * r if math.isfinite(r) else 0.0


def _free_operand(columns: np.ndarray, y: np.ndarray, exponents: dict[int, float]) -> Expression | None:
    """The monomial of ``y``'s fitted ``exponents``, each snapped only where that costs no accuracy."""
    usable, design = log_design(columns)
    if design is None or list(exponents) != usable:
        return None
    with np.errstate(all="ignore"):
        rows = np.isfinite(y) & (np.abs(y) > 0)
        target = np.log(np.abs(y[rows]))
    snapped = snapped_exponents(design[rows], target, np.array([exponents[i] for i in usable]))
    return free_monomial(dict(zip(usable, snapped.tolist())), positive_variables(columns, usable))


def log_design(columns: np.ndarray) -> tuple[list[int], np.ndarray | None]:
    """The variables that keep one sign and vary, and ``[n_rows, k + 1]`` of their ``log|x|`` with
    a column of ones (None when there is no such variable): the design every
    :func:`target_monomials` fit shares, built once per trial."""
    with np.errstate(all="ignore"):
        usable = [i for i in range(columns.shape[0])
                  if np.all(np.isfinite(columns[i])) and (np.all(columns[i] > 0) or np.all(columns[i] < 0))
                  and float(np.ptp(np.log(np.abs(columns[i])))) > 1e-3]
        if not usable:
            return [], None
        design = np.column_stack([np.log(np.abs(columns[usable])).T, np.ones(columns.shape[1])])
    return usable, design


def target_monomials(usable: list[int], design: np.ndarray | None, targets: np.ndarray,
                     rows: np.ndarray, memo: dict | None = None,
                     positive: frozenset[int] = frozenset()) -> list[Expression | None]:
    """For each target row (values a node should take, from semantic backpropagation), the monomial
    whose exponents, fitted to ``log|target|`` by least squares on its ``rows``, all lie within
    :data:`CLEAN_TOLERANCE` of a half-integer; or, where the target is a product of powers within
    :data:`FREE_MISFIT` but some exponent is not, the monomial of the fitted exponents
    (:func:`snapped_exponents`, :func:`free_monomial`, within :data:`FREE_MISFIT`; its non-half exponents only on the
    ``positive`` variables); None where there is none (too few rows, a target that is not a
    product of powers).

    The targets that share their usable rows share one least-squares solve (most of an
    expansion's targets use every row), and ``memo`` (exponents -> operand, kept by the caller
    for one ``usable``) spares rebuilding the same monomial at every expansion."""
    if design is None:
        return [None] * len(targets)
    with np.errstate(all="ignore"):
        ok = rows & np.isfinite(targets) & (targets != 0)
        logs = np.log(np.abs(targets))
    coefs = np.full((len(targets), len(usable)), np.nan)
    misfits = np.full(len(targets), np.inf)
    groups: dict[bytes, list[int]] = {}
    for t in np.flatnonzero(ok.sum(axis=1) >= len(usable) + 5).tolist():
        groups.setdefault(ok[t].tobytes(), []).append(t)
    for members in groups.values():
        mask = ok[members[0]]
        with np.errstate(all="ignore"):
            full = np.linalg.lstsq(design[mask], logs[members][:, mask].T, rcond=None)[0]
            coefs[members] = full[:-1].T
            if positive:
                residual = logs[members][:, mask] - (design[mask] @ full).T
                misfits[members] = np.median(np.abs(residual), axis=1)
    with np.errstate(invalid="ignore"):
        rounded = _halves(coefs)
        finite = np.isfinite(coefs).all(axis=1)
        clean = finite & (np.abs(coefs - rounded) <= CLEAN_TOLERANCE).all(axis=1)
        # A target that is a product of powers gets its exponents as fitted, each snapped only
        # where that costs no accuracy; one that is not (a factor of one, at best) the halves.
        tight = finite & (misfits <= FREE_MISFIT)
    out: list[Expression | None] = [None] * len(targets)
    memo = {} if memo is None else memo
    for t in np.flatnonzero(clean & ~tight).tolist():
        key = tuple(rounded[t].tolist())
        if key not in memo:
            memo[key] = monomial({i: e for i, e in zip(usable, key) if e != 0})
        out[t] = memo[key]
    for t in np.flatnonzero(tight).tolist():
        key = ("free", *np.round(coefs[t], 3).tolist())
        if key not in memo:
            mask = ok[t]
            snapped = snapped_exponents(design[mask], logs[t][mask], coefs[t])
            memo[key] = free_monomial(dict(zip(usable, snapped.tolist())), positive)
        out[t] = memo[key]
    return out
