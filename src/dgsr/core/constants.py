"""Constant fitting: BFGS (Appendix E.2 of the paper) or Levenberg-Marquardt, and linear scaling.

:func:`fit_constants` is a pure function: it takes an expression and data and returns a
:class:`ConstantFit` holding a copy of the expression with fitted constants. Appendix E.2 fixes
BFGS with batches of 256 rows, early stopping after 10 iterations without improvement and a 1 s
timeout. Both methods use the same row subset, patience and time cap, with analytic
derivatives (forward mode, :mod:`dgsr.core.gradients`); the default is Levenberg-Marquardt because it
reached the same accuracy faster in ``bench/experiments/constants_bench.py`` (docs/notes/constants_bench.md).

Evaluations are counted as CONTRACTS §2 says: one objective call on ``b`` of ``N`` rows counts
``b / N`` (a gradient computed in the same pass, or a Jacobian call, counts the same), and the
final R² on all rows counts 1.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import leastsq

from dgsr.core.evaluate import evaluate_columns, r2_score, weighted_var
from dgsr.core.expression import Expression
from dgsr.core.gradients import Program, compile_expression, run_program

Method = Literal["bfgs", "lm"]
#: Chosen by ``bench/experiments/constants_bench.py`` (docs/notes/constants_bench.md): Levenberg-Marquardt reaches
#: R² >= 0.99 as often as BFGS (within 3 points either way) in 25-55% less time per fit.
DEFAULT_METHOD: Method = "lm"
# A step that lowers the normalised loss by less than this (relative) is not an improvement.
_REL_TOL = 1e-9
# Residual returned to Levenberg-Marquardt where the expression is non-finite: large enough that
# the step is always rejected, small enough that its sum of squares stays finite.
_BAD_RESIDUAL = 1e100
# BFGS stops once every partial of the normalised loss (1 - R² on the batch) is below this.
_GTOL = 1e-5
_MAX_BACKTRACKS = 30


@dataclass(frozen=True)
class ConstantFit:
    """Result of :func:`fit_constants`.

    Attributes
    ----------
    expression:
        Same structure as the input, fitted constants; the input itself when the fit failed or
        did not lower the loss on the fitting rows.
    r2:
        R² of ``expression`` on all rows (-inf where it is non-finite on some row).
    evaluations:
        Fractional evaluations spent (CONTRACTS §2), the final full evaluation included.
    seconds:
        Wall time of the fit.
    improved:
        Whether the returned constants differ from the input's.
    objective_calls:
        Number of passes over the fitting rows (each counts ``b / N`` evaluations).
    """

    expression: Expression
    r2: float
    evaluations: float
    seconds: float
    improved: bool
    objective_calls: int = 0


class _Stop(Exception):
    """Raised inside an optimiser's callbacks to end the fit (time cap or patience)."""


class _Objective:
    """Normalised loss ``mean((f - y)^2) / var(y)`` on the fitting rows, with bookkeeping.

    Keeps the best point seen (optimisers may end on a worse one), counts calls, and raises
    :class:`_Stop` once the deadline passes. Dividing by ``var(y)`` makes the loss ``1 - R²`` on
    the batch, so ``_GTOL`` and ``_REL_TOL`` mean the same thing for every target scale.
    """

    def __init__(self, program: Program, columns: np.ndarray, y: np.ndarray, y_var: float,
                 deadline: float, max_calls: int | None = None, weights: np.ndarray | None = None):
        self.program, self.columns, self.y = program, columns, y
        # Row weights (sample_weight): the loss is mean(w * r^2), so LM's residuals carry sqrt(w).
        self.weights = weights
        self.sqrt_w = np.sqrt(weights) if weights is not None else None
        self.scale = 1.0 / (y_var if y_var > 0.0 and math.isfinite(y_var) else 1.0)
        self.deadline = deadline
        self.max_calls = max_calls
        self.calls = 0
        self.best_loss = math.inf
        self.best_theta: np.ndarray | None = None
        # The optimisers evaluate the starting point again (fit_constants already did, and
        # leastsq checks it before MINPACK starts); a one-entry cache makes repeats free.
        self._last: tuple[bytes, str, object] | None = None
        self._jac: tuple[bytes, np.ndarray] | None = None

    def _tick(self) -> None:
        # The first call always runs, so every fit knows its starting loss.
        if self.calls and (time.perf_counter() > self.deadline
                           or (self.max_calls is not None and self.calls >= self.max_calls)):
            raise _Stop
        self.calls += 1

    def _cached(self, theta: np.ndarray, kind: str):
        last = self._last
        if last is not None and last[1] == kind and last[0] == theta.tobytes():
            return last[2]
        return None

    def _record(self, loss: float, theta: np.ndarray) -> None:
        if loss < self.best_loss:
            self.best_loss, self.best_theta = loss, theta.copy()

    def loss_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """For BFGS: loss and gradient; +inf and a zero gradient where non-finite."""
        hit = self._cached(theta, "grad")
        if hit is not None:
            return hit
        result = self._loss_and_grad(theta)
        self._last = (theta.tobytes(), "grad", result)
        return result

    def _loss_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        self._tick()
        value, jac = run_program(self.program, theta, self.columns)
        residual = value - self.y
        weighted = residual if self.weights is None else residual * self.weights
        loss = float(np.dot(residual, weighted)) * self.scale / len(self.y)
        if not math.isfinite(loss):
            return math.inf, np.zeros_like(theta)
        self._record(loss, theta)
        grad = (jac @ weighted) * (2.0 * self.scale / len(self.y))
        # An infinite partial (e.g. sqrt at 0 on one row) would poison the BFGS update; a zero
        # lets the other directions move.
        return loss, np.where(np.isfinite(grad), grad, 0.0)

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        """For Levenberg-Marquardt: residuals whose sum of squares is the loss."""
        hit = self._cached(theta, "res")
        if hit is not None:
            return hit
        result = self._residuals(theta)
        self._last = (theta.tobytes(), "res", result)
        return result

    def _residuals(self, theta: np.ndarray) -> np.ndarray:
        # The Jacobian is computed in the same pass and kept: Levenberg-Marquardt asks for it
        # at every accepted point right after the residuals there, so that call is then free.
        self._tick()
        value, jac = run_program(self.program, theta, self.columns)
        norm = math.sqrt(self.scale / len(self.y))
        residual = (value - self.y) * norm
        if self.sqrt_w is not None:
            residual = residual * self.sqrt_w
        loss = float(np.dot(residual, residual))
        if not math.isfinite(loss):
            self._jac = None
            return np.full(len(self.y), _BAD_RESIDUAL)
        self._record(loss, theta)
        self._jac = (theta.tobytes(), jac)
        return residual

    def jacobian(self, theta: np.ndarray) -> np.ndarray:
        """For Levenberg-Marquardt: residual Jacobian ``[n_constants, b]`` (one row per constant)."""
        if self._jac is not None and self._jac[0] == theta.tobytes():
            jac = self._jac[1]
        else:
            self._tick()
            _, jac = run_program(self.program, theta, self.columns)
        jac = np.asarray(jac) * math.sqrt(self.scale / len(self.y))
        if self.sqrt_w is not None:
            jac = jac * self.sqrt_w
        return np.where(np.isfinite(jac), jac, 0.0)


def fit_constants(
    expr: Expression,
    columns: np.ndarray,
    y: np.ndarray,
    *,
    method: Method = DEFAULT_METHOD,
    rng: np.random.Generator | None,
    time_limit: float = 1.0,
    batch_size: int = 256,
    patience: int = 10,
    y_var: float | None = None,
    max_iter: int = 100,
    max_evaluations: float | None = None,
    sample_weight: np.ndarray | None = None,
) -> ConstantFit:
    """Fit the constants of ``expr`` to ``y`` by least squares.

    The optimiser sees one fixed random subset of ``batch_size`` rows, drawn once per fit
    with ``rng`` (all rows when there are fewer). A fixed subset rather than rotating batches:
    BFGS's line search and curvature update, and Levenberg-Marquardt's trust region, assume
    one deterministic objective; a batch that changes between iterations makes accepted steps
    look like failures and corrupts the inverse-Hessian estimate, while 256 rows pin down the
    few constants of a short expression well. The best point seen on the subset is kept;
    the result is accepted when it lowers the subset loss, then scored once on all rows.

    Parameters
    ----------
    expr:
        Expression whose ``"c"`` placeholders are fitted (its values are the starting point).
    columns:
        Data as from :func:`dgsr.core.evaluate.as_columns`, ``[n_features, n_rows]``.
    y:
        Targets ``[n_rows]``.
    method:
        ``"bfgs"`` (BFGS with a backtracking line search, analytic gradient) or ``"lm"``
        (Levenberg-Marquardt, MINPACK, analytic Jacobian; BFGS when there are fewer rows than
        constants).
    rng:
        Draws the row subset (may be None when there are at most ``batch_size`` rows).
    time_limit:
        Seconds for the optimiser (the caller scales it down to the remaining budget); checked
        at every objective call, so a fit overruns by at most one call plus the final scoring.
    batch_size, patience, max_iter:
        Rows per objective call; iterations (gradient or Jacobian evaluations for LM) without
        improvement before stopping; iteration cap.
    y_var:
        ``var(y)`` if already known (saves a pass over ``y``); the weighted one with ``sample_weight``.
    max_evaluations:
        Most evaluations (CONTRACTS §2 units, the final scoring on all rows included) the fit may
        spend (None or inf: no cap); at least the starting point and the final scoring are always
        computed.
    sample_weight:
        Non-negative row weights ``[n_rows]`` (None: equal): the loss and the R² are weighted.

    Returns
    -------
    ConstantFit
        With ``r2 = -inf`` and ``improved=False`` when the starting point is non-finite on
        the subset (then the full evaluation is skipped: it cannot be finite either).
    """
    if method not in ("bfgs", "lm"):
        raise ValueError(f"method must be 'bfgs' or 'lm', not {method!r}")
    start = time.perf_counter()
    y = np.asarray(y, dtype=np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if y_var is None:
        with np.errstate(all="ignore"):
            y_var = weighted_var(y, w)
    n_rows = columns.shape[1]
    if n_rows == 0 or expr.n_constants == 0:  # nothing to fit: at most the one scoring
        r2 = r2_score(y, evaluate_columns(expr, columns), y_var, w) if n_rows else -math.inf
        return ConstantFit(expr, r2, 1.0 if n_rows else 0.0, time.perf_counter() - start, False)
    batch_columns, batch_y, batch_w = _fitting_rows(columns, y, w, batch_size, rng)
    fraction = batch_y.shape[0] / n_rows
    capped = max_evaluations is not None and math.isfinite(max_evaluations)
    max_calls = max(1, int((max_evaluations - 1.0) / fraction)) if capped else None
    objective = _Objective(compile_expression(expr), batch_columns, batch_y, y_var,
                           deadline=start + max(time_limit, 0.0), max_calls=max_calls, weights=batch_w)
    initial = _optimise(objective, np.asarray(expr.constants, dtype=np.float64), method, patience, max_iter)
    return _scored(expr, objective, initial, objective.calls * fraction, columns, y, y_var, w, start)


def _fitting_rows(columns: np.ndarray, y: np.ndarray, w: np.ndarray | None, batch_size: int,
                  rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The fixed row subset the optimiser sees: ``batch_size`` rows drawn once with ``rng`` (all
    rows when there are no more), as ``(columns, y, weights)``."""
    n_rows = columns.shape[1]
    if n_rows <= batch_size:
        return columns, y, w
    if rng is None:
        raise ValueError(f"rng is needed to draw {batch_size} of {n_rows} rows")
    rows = np.sort(rng.choice(n_rows, size=batch_size, replace=False))
    return columns[:, rows], y[rows], (w[rows] if w is not None else None)


def _optimise(objective: _Objective, theta0: np.ndarray, method: Method, patience: int, max_iter: int) -> float:
    """Run the optimiser from ``theta0`` until it ends or ``objective`` stops it; returns the
    starting loss (+inf when the start is non-finite on the subset: then nothing else runs)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # scipy reports line-search and precision-loss failures as warnings; the best point
        # seen is kept whatever the optimiser's exit, so they carry no information here.
        warnings.simplefilter("ignore")
        if method == "bfgs":
            objective.loss_and_grad(theta0)
        else:
            objective.residuals(theta0)
        initial = objective.best_loss  # +inf when the start is non-finite on the subset
        try:
            if math.isfinite(initial):
                if method == "bfgs":
                    _run_bfgs(objective, theta0, patience, max_iter)
                else:
                    _run_lm(objective, theta0, patience, max_iter)
        except _Stop:
            pass
    return initial


def _scored(expr: Expression, objective: _Objective, initial: float, evaluations: float, columns: np.ndarray,
            y: np.ndarray, y_var: float, w: np.ndarray | None, start: float) -> ConstantFit:
    """The fit's result: the best point seen if it lowered the subset loss (``initial``) by a
    relative ``_REL_TOL`` and is finite on all rows, else the input, scored once on all rows
    (not at all when the start was non-finite on the subset: it cannot be finite on all rows)."""
    if not math.isfinite(initial):
        return ConstantFit(expr, -math.inf, evaluations, time.perf_counter() - start, False,
                           objective.calls)
    best = objective.best_theta
    improved = best is not None and objective.best_loss < initial * (1.0 - _REL_TOL)
    if improved:
        fitted = expr.with_constants(best)
        r2 = r2_score(y, evaluate_columns(fitted, columns), y_var, w)
        evaluations += 1.0
        if r2 > -math.inf:
            return ConstantFit(fitted, r2, evaluations, time.perf_counter() - start, True,
                               objective.calls)
    # Not improved, or non-finite on rows outside the subset: score the input instead.
    r2 = r2_score(y, evaluate_columns(expr, columns), y_var, w)
    return ConstantFit(expr, r2, evaluations + 1.0, time.perf_counter() - start, False,
                       objective.calls)


def _run_bfgs(objective: _Objective, theta0: np.ndarray, patience: int, max_iter: int) -> None:
    """BFGS (Nocedal & Wright, Algorithm 6.1) with a backtracking Armijo line search.

    Our own loop rather than ``scipy.optimize.minimize``: with a handful of constants the
    objective costs tens of microseconds, and scipy's per-iteration Python overhead tripled the
    time of a fit (docs/notes/constants_bench.md). Patience counts iterations whose loss does not
    drop by a relative ``_REL_TOL``.
    """
    x = theta0.copy()
    f, g = objective.loss_and_grad(x)
    eye = np.eye(x.size)
    h = eye
    # First step of length at most 1 along -g (the inverse Hessian is unknown yet).
    t0 = min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
    best, stale = f, 0
    for _ in range(max_iter):
        if f <= 0.0 or float(np.max(np.abs(g))) < _GTOL:
            return
        p = -(h @ g)
        slope = float(g @ p)
        if not slope < 0.0:  # not a descent direction: restart from steepest descent
            h, p, slope = eye, -g, -float(g @ g)
        t = t0
        for _ in range(_MAX_BACKTRACKS):
            x_new = x + t * p
            f_new, g_new = objective.loss_and_grad(x_new)
            if f_new <= f + 1e-4 * t * slope:
                break
            if math.isfinite(f_new):  # minimum of the quadratic through f, slope and f_new
                t_q = -slope * t * t / (2.0 * (f_new - f - slope * t))
                t = min(max(t_q, 0.1 * t), 0.5 * t)
            else:
                t *= 0.1
        else:
            return  # no acceptable step along p
        s, yv = x_new - x, g_new - g
        sy = float(s @ yv)
        if sy > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(yv)):  # curvature condition
            if h is eye:  # scale the first estimate (Nocedal & Wright eq. 6.20)
                h = eye * (sy / float(yv @ yv))
            rho = 1.0 / sy
            hy = h @ yv
            h = h + ((sy + float(yv @ hy)) * rho * rho) * np.outer(s, s) - rho * (
                np.outer(hy, s) + np.outer(s, hy))
        x, f, g, t0 = x_new, f_new, g_new, 1.0
        if f < best * (1.0 - _REL_TOL):
            best, stale = f, 0
        else:
            stale += 1
            if stale >= patience:
                return


def _run_lm(objective: _Objective, theta0: np.ndarray, patience: int, max_iter: int) -> None:
    """Levenberg-Marquardt (MINPACK ``lmder`` via ``scipy.optimize.leastsq``), analytic Jacobian.

    ``leastsq`` rather than ``least_squares``: the same MINPACK routine without the latter's
    per-call set-up. It has no callback: the time cap and patience (counted on Jacobian calls
    at new points) are checked in the residual and Jacobian functions, and ``maxfev`` bounds
    the number of residual calls.
    """
    n_rows, n_const = objective.y.shape[0], theta0.shape[0]
    if n_rows < n_const:  # MINPACK needs at least as many residuals as unknowns
        _run_bfgs(objective, theta0, patience, max_iter)
        return
    state = {"best": objective.best_loss, "stale": 0, "last": theta0.tobytes()}

    def jacobian(theta: np.ndarray) -> np.ndarray:
        key = theta.tobytes()
        if key != state["last"]:
            state["last"] = key
            if objective.best_loss < state["best"] * (1.0 - _REL_TOL):
                state["best"], state["stale"] = objective.best_loss, 0
            else:
                state["stale"] += 1
                if state["stale"] >= patience:
                    raise _Stop
        return objective.jacobian(theta)

    leastsq(objective.residuals, theta0, Dfun=jacobian, col_deriv=True, maxfev=max_iter)
