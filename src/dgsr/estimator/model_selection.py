"""Model selection on held-out rows, a linear candidate for the front, and pole detection.

Three pieces the estimator combines after a search (docs/DESIGN.md, "Model selection"):

* :func:`validation_split` holds rows out of the search; :func:`validation_choice` then picks,
  among the front's expressions, the smallest one whose squared error on those rows is not
  worse than the best one's by more than one standard error of the paired difference (the
  "one-standard-error rule" of Breiman et al., applied to validation residuals).
* :func:`linear_candidate` is the ordinary-least-squares model ``b + sum_i w_i x_i`` as an
  expression, offered to the front so that noisy, mostly linear data (scikit-learn's diabetes)
  never ends with a formula worse than linear regression on the rows used to select.
* :func:`has_pole` says whether an expression has a pole inside the data's range, precisely:
  on the box spanned by the training columns (each variable between its minimum and maximum),
  either the expression is non-finite at one of the probe points (4,096 points drawn uniformly
  in the box with a fixed seed, plus the training rows), or the denominator of a division
  (``div``'s second argument, ``inv``'s argument, ``cos(u)`` for ``tan(u)``) is strictly
  positive at one probe point and strictly negative at another. The box is convex, so the
  segment between those two points lies in it, and a continuous denominator vanishes somewhere
  on it (a discontinuous one has a pole of its own, which the same test catches). A denominator
  can also touch zero without changing sign (``1/(t - 72)**2``): the same test then runs on what
  it is zero with, the argument of ``sq`` and ``sqrt``, each factor of a product and the
  numerator of a quotient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.linear_terms import weighted_sum
from dgsr.core.pareto import SELECTION_RULES, Entry, select
from dgsr.estimator.user_warnings import warn_user

#: Every ``model_selection`` the estimator accepts: the front-only rules of :mod:`dgsr.core.pareto`,
#: ``"validation"`` (rows held out from the search, :func:`validation_choice`) and ``"cv"``
#: (``"balanced"`` checked by cross-validation on small data, :mod:`dgsr.estimator.cross_validation`).
MODEL_SELECTION_RULES = (*SELECTION_RULES, "validation", "cv")
#: The rules that fall back to ``"balanced"`` when they have nothing to choose on (too few rows
#: held out, too many rows to cross-validate, a constant target).
_HELD_OUT_RULES = ("validation", "cv")
#: Share of the training rows held out from the search by ``model_selection="validation"``.
VALIDATION_SHARE = 0.25
#: Fewer rows than this in the validation part and the validation rule falls back to "balanced".
MIN_VALIDATION_ROWS = 10
#: Periods of the periodic operators, for :func:`undersampled_oscillation`.
PERIODS = {"sin": 2.0 * math.pi, "cos": 2.0 * math.pi, "tan": math.pi}
#: Fewer distinct argument values per period than this, and a periodic node's values on the
#: data are a hash of its inputs rather than a wave (Nyquist asks for more than two per period).
MIN_SAMPLES_PER_PERIOD = 4
#: Probe points of :func:`has_pole` drawn in the data's box.
POLE_PROBES = 4096
#: "Equally good" for the pole preference under a training-loss rule: loss within this factor.
POLE_LOSS_FACTOR = 1.01


def validation_split(n_rows: int, rng: np.random.Generator,
                     share: float = VALIDATION_SHARE) -> tuple[np.ndarray, np.ndarray] | None:
    """Sorted (search rows, validation rows) indices, or None when the validation part would be
    smaller than :data:`MIN_VALIDATION_ROWS` (too few rows to select on)."""
    n_val = round(share * n_rows)
    if n_val < MIN_VALIDATION_ROWS or n_rows - n_val < 2:
        return None
    order = rng.permutation(n_rows)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def squared_errors(exprs: Sequence[Expression], X: np.ndarray, y: np.ndarray,
                   sample_weight: np.ndarray | None = None) -> np.ndarray:
    """``[n_exprs, n_rows]`` squared errors on ``X, y`` (times the row weights, scaled to mean 1,
    when given); a row of inf for an expression that is non-finite anywhere there (it cannot be
    trusted on new rows like these)."""
    columns = as_columns(X)
    scale = 1.0 if sample_weight is None else sample_weight / np.mean(sample_weight)
    out = np.empty((len(exprs), len(y)))
    with np.errstate(all="ignore"):
        for i, expr in enumerate(exprs):
            err = scale * (evaluate_columns(expr, columns) - y) ** 2
            out[i] = err if np.isfinite(err).all() else np.inf
    return out


def one_se_eligible(errors: np.ndarray, reference: int, floor: float = 0.0) -> np.ndarray:
    """Boolean mask: rows of ``errors`` whose mean exceeds row ``reference``'s by at most one
    standard error of the paired per-row difference (so they are as good, within noise), or by
    at most ``floor``: two exact fits differ only by float rounding, whose "standard error" would
    otherwise decide between them."""
    n = errors.shape[1]
    out = np.zeros(len(errors), dtype=bool)
    ref = errors[reference]
    if not np.isfinite(ref).all():
        return out
    for i, row in enumerate(errors):
        if not np.isfinite(row).all():
            continue
        # In units of the largest difference: errors near the float range (a formula that
        # explodes on a few rows) would overflow the variance and make every row "as good".
        d = row - ref
        scale = float(np.max(np.abs(d))) if n else 0.0
        if not math.isfinite(scale):
            continue
        if scale == 0.0:
            out[i] = True
            continue
        d = d / scale
        se = float(np.std(d, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
        out[i] = float(np.mean(d)) <= se + floor / scale
    return out


def validation_choice(errors: np.ndarray, rule: str = "1se", floor: float = 0.0) -> int:
    """Index (into a front sorted by size) chosen from its squared errors on validation rows.

    ``"min"``: the lowest mean. ``"1se"``: the smallest expression within one standard error
    of the lowest mean (:func:`one_se_eligible`, with its ``floor``). An all-infinite front gives
    index 0.
    """
    means = errors.mean(axis=1)
    if not np.isfinite(means).any():
        return 0
    best = int(np.nanargmin(np.where(np.isfinite(means), means, np.inf)))
    if rule == "min":
        return best
    if rule != "1se":
        raise ValueError(f"rule must be 'min' or '1se', got {rule!r}")
    return int(np.flatnonzero(one_se_eligible(errors, best, floor))[0])


def cross_validated_choice(errors: np.ndarray, pick: int, floor: float = 0.0) -> int:
    """``pick`` when its out-of-fold ``errors`` are within one standard error (or ``floor``) of the
    lowest expression's, else the smallest expression (lowest index of a front sorted by size)
    that is. ``floor``: mean squared errors closer than this are equal (two exact fits)."""
    means = errors.mean(axis=1)
    if not np.isfinite(means).any():
        return pick
    best = int(np.argmin(np.where(np.isfinite(means), means, np.inf)))
    if one_se_eligible(errors, best, floor)[pick]:
        return pick
    return validation_choice(errors, "1se", floor)


def linear_candidate(X: np.ndarray, y: np.ndarray, max_size: int,
                     sample_weight: np.ndarray | None = None) -> Expression | None:
    """(Weighted) least-squares ``w_0*x0 + ... + w_{d-1}*x{d-1} + b`` as an expression (4d + 1
    nodes), or None when that exceeds ``max_size``, the fit is not finite, or there are too few rows."""
    n, d = X.shape
    if d == 0 or 4 * d + 1 > max_size or n <= d + 1:
        return None
    A = np.column_stack([X, np.ones(n)])
    root_w = np.ones(n) if sample_weight is None else np.sqrt(sample_weight)
    with np.errstate(all="ignore"):
        coef, *_ = np.linalg.lstsq(A * root_w[:, None], y * root_w, rcond=None)
    if not np.isfinite(coef).all():
        return None
    return weighted_sum([Expression.variable(i) for i in range(d)], coef[:d], float(coef[d]))


# ---------------------------------------------------------------------- poles
def _denominators(expr: Expression) -> list[Expression]:
    """Subexpressions whose zeros are poles of ``expr``: divisors, ``inv`` arguments, ``cos(u)`` of ``tan(u)``."""
    out = []
    for i, s in enumerate(expr.symbols):
        if s == "div":
            out.append(expr.subtree(expr.children(i)[1]))
        elif s == "inv":
            out.append(expr.subtree(i + 1))
        elif s == "tan":
            out.append(Expression.combine("cos", expr.subtree(i + 1)))
    return out


#: Operators whose value is zero wherever (one of) the listed children is: a denominator built of
#: them touches zero without changing sign (``(t - 72)**2``), so the sign test looks at those children.
_ZERO_PASSING = {"sq": (0,), "sqrt": (0,), "mul": (0, 1), "div": (0,)}


def _zero_candidates(denominator: Expression) -> list[Expression]:
    """``denominator`` and the subexpressions whose zeros are zeros of it through :data:`_ZERO_PASSING`."""
    out, stack = [], [denominator]
    while stack:
        expr = stack.pop()
        out.append(expr)
        children = expr.children(0)
        stack.extend(expr.subtree(children[k]) for k in _ZERO_PASSING.get(expr.symbols[0], ()))
    return out


def probe_points(X: np.ndarray, n: int = POLE_PROBES, seed: int = 0) -> np.ndarray:
    """``[n + n_rows, n_features]``: points drawn uniformly in the box spanned by ``X``, then ``X``."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    rng = np.random.default_rng(seed)
    box = lo + rng.random((n, X.shape[1])) * (hi - lo)
    return np.vstack([box, X])


def has_pole(expr: Expression, probes: np.ndarray) -> bool:
    """Whether ``expr`` has a pole inside the data range, tested on ``probes`` (see the module docstring)."""
    if not expr.variables:
        return False
    columns = as_columns(probes)
    with np.errstate(all="ignore"):
        if not np.isfinite(evaluate_columns(expr, columns)).all():
            return True
        for denominator in _denominators(expr):
            for candidate in _zero_candidates(denominator):
                values = evaluate_columns(candidate, columns)
                if (values > 0).any() and (values < 0).any():
                    return True
    return False


def as_good(entries: Sequence[Entry], reference: int, errors: np.ndarray | None = None) -> np.ndarray:
    """The one definition of "as good as entry ``reference``" that every selection step uses:
    within one standard error of the paired per-row difference of the held-out ``errors`` when
    there are any (validation rows or folds, :func:`one_se_eligible`), else a training loss at
    most :data:`POLE_LOSS_FACTOR` times the reference's."""
    if errors is not None:
        return one_se_eligible(errors, reference)
    limit = POLE_LOSS_FACTOR * entries[reference].mse
    return np.array([e.mse <= limit for e in entries])


def prefer_pole_free(entries: Sequence[Entry], chosen: int, probes: np.ndarray,
                     errors: np.ndarray | None = None) -> tuple[int, bool]:
    """``(index, has_pole)``: ``chosen``, or the smallest front entry without a pole that is
    :func:`as_good`. The flag says whether the returned entry has a pole."""
    if not has_pole(entries[chosen].expression, probes):
        return chosen, False
    for i in np.flatnonzero(as_good(entries, chosen, errors)):
        if i != chosen and not has_pole(entries[i].expression, probes):
            return int(i), False
    return chosen, True


# ---------------------------------------------------------------------- undersampled waves
def undersampled_oscillation(expr: Expression, columns: np.ndarray) -> bool:
    """Whether a ``sin``, ``cos`` or ``tan`` node of ``expr`` oscillates faster than the training
    rows ``columns`` can show: its argument spans more than one period and has fewer than
    :data:`MIN_SAMPLES_PER_PERIOD` distinct values per period spanned.

    Such a node takes nearly independent values at the rows (``tan(x)`` at integer ``x``), so
    a weight on it fits the noise of those rows, and cross-validation of the structure cannot
    tell: the structure was chosen because it fits them.
    """
    for i, symbol in enumerate(expr.symbols):
        period = PERIODS.get(symbol)
        if period is None:
            continue
        with np.errstate(all="ignore"):
            argument = evaluate_columns(expr.subtree(i + 1), columns)
        argument = argument[np.isfinite(argument)]
        if argument.size < 2:
            continue
        spanned = float(np.ptp(argument)) / period
        if spanned > 1.0 and np.unique(argument).size < MIN_SAMPLES_PER_PERIOD * spanned:
            return True
    return False


def _choice(entries: Sequence[Entry], allowed: np.ndarray, chosen: int | None, rule: str,
            errors: np.ndarray | None, model_selection: str) -> int:
    """The one choice among the ``allowed`` entries: ``chosen`` when it is allowed, else ``rule``'s
    pick on the training loss, checked on held-out ``errors`` where there are any (``"cv"``: the
    pick stands unless another predicts better by more than one standard error; validation
    rows: the smallest entry within one standard error of the best)."""
    if chosen is not None and allowed[chosen]:
        return chosen
    kept = np.flatnonzero(allowed)
    pick = int(select([entries[i] for i in kept], rule))
    if errors is None:
        return int(kept[pick])
    if model_selection == "cv":
        # Not the bare one-standard-error rule: on y spanning hundreds of orders of magnitude a
        # few rows carry all the error, the paired standard error is as large as the mean
        # difference, and the smallest entry (the constant) came out "as good" as exp(x)
        # (issue 48, item 4). "cv" keeps the training-loss pick unless the folds say otherwise.
        return int(kept[cross_validated_choice(errors[kept], pick)])
    return int(kept[validation_choice(errors[kept], "1se")])


# ---------------------------------------------------------------------- the estimator's choice
def choose_entry(entries: Sequence[Entry], chosen: int | None, X: np.ndarray, model_selection: str,
                 errors: np.ndarray | None = None) -> int:
    """The front entry ``predict`` uses, by one pipeline: the masks first (entries with an
    :func:`undersampled_oscillation` on ``X``, entries with a pole in the box of ``X``), then one
    choice (:func:`_choice`: ``chosen``, picked on held-out rows whose squared ``errors`` are
    given, or ``model_selection``'s rule) among the entries no mask removes. A pole is kept only
    where no entry without one is :func:`as_good` as the choice among all well-sampled entries
    (then a warning); a wave only where every entry is one. No step can bring back what an
    earlier one removed."""
    rule = "balanced" if model_selection in _HELD_OUT_RULES else model_selection
    if not entries or X.shape[1] == 0:
        return chosen if chosen is not None else int(select(entries, rule))
    columns, probes = as_columns(X), probe_points(X)
    waves = np.array([undersampled_oscillation(e.expression, columns) for e in entries])
    well_sampled = ~waves if (~waves).any() else np.ones(len(entries), dtype=bool)
    pick = _choice(entries, well_sampled, chosen, rule, errors, model_selection)
    if not has_pole(entries[pick].expression, probes):
        return pick
    clean = well_sampled & np.array([not has_pole(e.expression, probes) for e in entries])
    if clean.any():
        alternative = _choice(entries, clean, None, rule, errors, model_selection)
        if as_good(entries, pick, errors)[alternative]:
            return alternative
    warn_user("The selected expression has a pole (or is undefined) inside the range of the training "
              "data and no equally good expression of the front avoids it: predictions near it can be "
              "huge. See equations_ for the alternatives.")
    return pick
