"""One fit without the estimator: :func:`fit_front` searches, polishes and selects, and returns
a :class:`FitResult` that ``SymbolicRegressor.fit`` copies onto itself.

The steps, in the order they draw from the random streams (features, search, polish):
choose the columns (:mod:`dgsr.estimator.features`), hold out validation rows when asked, run
the search under its share of the budget (:mod:`dgsr.estimator.budget_plan`,
:mod:`dgsr.estimator.fit_search`), continue it where the fold searches would be skipped, refit
the front's constants on all rows (:mod:`dgsr.estimator.polish`), then choose among the front:
on validation rows, by ``"cv"``'s check with the whole-search size limit
(:mod:`dgsr.estimator.front_checks`), or by the rule. Everything here is in the search's units
(rows scaled by powers of two); ``FitResult.scaling`` maps back.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dgsr.core.evaluate import as_columns, evaluate, evenly_spaced, weighted_mean, weighted_var
from dgsr.core.exponent_scaling import Scaling, is_constant_target
from dgsr.core.expression import Expression
from dgsr.core.pareto import non_dominated
from dgsr.estimator.budget_plan import BudgetPlan, plan_budget
from dgsr.estimator.features import select_features
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.fit_search import SearchRows, continued, feature_limit, random_streams, run_search
from dgsr.estimator.fit_units import has_units, penalised, unit_check, with_unit_groups
from dgsr.estimator.front import FrontEntry, admitted, best_of_each_size, front_entry
from dgsr.estimator.front_checks import Outcome, Split, cross_validated, exact_fit_floor, validated
from dgsr.estimator.guesses import seeded
from dgsr.estimator.interrupts import FitLedger
from dgsr.estimator.large_data import refit_rows, scored_on_all_rows, scoring_seconds
from dgsr.estimator.model_selection import (
    MIN_VALIDATION_ROWS,
    VALIDATION_SHARE,
    choose_entry,
    linear_candidate,
    validation_split,
)
from dgsr.estimator.pi_search import reduced_seeds
from dgsr.estimator.polish import polish
from dgsr.estimator.search_cv import NOISE_FREE_R2
from dgsr.estimator.user_warnings import entry_point, warn_user
from dgsr.estimator.warm_start import kept_archive, kept_structures

#: What a warm-started fit keeps of the previous one: (searched columns, archive, scaling of all columns).
KeptFront = tuple[np.ndarray, Any, Scaling]


@dataclass(frozen=True)
class FitResult:
    """What one fit found, as ``SymbolicRegressor.fit`` stores it.

    ``entries`` is the front in the search's units, sorted by size; ``best_index`` the entry
    ``predict`` uses; ``feature_index`` the searched columns (named ``selected_features``);
    ``scaling`` maps those columns and y between the search's units and the user's; ``y_mean``
    is the (weighted) training mean in the search's units. ``validation_loss`` (user units) is
    the held-out or out-of-fold loss per entry, ``size_limit`` the whole-search check's bound
    (None where it did not apply), ``archive`` what a warm start keeps (None unless asked).
    """

    entries: list[FrontEntry]
    best_index: int
    feature_index: np.ndarray
    selected_features: list[str]
    scaling: Scaling
    y_mean: float
    n_evaluations: int
    history: list = field(default_factory=list)
    stop_reason: str = ""
    n_trials: int = 0
    validation_loss: np.ndarray | None = None
    size_limit: int | None = None
    interrupted: bool = False
    archive: KeptFront | None = None
    units: Any = None
    #: Per searched column: 1 where every training value is positive, -1 negative, 0 otherwise
    #: (the signs the displayed formulas may assume).
    column_signs: tuple[int, ...] = ()
    #: Per searched column: typical magnitudes in the user's units (:func:`column_magnitudes`), at
    #: which the displayed formulas judge what is float noise.
    column_magnitudes: tuple[tuple[float, ...], ...] = ()

    def predictions(self, X: np.ndarray, index: int) -> np.ndarray:
        """Entry ``index`` on the rows of ``X`` (all columns the fit saw, the user's units), in the
        user's units; NaN where the formula is undefined (no fallback)."""
        X_sel = self.scaling.scale_X(np.asarray(X, dtype=np.float64)[:, self.feature_index])
        values = self.scaling.unscale_y(evaluate(self.entries[index].expression, X_sel))
        return np.where(np.isfinite(values), values, np.nan)


@entry_point
def fit_front(config: FitConfig, rows: SearchRows, names: Sequence[str], *,
              streams: Sequence[np.random.Generator] | None = None, start: float | None = None,
              previous: KeptFront | None = None) -> FitResult:
    """Search, polish and select on ``rows`` (:func:`dgsr.estimator.fit_search.search_rows` of
    the validated data, whose columns ``names`` names) under ``config``'s budget.

    ``streams``: the (features, search, polish) generators (default: a first fit's, from
    ``config.random_state``); ``start``: ``time.perf_counter()`` the time limit counts from
    (default: now); ``previous``: a warm start's kept front. A constant target gives that
    constant without a search.
    """
    start = time.perf_counter() if start is None else start
    feat_rng, search_rng, polish_rng = random_streams(config.random_state, 1) if streams is None else streams
    y_mean = weighted_mean(rows.y, rows.w)
    if is_constant_target(rows.y):
        return _constant_result(config, rows, y_mean)
    from dgsr.estimator.policy_loading import load_policy

    policy = load_policy(config.policy, device=config.device, operators=config.allowed_operators())
    index = _searched_columns(config, policy, rows, names, feat_rng)
    config = seeded(config, names, index, rows.scaling)  # the user's guesses as the search's roots
    if has_units(config):  # the units of the searched columns, the penalty in the search's loss units
        config = replace(config, search_units=unit_check(config, index, rows.X.shape[1],
                                                                   weighted_var(rows.y, rows.w)))
        policy = with_unit_groups(policy, config.search_units)
    if previous is not None and (not np.array_equal(previous[0], index) or previous[2] != rows.scaling):
        previous = None  # other columns or units: the old archive's variables mean other things
    split = _validation_rows(config, len(rows.y), feat_rng.spawn(1)[0])
    ledger = FitLedger()
    # All columns in order: the rows themselves, not a copy (ten million rows are gigabytes).
    X = rows.X if np.array_equal(index, np.arange(rows.X.shape[1])) else rows.X[:, index]
    outcome, archive = _search_front(config, X, rows.y, rows.w, split, policy, search_rng, polish_rng, start,
                                     ledger, None if previous is None else previous[1])
    scaling = Scaling(tuple(rows.scaling.x_exponents[i] for i in index), rows.scaling.y_exponent)
    # Poles are looked for in the search's units (powers of two: the same box, scaled).
    sample = refit_rows(len(rows.y), config.batching)
    best = choose_entry(outcome.entries, outcome.chosen, X if sample is None else X[sample], config.model_selection,
                        outcome.errors)
    loss = None if outcome.losses is None else np.array([scaling.unscale_loss(v) for v in outcome.losses])
    return FitResult(
        entries=outcome.entries, best_index=best, feature_index=index, selected_features=[names[i] for i in index],
        scaling=scaling, y_mean=y_mean, n_evaluations=round(ledger.evaluations), history=ledger.history,
        stop_reason=ledger.stop_reason, n_trials=ledger.n_trials, validation_loss=loss, size_limit=outcome.size_limit,
        interrupted=ledger.interrupted, units=config.search_units, column_signs=column_signs(X),
        column_magnitudes=column_magnitudes(X, scaling.x_exponents),
        archive=(index, archive, rows.scaling) if config.warm_start and archive is not None else None)


def column_signs(X: np.ndarray) -> tuple[int, ...]:
    """Per column of ``X``: 1 where every value is positive, -1 where every one is negative, else 0."""
    if X.shape[0] == 0:
        return (0,) * X.shape[1]
    # Column by column: a comparison of ten million rows at once would be a copy of the data's size.
    return tuple(int(bool(np.all(X[:, j] > 0))) - int(bool(np.all(X[:, j] < 0))) for j in range(X.shape[1]))


#: Rows (evenly spaced) that :func:`column_magnitudes` reads: percentiles need no more.
_MAGNITUDE_ROWS = 10_000


def column_magnitudes(X: np.ndarray, x_exponents: Sequence[int]) -> tuple[tuple[float, ...], ...]:
    """Per column of ``X`` (the search's units, ``x_exponents`` its powers of two): the 5th, 50th
    and 95th percentiles of its nonzero finite magnitudes in the user's units (1.0 where it has
    none)."""
    rows = X[evenly_spaced(X.shape[0], _MAGNITUDE_ROWS)] if X.shape[0] > _MAGNITUDE_ROWS else X
    out = []
    for j, e in enumerate(x_exponents):
        values = np.abs(rows[:, j])
        values = values[np.isfinite(values) & (values > 0)]
        if not len(values):
            out.append((1.0, 1.0, 1.0))
            continue
        out.append(tuple(float(math.ldexp(float(q), int(e))) for q in np.percentile(values, [5, 50, 95])))
    return tuple(out)


def _constant_result(config: FitConfig, rows: SearchRows, y_mean: float) -> FitResult:
    """The fit of a constant target: that constant, no search."""
    entries = [front_entry(Expression.constant(y_mean), as_columns(rows.X[:, :0]), rows.y, w=rows.w)]
    entries = admitted(entries, config.formula_rules())
    return FitResult(entries=entries, best_index=0, feature_index=np.arange(0), selected_features=[],
                     scaling=Scaling((), rows.scaling.y_exponent), y_mean=y_mean, n_evaluations=0,
                     stop_reason="constant_target")


def _searched_columns(config: FitConfig, policy: Any, rows: SearchRows, names: Sequence[str],
                      rng: np.random.Generator) -> np.ndarray:
    """The columns the search uses: all, unless ``max_features`` or the policy names fewer (then a warning)."""
    limit, why = feature_limit(policy, config.max_features)
    index = select_features(rows.X, rows.y, limit, rng=rng) if limit is not None else np.arange(rows.X.shape[1])
    if len(index) < rows.X.shape[1]:
        kept = [names[i] for i in index]
        warn_user(f"X has {rows.X.shape[1]} columns, more than {why}; the search uses the {len(index)} "
                  f"with the highest mutual information with y: {', '.join(kept)}.")
    return index


def _validation_rows(config: FitConfig, n_rows: int, rng: np.random.Generator) -> Split | None:
    """(search rows, validation rows) for ``model_selection="validation"``, else None."""
    if config.model_selection != "validation":
        return None
    split = validation_split(n_rows, rng)
    if split is None:
        warn_user(f"model_selection='validation' needs at least {MIN_VALIDATION_ROWS} validation rows "
                  f"({VALIDATION_SHARE:.0%} of the data); with {n_rows} rows the search uses them all "
                  "and selects by the 'balanced' rule.")
    return split


def _search_front(config: FitConfig, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, split: Split | None,
                  policy: Any, search_rng: np.random.Generator, polish_rng: np.random.Generator, start: float,
                  ledger: FitLedger, previous: Any) -> tuple[Outcome, Any]:
    """Run the search, refit the front's constants on its rows and choose among it; returns the
    outcome and the archive a warm start keeps (None unless ``config.warm_start``).

    With a validation ``split`` the search and the refit use the search rows only; the
    expression is chosen on the validation rows, then its constants are refitted on all rows.
    """
    X_all, y_all, w_all = X, y, w
    if split is not None:
        X, y = X_all[split[0]], y_all[split[0]]
        w = w_all[split[0]] if w_all is not None else None
    sample = refit_rows(len(y), config.batching)  # the refit's rows above REFIT_ROWS (batching)
    plan = plan_budget(config, len(y), start, 0.0 if sample is None else scoring_seconds(X))
    # Before the search, with units: the pi-reduced problem's front as roots (never the fold searches', which reduce their own rows).
    seeds = reduced_seeds(config, X, y, w, policy, search_rng, plan)
    searched = replace(config, search_roots=config.search_roots + seeds.roots) if seeds.roots else config
    result, went_on = _searched(searched, X, y, w, policy, search_rng, plan, split is None, seeds.evaluations)
    ledger.evaluations = float(result.n_evaluations) + seeds.evaluations
    ledger.history, ledger.stop_reason, ledger.n_trials = list(result.history), result.stop_reason, int(result.n_trials)
    Xr, yr, wr = (X, y, w) if sample is None else (X[sample], y[sample], None if w is None else w[sample])
    candidates = _candidates(searched, result, Xr, yr, wr, previous) + list(seeds.candidates)
    if result.stop_reason == "interrupted":  # Ctrl-C in the search: no polish (see dgsr.estimator.interrupts)
        ledger.note_interrupt("the search", "constants are not refitted on all rows")
    # Losses closer than 1e-15 of var(y) are float noise (two exact fits): the larger one is no gain.
    floor = exact_fit_floor(y, w)
    keep = plan.polish_reserve(went_on)  # evaluations kept for what follows the polish
    refitted = polish(candidates, as_columns(Xr), yr, polish_rng, plan, ledger, wr, keep=keep,
                      snap=config.snap_constants)
    if sample is not None:
        refitted = scored_on_all_rows(refitted, X, y, w)
    refitted = _within_rules(config, refitted, X, y, w)
    entries = non_dominated(best_of_each_size(refitted), floor)
    # Kept only when asked for: the one part of the fitted state that grows with the search.
    archive = kept_archive(result.archive, entries) if config.warm_start else None
    if split is None:
        return cross_validated(config, entries, X, y, w, polish_rng, plan, ledger, policy), archive
    outcome = validated(entries, split, X_all, y_all, w_all, polish_rng, plan, ledger, config.snap_constants)  # scored again: penalise again
    return replace(outcome, entries=penalised(outcome.entries, config.search_units)), archive


def _within_rules(config: FitConfig, entries: list[FrontEntry], X: np.ndarray, y: np.ndarray,
                  w: np.ndarray | None) -> list[FrontEntry]:
    """The refitted entries that keep the user's rules, sized by complexity (:func:`admitted`),
    the mean when none does (a rule as strict as ``maxdepth=1`` and no variable fits alone); the
    units' penalty added to the loss of the dimensionally inconsistent ones."""
    rules = config.formula_rules()
    kept = admitted(entries, rules)
    if not kept and rules is not None:
        kept = admitted([front_entry(Expression.constant(weighted_mean(y, w)), as_columns(X[:, :0]), y, w=w)], rules)
    return penalised(kept, config.search_units)


def _searched(config: FitConfig, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, policy: Any,
              rng: np.random.Generator, plan: BudgetPlan, all_rows: bool, before: float = 0.0) -> tuple[Any, bool]:
    """The search's result and whether it went on with the fold searches' share (they would be
    skipped: the front fits the rows without noise); ``before``: evaluations already spent on its
    share (the reduced search's)."""
    # A warm start searches with the whole budget into a fresh archive; the previous front comes
    # back as structures re-valued on these rows (dgsr.estimator.warm_start).
    result = run_search(config, X, y, policy, rng, plan, None, w, before=before)
    if not (all_rows and _fits_without_noise(config, result, len(y))):
        return result, False
    more = run_search(config, X, y, policy, rng, plan, result.archive, w, spent=float(result.n_evaluations) + before)
    return continued(result, more), True


def _fits_without_noise(config: FitConfig, result: Any, n_rows: int) -> bool:
    """Whether the search ran on half of the budget for the whole-search check, and its front
    fits the rows so closely (:data:`~dgsr.estimator.search_cv.NOISE_FREE_R2`) that the check will
    be skipped; not after a Ctrl-C or a reached ``target_r2``."""
    if not config.cross_validates_search(n_rows) or result.stop_reason in ("interrupted", "target"):
        return False
    return result.best is not None and result.best.r2 >= NOISE_FREE_R2


def _candidates(config: FitConfig, result: Any, X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
                previous: Any) -> list[Expression]:
    """What the polish refits: the search's front, the least-squares linear model, a warm start's
    kept structures and the user's guesses (after the search's own, so those are refitted exactly
    as in a cold fit)."""
    candidates = [e.expression for e in result.archive.front()]
    if not candidates:  # nothing valid within the budget: the mean is the honest answer
        candidates = [Expression.constant(weighted_mean(y, w))]
    allowed = config.allowed_operators()
    linear = linear_candidate(X, y, config.max_size, w) if allowed is None or {"add", "mul"} <= set(allowed) \
        else None
    if linear is not None:  # the front then never loses to linear regression (DESIGN: model selection)
        candidates.append(linear)
    return candidates + kept_structures(previous) + list(config.search_roots)
