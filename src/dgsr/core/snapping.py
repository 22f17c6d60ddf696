"""Fitted constants snapped to simple values where the data cannot tell them apart.

A law's constants are often simple (``exp(-x**2/2)``, ``sin(2*t)``, ``x**1.5``), but a fit to
noisy rows returns ``exp(-0.5003*x**2)``: a formula that predicts as well and is not the law.
:func:`snap_constants` tries, constant by constant, 0 and the simple values near each one (an
integer, a half, a third or a quarter, a multiple of pi or pi**2 or of their halves, thirds or quarters,
a small fraction over 4*pi or 4*pi**2),
refits the constants not yet snapped by a few Gauss-Newton steps, and keeps the snap when a
likelihood-ratio test on the fit's own rows does not reject it: ``n*log(SSE_snapped/SSE)`` within the chi-square quantile for
the number of constants snapped so far (Gaussian errors; Wilks). On data without noise the
residual is float noise (a floor of 1e-12 of the variance per row), so only a constant that is
already its simple value to about six digits snaps. Nothing here names a law: the decision is
made per fit, on that fit's data.

Constants the data cannot tell apart are merged first (:func:`merged_constants`): in
``12*(0.08332*(B*v))`` only the product 0.9999 is fitted, and neither factor alone is near a
simple value; merged, it is ``0.9999*(1*(B*v))``, and the 0.9999 can snap to 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy
from scipy.special import chdtri

from dgsr.core.evaluate import weighted_var
from dgsr.core.expression import Expression
from dgsr.core.gradients import Program, compile_expression, run_program
from dgsr.core.operators import CONSTANT
from dgsr.core.root_scales import root_rescalings

__all__ = ["counted_rows", "exact_value", "indistinguishable", "merged_constants", "scale_group", "simple_values", "snap_constants"]

#: Significance level of the likelihood-ratio test a snap must pass.
SNAP_LEVEL = 0.05
#: Only simple values within this share of a constant's size are tried.
_NEAR = 0.05
#: Gauss-Newton steps that refit the free constants after each snap.
_REFIT_STEPS = 3
#: Residual floor per row, as a share of var(y): below it a residual is float noise.
FLOOR = 1e-12
_DENOMINATORS = (1, 2, 3, 4)
#: pi and pi**2 (a wave number's square, a buckling load, a box's energy levels), each over these
#: (a third: a sphere's 4*pi/3, angles of pi/3).
_PI_POWERS = (math.pi, math.pi ** 2)
_PI_DENOMINATORS = (1, 2, 3, 4)
#: The full solid angle 4*pi (and 4*pi**2, the square of the full turn 2*pi) in a denominator: the
#: SI writes Coulomb's, Biot-Savart's and the gravitational field's constants over them
#: (``1/(4*pi)``, ``3/(8*pi)``, ``1/(2*pi)**2``). A fraction ``p/q`` over each, ``q`` these, up to 4.
_INVERSE_PI_POWERS = (4 * math.pi, 4 * math.pi ** 2)
_INVERSE_PI_SYMPY = (4 * sympy.pi, 4 * sympy.pi ** 2)
_INVERSE_PI_LARGEST = 4
#: A fraction over 4*pi is tried only where the fit already holds it to this share: the fractions
#: lie closer together than the 5% a noisy fit may wander, so on noisy data every small constant
#: would find one (``0.2286*x`` became ``3*x/(4*pi)`` on black-box data, three nodes longer).
_OVER_PI_NEAR = 1e-4
#: A Jacobian direction whose singular value is below this share of the largest is a null direction.
_NULL = 1e-8


def simple_values(value: float) -> list[float]:
    """The simple values for ``value``, simplest first: 0 (a term or shift the data do not need),
    then those within 5% of it: the nearest integer, halves, thirds and quarters, then multiples of
    pi, pi/2, pi/3 and pi/4, then of pi**2, pi**2/2, pi**2/3 and pi**2/4, then fractions up to 4
    over 4*pi and 4*pi**2 within 1e-4 of it (:func:`_over_pi`; never ``value`` itself)."""
    if not math.isfinite(value) or value == 0.0:
        return []
    found = [round(value * q) / q for q in _DENOMINATORS]
    found += [base * round(value * q / base) / q for base in _PI_POWERS for q in _PI_DENOMINATORS]
    found += [v for v, _ in _over_pi(value) if abs(v - value) <= _OVER_PI_NEAR * abs(value)]
    out: list[float] = [0.0]
    for v in found:
        if v != 0.0 and v != value and abs(v - value) <= _NEAR * abs(value) and v not in out:
            out.append(float(v))
    return out


def _over_pi(value: float) -> list[tuple[float, sympy.Expr]]:
    """The fractions ``p/q`` (``q`` 1 to 4, ``|p/q|`` at most 4) over 4*pi, then over 4*pi**2,
    nearest ``value``, each as a float and exactly; one arithmetic for snapping and display."""
    out = []
    for base, exact in zip(_INVERSE_PI_POWERS, _INVERSE_PI_SYMPY):
        for q in _PI_DENOMINATORS:
            p = round(value * base * q)
            if p != 0 and abs(p) <= _INVERSE_PI_LARGEST * q:
                out.append((p / (base * q), sympy.Rational(p, q) / exact))
    return out


#: How each node passes its children's constants into the product (or sum) it belongs to: the
#: power (or sign) of each child, by operator. A constant under ``sq`` enters a product squared.
_PRODUCT = {"mul": (1.0, 1.0), "div": (1.0, -1.0), "inv": (-1.0,), "sq": (2.0,), "sqrt": (0.5,)}
_SUM = {"add": (1.0, 1.0), "sub": (1.0, -1.0)}


def _group_constants(expr: Expression, position: int, passes: dict[str, tuple[float, ...]], power: float,
                     found: list[tuple[int, float]], inside: set[int]) -> None:
    """The constant leaves of the product (or sum) rooted at ``position`` as ``(index, power)``
    (its power in the product, or its sign in the sum); the group's nodes go into ``inside``."""
    symbol = expr.symbols[position]
    if symbol == CONSTANT:
        found.append((expr.constant_offset(position), power))
    elif symbol in passes:
        inside.add(position)
        for child, child_power in zip(expr.children(position), passes[symbol]):
            _group_constants(expr, child, passes, power * child_power, found, inside)


def _merged(values: list[float], found: list[tuple[int, float]], product: bool) -> int | None:
    """Merge the group ``found`` into its first constant of power (or sign) +1, or else -1, the
    others set to 1 (or 0) in ``values``; that constant's index, or None when nothing merges."""
    keep = next((k for k in found if k[1] == 1.0), next((k for k in found if k[1] == -1.0), None))
    if keep is None or len(found) < 2 or not all(math.isfinite(values[i]) for i, _ in found):
        return None
    if product:
        if any(values[i] == 0.0 or (values[i] < 0 and p != round(p)) for i, p in found):
            return None
        merged = math.prod(values[i] ** p for i, p in found) ** keep[1]
    else:
        merged = sum(p * values[i] for i, p in found) * keep[1]
    if not math.isfinite(merged) or (product and merged == 0.0):
        return None
    for i, _ in found:
        values[i] = 1.0 if product else 0.0
    values[keep[0]] = merged
    return keep[0]


def merged_constants(expr: Expression) -> tuple[Expression, frozenset[int]]:
    """``expr`` with the constant factors of each product merged into one (through ``inv``, ``sq``
    and ``sqrt`` too) and the constant terms of each sum into one, and the indices of the constants
    the merge set to 1 (or 0): the same function (to rounding), with no two constants of which the
    data fit only the product (or sum). A product with a zero factor is left as it is."""
    values = list(expr.constants)
    fixed: set[int] = set()
    inside: set[int] = set()
    for position, symbol in enumerate(expr.symbols):
        if position in inside or not (symbol in _PRODUCT or symbol in _SUM):
            continue
        found: list[tuple[int, float]] = []
        passes = _PRODUCT if symbol in _PRODUCT else _SUM
        _group_constants(expr, position, passes, 1.0, found, inside)
        keep = _merged(values, found, passes is _PRODUCT)
        if keep is not None:
            fixed.update(i for i, _ in found if i != keep)
    return (expr.with_constants(values) if fixed else expr), frozenset(fixed)


def exact_value(value: float) -> sympy.Expr | None:
    """The simple value (:func:`simple_values`) without a finite decimal that ``value`` is to the
    last bit, as SymPy writes it exactly (``Rational(1, 3)``, ``pi/2``, ``pi**2``, ``1/(4*pi)``), or
    None: how a snapped third or multiple (or fraction) of pi shows (halves and quarters read well as decimals)."""
    if not math.isfinite(value) or value == 0.0 or abs(value) > 1e6:
        return None
    p = round(value * 3)
    if p % 3 and p / 3 == value:
        return sympy.Rational(p, 3)
    for base, exact in zip(_PI_POWERS, (sympy.pi, sympy.pi**2)):
        for q in _PI_DENOMINATORS:
            k = round(value * q / base)
            if k != 0 and base * k / q == value:  # the arithmetic of simple_values
                return sympy.Rational(k, q) * exact
    return next((exact for v, exact in _over_pi(value) if v == value), None)


def counted_rows(y: np.ndarray, w: np.ndarray | None) -> int:
    """The rows the likelihood-ratio test counts: those with a positive weight (all without weights)."""
    return int(np.count_nonzero(w > 0)) if w is not None else len(y)


def indistinguishable(sse: float, base: float, n: int, floor: float, dof: int = 1,
                      level: float = SNAP_LEVEL) -> bool:
    """Whether a sum of squares ``sse`` is no worse than ``base`` to the likelihood-ratio test of
    this module (``n`` rows, ``dof`` constants changed; sums below ``floor`` are float noise).
    Any finite ``sse`` is no worse than a ``base`` that is not finite."""
    if not math.isfinite(sse):
        return False
    if not math.isfinite(base):
        return True
    floor = max(floor, 1e-300)  # a floor that underflowed to 0 would take the log of 0
    return n * math.log(max(sse, floor) / max(base, floor)) <= chdtri(dof, level)


def _sse(program: Program, theta: np.ndarray, columns: np.ndarray, y: np.ndarray,
         w: np.ndarray | None) -> float:
    value, _ = run_program(program, theta, columns, jacobian=False)
    residual = value - y
    total = float(np.dot(residual * w, residual)) if w is not None else float(np.dot(residual, residual))
    return total if math.isfinite(total) else math.inf


def _refit(program: Program, theta: np.ndarray, free: list[int], columns: np.ndarray, y: np.ndarray,
           w: np.ndarray | None, sqrt_w: np.ndarray | None, sse: float) -> tuple[np.ndarray, float, int]:
    """``theta`` after up to :data:`_REFIT_STEPS` Gauss-Newton steps on the ``free`` constants (a
    step is kept only when it lowers the sum of squares); returns it, its SSE and the passes spent.
    ``sqrt_w``: the square roots of the weights ``w``."""
    spent = 0
    for _ in range(_REFIT_STEPS if free else 0):
        value, jac = run_program(program, theta, columns)
        spent += 1
        residual = y - value
        J = jac[free].T
        if sqrt_w is not None:
            residual, J = residual * sqrt_w, J * sqrt_w[:, None]
        if not (np.all(np.isfinite(J)) and np.all(np.isfinite(residual))):
            break
        step = np.linalg.lstsq(J, residual, rcond=None)[0]
        trial = theta.copy()
        trial[free] += step
        new_sse = _sse(program, trial, columns, y, w)
        spent += 1
        if not new_sse < sse:
            break
        theta, sse = trial, new_sse
    return theta, sse, spent


def scale_group(program: Program, theta: np.ndarray, columns: np.ndarray, ignore: frozenset[int] = frozenset(),
                max_rows: int = 256) -> list[int]:
    """The constants the function fixes only up to a common factor, as the four of
    ``(a*x + b)/(c*x + d)``: scaling them all by one number changes no value. Found from the
    Jacobian's null direction (Euler: ``sum_j theta_j * df/dtheta_j = 0`` over the group) and
    checked by scaling; empty when there is none, or more than one such direction. The constants
    in ``ignore`` (held fixed) take no part."""
    if len(theta) < 2 or not np.all(np.isfinite(theta)):
        return []
    rows = columns[:, :max_rows]
    value, jac = run_program(program, theta, rows)
    if not (np.all(np.isfinite(value)) and np.all(np.isfinite(jac))):
        return []
    norms = np.linalg.norm(jac, axis=1)
    used = np.array([j for j in np.flatnonzero(norms > 0) if j not in ignore], dtype=np.int64)
    if len(used) < 2:
        return []
    _, singular, vt = np.linalg.svd(jac[used].T / norms[used], full_matrices=False)
    if not (singular[-1] <= _NULL * singular[0] < singular[-2]):  # exactly one null direction
        return []
    direction = vt[-1]
    inside = np.abs(direction) > 1e-4
    group = used[inside]
    ratios = direction[inside] / norms[group] / theta[group] if np.all(theta[group] != 0) else np.array([np.nan])
    if len(group) < 2 or not np.all(np.isfinite(ratios)) or not np.allclose(ratios, ratios[0], rtol=1e-3):
        return []
    scaled = theta.copy()
    scaled[group] *= 1.7
    moved, _ = run_program(program, scaled, rows, jacobian=False)
    if not np.all(np.abs(moved - value) <= 1e-8 * np.maximum(np.abs(value), np.max(np.abs(value)) * 1e-6 + 1e-300)):
        return []
    return [int(j) for j in group]


def _plainness(value: float) -> int:
    """How plain a constant reads: the least denominator (1 to 4) that makes it an integer, 5 for
    any other value and for any beyond 100 in size (``2`` is plainer than ``2/3``, than ``15925``)."""
    q = next((q for q in _DENOMINATORS if value * q == round(value * q)), 5)
    return q if abs(value) <= 100 else 5


def _is_simple(value: float) -> bool:
    """Whether ``value`` reads as a simple value: a fraction of denominator 1 to 4 up to 100 in
    size, or :func:`exact_value`. A constant at a large scale rounds to an integer easily: it is not."""
    return _plainness(value) < 5 or exact_value(value) is not None


def _simplicity(theta: np.ndarray, group: list[int]) -> tuple[int, int]:
    """How simple a scale group's constants read, larger is simpler: how many are simple values
    (:func:`_is_simple`), then minus their plainness."""
    values = [float(theta[j]) for j in group]
    return sum(map(_is_simple, values)), -sum(_plainness(v) for v in values)


def _free_constants(values: tuple[float, ...]) -> int:
    """How many of ``values`` are neither 0 nor simple (:func:`_is_simple`): the constants a reader
    must take as fitted."""
    return sum(1 for v in values if v != 0.0 and not _is_simple(v))


@dataclass(frozen=True)
class _Rows:
    """The fit's rows and the test's settings, shared by every snapping pass of one expression."""

    program: Program
    columns: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    sqrt_w: np.ndarray | None
    n: int
    floor: float
    base: float
    level: float


def _snap_pass(rows: _Rows, theta: np.ndarray, fixed: frozenset[int]) -> tuple[np.ndarray, list[int], int]:
    """Each constant not in ``fixed`` tried at its simple values, nearest-to-simple first; the
    constants after the pass, those snapped and the evaluations spent."""
    snapped: list[int] = []
    spent = 0

    def nearness(i: int) -> float:
        near = simple_values(float(theta[i]))[1:]
        return abs(near[0] - theta[i]) / abs(theta[i]) if near else math.inf

    for i in sorted((j for j in range(len(theta)) if j not in fixed), key=nearness):
        for candidate in simple_values(float(theta[i])):
            trial = theta.copy()
            trial[i] = candidate
            free = [j for j in range(len(theta)) if j != i and j not in snapped and j not in fixed]
            trial_sse = _sse(rows.program, trial, rows.columns, rows.y, rows.w)
            spent += 1
            trial, trial_sse, passes = _refit(rows.program, trial, free, rows.columns, rows.y, rows.w, rows.sqrt_w,
                                              trial_sse)
            spent += passes
            if indistinguishable(trial_sse, rows.base, rows.n, rows.floor, len(snapped) + 1, rows.level):
                theta = trial
                snapped.append(i)
                break
    return theta, snapped, spent


def snap_constants(expr: Expression, columns: np.ndarray, y: np.ndarray, w: np.ndarray | None = None,
                   level: float = SNAP_LEVEL, max_evaluations: float = math.inf) -> tuple[Expression, int]:
    """``expr`` with each constant that the data do not distinguish from a simple value
    (:func:`simple_values`) set to it, the others refitted; returns it and the evaluations spent.

    Constants are tried nearest-to-simple first. A snap is kept when ``n*log(SSE/SSE0)``, against
    the fit before any snap, is within the chi-square quantile at ``level`` with as many degrees of
    freedom as constants snapped (``n``: rows with a positive weight). Where a group of constants
    is fixed only up to a common factor (:func:`scale_group`), the group is also tried divided by
    each of its members in turn (that member then 1), and the pass that leaves the group the most
    simple values, then the plainest ones, wins: ``(0.73*x + 1.1)/(1.1 - 0.37*x)`` becomes
    ``(2*x + 3)/(3 - x)``. A constant factor of the root (or square) of a sum is also tried moved
    inside it (:func:`~dgsr.core.root_scales.root_rescalings`), and that form is kept when it is
    left with fewer constants that are not simple: ``2.894*sqrt(a - 0.1194*b)`` becomes
    ``sqrt(8.378*a - b)``. The extra passes stop once ``max_evaluations`` are spent."""
    if not expr.n_constants or not len(y):
        return expr, 0
    n = counted_rows(y, w)
    if n == 0:
        return expr, 0
    merged, fixed = merged_constants(expr)  # a 1 or 0 left by the merge is neither tried nor refitted
    best, spent = _snapped(merged, fixed, columns, y, w, n, level, max_evaluations)
    if best is None:
        return expr, spent
    free = _free_constants(best.constants)
    for rewritten in root_rescalings(merged, fixed) if free else ():
        if spent >= max_evaluations:
            break
        again, _ = merged_constants(rewritten)
        moved = frozenset(i for i, v in enumerate(again.constants) if v in (1.0, -1.0, 0.0))
        trial, passes = _snapped(again, moved, columns, y, w, n, level, max_evaluations - spent)
        spent += passes
        trial_free = _free_constants(trial.constants) if trial is not None else free
        if trial_free < free:
            best, free = trial, trial_free
    return (expr if best is merged else best), spent


def _snapped(expr: Expression, fixed: frozenset[int], columns: np.ndarray, y: np.ndarray, w: np.ndarray | None,
             n: int, level: float, max_evaluations: float) -> tuple[Expression | None, int]:
    """:func:`snap_constants` of one form of the expression (``fixed``: constants held): the
    expression with its constants snapped (``expr`` itself when none changed), or None when its
    loss is not finite; and the evaluations spent."""
    theta = np.asarray(expr.constants, dtype=np.float64)
    program = compile_expression(expr)  # one structure throughout: only its constants change
    with np.errstate(all="ignore"):
        start = _sse(program, theta, columns, y, w)
        spent = 1
        if not math.isfinite(start):
            return None, spent
        floor = FLOOR * n * max(weighted_var(y, w), 1e-300)
        rows = _Rows(program, columns, y, w, None if w is None else np.sqrt(w), n, floor, max(start, floor), level)
        best, snapped, passes = _snap_pass(rows, theta, fixed)
        spent += passes
        changed = bool(snapped)
        group: list[int] = []
        if spent < max_evaluations:
            group = scale_group(program, theta, columns, ignore=fixed)
            spent += 2  # the Jacobian and the check
        rank = _simplicity(best, group)
        for j in group:
            if spent >= max_evaluations:
                break
            normal = theta.copy()
            normal[group] /= theta[j]
            normal[j] = 1.0
            trial, _, passes = _snap_pass(rows, normal, fixed | {j})
            spent += passes
            trial_rank = _simplicity(trial, group)
            if trial_rank > rank:  # the same function, written with plainer constants
                best, rank, changed = trial, trial_rank, True
    return (expr.with_constants(best.tolist()) if changed else expr), spent
