"""The monomial that ``y`` depends on through one curve: a single-index direction in log space.

Many laws take a product of powers of several variables inside one nonlinear part:
``exp(-m*g*x/(kb*T))``, ``1/(exp(h*omega/(kb*T)) - 1)``. The chains ``op(a*u + b)`` of
:mod:`~dgsr.policies.semantic.parametric_forms` fit such a part whole once ``u`` is that product,
but they take single variables, and the monomial's exponents are not the power law of ``y``
itself. Here ``log|y|`` (``y`` where it changes sign) is modelled as a linear function of the
variables' logarithms plus ``g(sum_i e_i*log|x_i|)``, ``g`` a cubic spline (projection pursuit
with one ridge function beside a power law): the direction starts as the leading eigenvector of
the quadratic part of a least-squares quadratic in the logarithms (principal Hessian directions,
Li 1992: a single index bends ``y`` along its own direction only) and is refined by
Gauss-Newton. Its exponents are then scaled to the nearest half-integers, and the monomial is
kept only where the curve through it, fitted on half the rows, explains the other half better
than the curve through any one of its variables (else the chains over the variables already
hold it), than a sum of curves of each (an additive law has no single index) and than no curve
at all. Nothing here names a law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgsr.core.expression import Expression
from dgsr.policies.semantic.power_law import MAX_EXPONENT, log_design, monomial
from dgsr.policies.semantic.relevance import relevance

#: Interior knots of the ridge spline (at these quantiles of the index).
_KNOTS = (0.1, 0.3, 0.5, 0.7, 0.9)
_STEPS = 12  # Gauss-Newton steps on the direction
_MAX_VARIABLES = 8  # the variables most related to y that the direction is fitted over
_MIN_ROWS = 30
_CLOSE = 0.01  # relative rounding errors this close count as a tie
#: The prefactor's exponents lie this close to half-integers, or there is none; closer by this
#: much than another shift counts as a tie.
_PREFACTOR_TOLERANCE = 0.15
_PREFACTOR_CLOSE = 0.02


def _basis(z: np.ndarray, knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Truncated-power cubic spline basis at ``z`` without its constant and linear terms (the
    linear part holds them), and its derivative in ``z``."""
    over = np.maximum(z[:, None] - knots[None, :], 0.0)
    basis = np.column_stack([z * z, z ** 3, over ** 3])
    slope = np.column_stack([2 * z, 3 * z * z, 3 * over ** 2])
    return basis, slope


def _ridge_solve(z: np.ndarray, linear: np.ndarray, y: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """The least squares of :func:`ridge_fit`: its coefficients (``linear``'s first), design,
    spline slope basis and the index's scale (slope None where ``z`` is constant)."""
    scale = float(np.std(z))
    if not math.isfinite(scale) or scale <= 0:
        return np.linalg.lstsq(linear, y, rcond=None)[0], linear, None, scale
    u = (z - np.mean(z)) / scale
    basis, slope = _basis(u, np.quantile(u, _KNOTS))
    design = np.column_stack([linear, basis])
    return np.linalg.lstsq(design, y, rcond=None)[0], design, slope, scale


def ridge_fit(z: np.ndarray, linear: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Least squares of ``y`` on ``linear`` (``[n_rows, k]``, with an intercept column) plus a
    cubic spline of the index ``z``: the residual sum of squares, the residuals, and the
    spline's slope per unit of ``z`` at each row."""
    coef, design, slope, scale = _ridge_solve(z, linear, y)
    r = y - design @ coef
    if slope is None:
        return float(r @ r), r, np.zeros_like(y)
    return float(r @ r), r, (slope @ coef[linear.shape[1]:]) / scale


def held_out_rss(indices: np.ndarray, linear: np.ndarray, y: np.ndarray) -> float:
    """Residual sum of squares on the odd rows of ``y``'s linear part plus a spline of each
    column of ``indices`` (``[n_rows, m]``, m >= 0), fitted on the even rows: a curve through a
    direction fitted to all the rows wins there only where the data has one."""
    fit, test = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    parts_fit, parts_test = [linear[fit]], [linear[test]]
    for z in indices.T:
        centre, scale = float(np.mean(z[fit])), float(np.std(z[fit]))
        if not math.isfinite(scale) or scale <= 0:
            return math.inf
        knots = np.quantile((z[fit] - centre) / scale, _KNOTS)
        parts_fit.append(_basis((z[fit] - centre) / scale, knots)[0])
        parts_test.append(_basis((z[test] - centre) / scale, knots)[0])
    coef = np.linalg.lstsq(np.column_stack(parts_fit), y[fit], rcond=None)[0]
    r = y[test] - np.column_stack(parts_test) @ coef
    value = float(r @ r)
    return value if math.isfinite(value) else math.inf


def _hessian_direction(logs: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """The leading eigenvector of the quadratic part of ``y``'s least-squares quadratic in
    ``logs`` (principal Hessian directions): a single index's curvature lies along it alone."""
    n, k = logs.shape
    pairs = [(i, j) for i in range(k) for j in range(i, k)]
    design = np.column_stack([np.ones(n), logs, *[logs[:, i] * logs[:, j] for i, j in pairs]])
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    hessian = np.zeros((k, k))
    for (i, j), c in zip(pairs, coef[1 + k:]):
        hessian[i, j] += c if i != j else 2 * c
        hessian[j, i] = hessian[i, j]
    if not np.all(np.isfinite(hessian)) or not np.any(hessian):
        return None
    values, vectors = np.linalg.eigh(hessian)
    return vectors[:, int(np.argmax(np.abs(values)))]


def index_direction(logs: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Unit direction ``e`` (in the columns of ``logs`` ``[n_rows, k]``, centred) for which ``y``
    is best a linear function of ``logs`` plus a spline of ``logs @ e``; None where the data
    cannot say."""
    e = _hessian_direction(logs, y)
    if e is None:
        return None
    linear = np.column_stack([np.ones(len(y)), logs])
    rss, residual, slope = ridge_fit(logs @ e, linear, y)
    for _ in range(_STEPS):
        jacobian = np.column_stack([linear, slope[:, None] * logs])
        step = np.linalg.lstsq(jacobian, residual, rcond=None)[0][linear.shape[1]:]
        if not np.all(np.isfinite(step)):
            break
        improved = False
        for scale in (1.0, 0.5, 0.25):
            trial = e + scale * step
            trial /= np.linalg.norm(trial)
            trial_rss, trial_residual, trial_slope = ridge_fit(logs @ trial, linear, y)
            if trial_rss < rss:
                e, rss, residual, slope, improved = trial, trial_rss, trial_residual, trial_slope, True
                break
        if not improved:
            break
    return e


def half_integer_exponents(direction: np.ndarray) -> np.ndarray:
    """``direction`` scaled so that its exponents lie closest to half-integers (each exponent in
    turn set to 1/2, 1 and 2, the largest kept within :data:`MAX_EXPONENT`; among scalings as
    close, the one with the fewest halves), then rounded; exponents below a tenth of the
    largest drop to 0."""
    d = np.where(np.abs(direction) >= 0.1 * np.max(np.abs(direction)), direction, 0.0)
    scored = []
    for j in np.flatnonzero(d).tolist():
        for target in (1.0, 2.0, 0.5):
            scaled = d * (target / abs(d[j]))
            if np.max(np.abs(scaled)) > MAX_EXPONENT:
                continue
            rounded = np.round(2 * scaled) / 2
            error = float(np.sum((scaled - rounded) ** 2) / np.sum(scaled ** 2))
            scored.append((error, int(np.count_nonzero(rounded != np.round(rounded))), rounded))
    if not scored:
        return np.zeros_like(d)
    best = min(error for error, _, _ in scored)
    return min((s for s in scored if s[0] <= best + _CLOSE), key=lambda s: s[1])[2]


def prefactor_exponents(slopes: np.ndarray, index: np.ndarray) -> list[np.ndarray]:
    """The half-integer power law beside a single index: ``slopes`` (the linear part's exponents in
    log space) less ``t`` times the ``index`` exponents, for the ``t`` that puts them nearest
    half-integers (the linear part holds the index's own trend as well, any real ``t``: ``hbar*omega
    /(exp(x) - 1)`` is also ``kb*T*x/(exp(x) - 1)``), then rounded; among ``t`` as close, the
    smallest (the sum of the exponents' sizes, then the fewest halves), both where two are as small (``hbar*omega`` and
    ``kb*T`` above: which one leaves the simpler curve is the chains' to find). [] where no ``t``
    puts every exponent within :data:`_PREFACTOR_TOLERANCE` of a half-integer, or only the empty
    power law does."""
    shifts = {0.0}
    for j in np.flatnonzero(index).tolist():
        base = float(np.round(2 * slopes[j]) / 2)
        shifts.update((slopes[j] - h) / index[j] for h in np.arange(base - 2 * MAX_EXPONENT, base + 2 * MAX_EXPONENT + 0.5, 0.5))
    scored = []
    for t in sorted(shifts):
        reduced = slopes - t * index
        rounded = np.round(2 * reduced) / 2
        if np.max(np.abs(rounded)) > MAX_EXPONENT:
            continue
        error = float(np.max(np.abs(reduced - rounded)))
        halves = int(np.count_nonzero(rounded != np.round(rounded)))
        scored.append((error, (float(np.sum(np.abs(rounded))), halves), rounded + 0.0))  # + 0.0: no -0.0
    if not scored or min(s[0] for s in scored) > _PREFACTOR_TOLERANCE:
        return []
    best = min(s[0] for s in scored)
    close = [s for s in scored if s[0] <= best + _PREFACTOR_CLOSE]
    smallest = min(s[1] for s in close)
    found: dict[bytes, np.ndarray] = {}
    for _, size, rounded in close:
        if size == smallest and np.any(rounded):
            found.setdefault(rounded.tobytes(), rounded)
    return list(found.values())[:2]


def _fitted_index(logs: np.ndarray, scale: np.ndarray, target: np.ndarray
                  ) -> tuple[np.ndarray | None, float, list[float]]:
    """The index's half-integer exponents over the centred ``logs``, its held-out error and its
    rivals' (see :func:`single_index`); ``(None, inf, [])`` when there is none."""
    direction = index_direction(logs / scale, target)
    if direction is None:
        return None, math.inf, []
    exponents = half_integer_exponents(direction / scale)
    support = np.flatnonzero(exponents).tolist()
    if len(support) < 2:
        return None, math.inf, []
    linear = np.column_stack([np.ones(len(target)), logs])
    rss = held_out_rss((logs @ exponents)[:, None], linear, target)
    rivals = [held_out_rss(logs[:, [j]], linear, target) for j in support]
    rivals += [held_out_rss(logs[:, support], linear, target), held_out_rss(logs[:, :0], linear, target)]
    return exponents, rss, rivals


@dataclass(frozen=True)
class SingleIndex:
    """What :func:`single_index` reads off the data: the index's ``monomials`` (the monomial and
    its inverse), and the ``prefactor``, the power law that ``y`` is the index's curve times
    (none where ``y`` changes sign, or that power law is not one of half-integer exponents; two
    where two are as simple, :func:`prefactor_exponents`)."""

    monomials: tuple[Expression, ...]
    prefactors: tuple[Expression, ...] = ()


def single_index(columns: np.ndarray, y: np.ndarray) -> SingleIndex | None:
    """The monomial of at least two variables that ``y`` (``columns`` ``[n_features, n_rows]``) is
    best a curve of, times a product of powers, read in log space where ``y`` keeps one sign, when
    that curve explains held-out rows of ``y`` better than the curve of any one of its variables,
    than a sum of curves of each, and than the product of powers alone; None otherwise (too few
    rows, fewer than two one-signed variables)."""
    y = np.asarray(y, dtype=np.float64)
    usable, design = log_design(columns)
    if design is None or len(usable) < 2 or len(y) < _MIN_ROWS or not np.all(np.isfinite(y)) or np.ptp(y) <= 0:
        return None
    kept = np.argsort(-relevance(columns[usable], y), kind="stable")[:_MAX_VARIABLES]
    logs = design[:, kept]
    logs = logs - logs.mean(axis=0)
    scale = logs.std(axis=0)
    one_signed = bool(np.all(y > 0) or np.all(y < 0))
    with np.errstate(all="ignore"):
        target = np.log(np.abs(y)) if one_signed else y
        spread = float(np.std(target))
        if not (math.isfinite(spread) and spread > 0 and np.all(np.isfinite(target))):
            return None
        target = (target - np.mean(target)) / spread
        try:
            exponents, rss, rivals = _fitted_index(logs, scale, target)
            if exponents is None or not math.isfinite(rss) or rss >= min(rivals):
                return None
            linear = np.column_stack([np.ones(len(target)), logs])
            coef = _ridge_coefficients(logs @ exponents, linear, target)
        except np.linalg.LinAlgError:  # an SVD that does not converge: no index, not a crash
            return None
    variables = [usable[int(j)] for j in kept]
    # The index's orientation is the data's to choose: both the monomial and its inverse.
    operands = [monomial({variables[j]: sign * float(exponents[j]) for j in np.flatnonzero(exponents).tolist()})
                for sign in (1.0, -1.0)]
    prefactors = []
    if one_signed and coef is not None:
        prefactors = [monomial({variables[j]: float(p[j]) for j in np.flatnonzero(p).tolist()})
                      for p in prefactor_exponents(coef[1:] * spread, exponents)]
    return SingleIndex(tuple(o for o in operands if o is not None), tuple(p for p in prefactors if p is not None))


def _ridge_coefficients(z: np.ndarray, linear: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """The ``linear`` part's coefficients in :func:`ridge_fit` (None where not finite)."""
    coef = _ridge_solve(z, linear, y)[0][:linear.shape[1]]
    return coef if np.all(np.isfinite(coef)) else None


def index_monomials(columns: np.ndarray, y: np.ndarray) -> list[Expression]:
    """The monomials of :func:`single_index` ([] where there is no index)."""
    found = single_index(columns, y)
    return [] if found is None else list(found.monomials)
