"""What ``SymbolicRegressor.fit`` does between checking the data and building ``equations_``:
scale the rows, pick the columns, run the search under one budget, and refit the front.

The functions take the estimator and set its search statistics (``n_evaluations_``,
``history_``, ``stop_reason_``, ``n_trials_``) and its private state (``_feature_index``,
``_archive``); the search itself is :func:`dgsr.search.parallel.run_parallel_search`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.evaluate import as_columns, weighted_mean, weighted_var
from dgsr.core.exponent_scaling import Scaling, fit_scaling
from dgsr.core.expression import Expression
from dgsr.core.pareto import non_dominated, select
from dgsr.estimator.cross_validation import (
    CV_MAX_ROWS,
    CV_MIN_ROWS,
    cross_validated_choice,
    fold_labels,
    out_of_fold_errors,
)
from dgsr.estimator.features import select_features
from dgsr.estimator.front import FrontEntry, best_of_each_size, front_entry
from dgsr.estimator.input_checks import TrainingData, validate_sample_weight
from dgsr.estimator.interrupts import note_interrupt
from dgsr.estimator.model_selection import (
    MIN_VALIDATION_ROWS,
    VALIDATION_SHARE,
    linear_candidate,
    squared_errors,
    validation_choice,
    validation_split,
)
from dgsr.estimator.polish import polish
from dgsr.estimator.search_cv import NOISE_FREE_R2, SEARCH_CV_SHARE, runs_search_cv, size_limit
from dgsr.estimator.warm_start import kept_archive, kept_structures
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt

# Share of the budget kept back from the search for refitting the front's constants on all rows.
_POLISH_TIME_SHARE, _POLISH_TIME_MAX = 0.05, 5.0
#: Share of var(y) below which the front treats two losses as equal (an R² difference under 1e-15).
_EXACT_FIT_FLOOR = 1e-15
_POLISH_EVAL_SHARE = 0.02
#: Evaluations kept back for the ``"cv"`` check where it runs, out of the polish's reach: at most
#: this many (measured: about 190 for a 14-expression front on 750 rows, docs/DESIGN.md) and at
#: most a fifth of ``max_evaluations``. A check that runs out of them leaves the pick as it is.
_CV_EVALS, _CV_EVAL_SHARE_MAX = 400.0, 0.2
#: The fold searches of the whole-search check end this share of ``max_time`` before it (each
#: fit of a copy overruns its own time by a little: checks, polish, predictions).
_SEARCH_CV_TIME_MARGIN = 0.03


def _cv_reserve(est: Any, n_rows: int) -> float:
    """Evaluations of ``est.max_evaluations`` kept for the ``"cv"`` check (0 where it does not run)."""
    if est.max_evaluations is None or not _cross_validates(est, n_rows):
        return 0.0
    return min(_CV_EVALS, _CV_EVAL_SHARE_MAX * est.max_evaluations)


def _search_cv_reserve(est: Any, n_rows: int) -> float:
    """Evaluations of ``est.max_evaluations`` kept for the fold searches of the whole-search check
    (:mod:`dgsr.estimator.search_cv`; 0 where it does not run)."""
    if est.max_evaluations is None or not _cross_validates_search(est, n_rows):
        return 0.0
    return SEARCH_CV_SHARE * (est.max_evaluations * (1.0 - _POLISH_EVAL_SHARE) - _cv_reserve(est, n_rows))

Split = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class SearchRows:
    """The training rows as the search sees them: scaled by powers of two, zero-weight rows left out."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    scaling: Scaling


@dataclass(frozen=True)
class SearchOutcome:
    """The refitted front, the index chosen on validation rows (None: the caller's rule picks) and
    those rows' squared errors (``[n_entries, n_rows]``, None without validation)."""

    entries: list[FrontEntry]
    chosen: int | None = None
    errors: np.ndarray | None = None


def random_streams(random_state: Any, n_fits: int) -> list[np.random.Generator]:
    """(features, search, polish) generators for the ``n_fits``-th fit of a warm-started series."""
    root = _root_rng(random_state)
    # A warm-started fit continues with fresh random streams instead of replaying the last one.
    for _ in range(n_fits - 1):
        root = root.spawn(1)[0]
    return root.spawn(3)


def search_rows(data: TrainingData, sample_weight: Any) -> SearchRows:
    """``data`` scaled by powers of two (exact, so any magnitude works) with weights normalised to
    mean 1; a zero weight is a row left out, exactly."""
    scaling = fit_scaling(data.X, data.y, data.names)
    X, y = scaling.scale_X(data.X), scaling.scale_y(data.y)
    if not math.isfinite(scaling.unscale_loss(max(float(np.var(y)), 1e-300))):
        top = float(np.max(np.abs(data.y)))
        warnings.warn(f"y reaches {top:.3g}: squared errors in its units overflow float64, so the 'loss' column "
                      "of equations_ and validation_loss_ show inf. The search, the model selection, r2, score() "
                      "and the formulas are exact (they work on y scaled by a power of two); divide y by a power "
                      "of ten to read losses.",
                      UserWarning, stacklevel=3)
    w = validate_sample_weight(sample_weight, X)
    if w is not None and not (w > 0).all():
        keep = w > 0
        X, y = X[keep], y[keep]
        w = w[keep] * (len(w[keep]) / float(np.sum(w[keep])))
    return SearchRows(X, y, w, scaling)


def constant_model(est: Any, rows: SearchRows) -> SearchOutcome:
    """The fit of a constant target: that constant, no search."""
    est._feature_index = np.arange(0)
    est.selected_features_ = []
    entries = [front_entry(Expression.constant(est._y_mean), as_columns(rows.X[:, :0]), rows.y, w=rows.w)]
    est.n_evaluations_, est.history_, est.stop_reason_ = 0.0, [], "constant_target"
    est.n_trials_ = 0
    est._archive = None
    est.validation_loss_ = None
    est.size_limit_ = None
    return SearchOutcome(entries, 0)


def search_model(est: Any, data: TrainingData, rows: SearchRows, previous: Any, start: float,
                 streams: list[np.random.Generator]) -> SearchOutcome:
    """Choose the columns, hold out validation rows when asked, search and refit the front."""
    from dgsr.estimator.policy_loading import load_policy

    feat_rng, search_rng, polish_rng = streams
    policy = load_policy(est.policy, device=est.device, operators=allowed_operators(est))
    limit, why = _feature_limit(policy, est.max_features)
    index = select_features(rows.X, rows.y, limit, rng=feat_rng) if limit is not None else \
        np.arange(rows.X.shape[1])
    if len(index) < rows.X.shape[1]:
        kept = [data.names[i] for i in index]
        warnings.warn(
            f"X has {rows.X.shape[1]} columns, more than {why}; the search uses the {len(index)} "
            f"with the highest mutual information with y: {', '.join(kept)}.", UserWarning, stacklevel=3)
    if previous is not None and (not np.array_equal(previous[0], index) or previous[2] != rows.scaling):
        previous = None  # other columns or units: the old archive's variables mean other things
    est._feature_index = index
    est.selected_features_ = [data.names[i] for i in index]
    split = _validation_rows(est, len(rows.y), feat_rng.spawn(1)[0])
    return search_front(est, rows.X[:, index], rows.y, search_rng, polish_rng, start,
                        previous[1] if previous is not None else None, rows.w, split, policy)


def _validation_rows(est: Any, n_rows: int, rng: np.random.Generator) -> Split | None:
    """(search rows, validation rows) for ``model_selection="validation"``, else None."""
    est.validation_loss_ = None
    est.size_limit_ = None
    if est.model_selection != "validation":
        return None
    split = validation_split(n_rows, rng)
    if split is None:
        warnings.warn(f"model_selection='validation' needs at least {MIN_VALIDATION_ROWS} validation rows "
                      f"({VALIDATION_SHARE:.0%} of the data); with {n_rows} rows the search uses them all "
                      "and selects by the 'balanced' rule.", UserWarning, stacklevel=4)
    return split


def search_front(est: Any, X: np.ndarray, y: np.ndarray, search_rng: np.random.Generator,
                 polish_rng: np.random.Generator, start: float, previous: Any, w: np.ndarray | None,
                 split: Split | None, policy: Any) -> SearchOutcome:
    """Run the MCTS search, then refit the front's constants on all rows.

    With a validation ``split`` the search and the refit use the search rows only; the
    expression is chosen on the validation rows, then its constants are refitted on all rows.
    """
    X_all, y_all, w_all = X, y, w
    if split is not None:
        X, y = X_all[split[0]], y_all[split[0]]
        w = w_all[split[0]] if w_all is not None else None
    # A warm start searches with the whole budget into a fresh archive; the previous front comes
    # back as structures re-valued on these rows (dgsr.estimator.warm_start).
    result = _search_with_progress(est, X, y, policy, search_rng, start, None, w)
    continued = split is None and _fits_without_noise(est, result, len(y))
    if continued:
        # The fold searches would be skipped (nothing fitted noise): their half of the budget
        # goes back to the search, which continues into the same archive.
        more = _search_with_progress(est, X, y, policy, search_rng, start, result.archive, w,
                                     spent=float(result.n_evaluations))
        result = _continued(result, more)
    est.n_evaluations_ = float(result.n_evaluations)
    est.history_ = list(result.history)
    est.stop_reason_ = result.stop_reason
    est.n_trials_ = int(result.n_trials)
    est._archive = None

    candidates = [e.expression for e in result.archive.front()]
    if not candidates:  # nothing valid within the budget: the mean is the honest answer
        candidates = [Expression.constant(weighted_mean(y, w))]
    allowed = allowed_operators(est)
    linear = linear_candidate(X, y, est.max_size, w) if allowed is None or {"add", "mul"} <= set(allowed) \
        else None
    if linear is not None:  # the front then never loses to linear regression (DESIGN: model selection)
        candidates.append(linear)
    # After the search's own candidates, so those are refitted exactly as in a cold fit.
    candidates += kept_structures(previous)
    if result.stop_reason == "interrupted":  # Ctrl-C in the search: no polish (see dgsr.estimator.interrupts)
        note_interrupt(est, "the search", "constants are not refitted on all rows", stacklevel=5)
    # Losses closer than 1e-15 of var(y) are float noise (two exact fits): the larger one is no gain.
    floor = _exact_fit_floor(y, w)
    # Evaluations kept for what follows the polish (none for fold searches a continued search spent).
    keep = _cv_reserve(est, len(y)) + (0.0 if continued else _search_cv_reserve(est, len(y))) if split is None \
        else 0.0
    entries = non_dominated(best_of_each_size(polish(est, candidates, as_columns(X), y, polish_rng, start, w,
                                                     keep=keep)),
                            floor)
    if est.warm_start:  # kept only when asked for: the one part of the fitted state that grows with the search
        est._archive = (est._feature_index, kept_archive(result.archive, entries), est._full_scaling)
    if split is None:
        return _cross_validated(est, entries, X, y, w, polish_rng, start)
    w_val = w_all[split[1]] if w_all is not None else None
    errors = squared_errors([e.expression for e in entries], X_all[split[1]], y_all[split[1]], w_val)
    chosen = validation_choice(errors, floor=_exact_fit_floor(y_all[split[1]], w_val))
    refit = polish(est, [entries[chosen].expression], as_columns(X_all), y_all, polish_rng, start, w_all)
    if refit:
        entries[chosen] = refit[0]
    all_columns, y_var = as_columns(X_all), weighted_var(y_all, w_all)
    entries = [front_entry(e.expression, all_columns, y_all, y_var, w_all) for e in entries]
    est.validation_loss_ = errors.mean(axis=1)
    return SearchOutcome(entries, chosen, errors)


def _exact_fit_floor(y: np.ndarray, w: np.ndarray | None) -> float:
    """Losses closer than this are float noise (two exact fits): 1e-15 of var(y), 0 if that is not finite."""
    floor = _EXACT_FIT_FLOOR * weighted_var(y, w)
    return floor if math.isfinite(floor) else 0.0


def _cross_validates(est: Any, n_rows: int) -> bool:
    """Whether ``model_selection="cv"`` checks its pick on data of ``n_rows`` rows."""
    return est.model_selection == "cv" and CV_MIN_ROWS <= n_rows <= _cv_max_rows(est)


def _cross_validates_search(est: Any, n_rows: int) -> bool:
    """Whether ``est`` also cross-validates its whole search on data of ``n_rows`` rows."""
    return runs_search_cv(est.model_selection, n_rows, _cv_max_rows(est))


def _cv_max_rows(est: Any) -> int:
    """``est.cv_max_rows`` (estimators pickled before it existed: the former row limit)."""
    return int(getattr(est, "cv_max_rows", CV_MAX_ROWS))


def _cross_validated(est: Any, entries: list[FrontEntry], X: np.ndarray, y: np.ndarray,
                     w: np.ndarray | None, rng: np.random.Generator, start: float) -> SearchOutcome:
    """The front, with ``"cv"``'s choice among it when the data are small enough to check
    (:mod:`dgsr.estimator.cross_validation`), bounded by the size limit of the whole-search check
    on tiny data (:mod:`dgsr.estimator.search_cv`); otherwise the caller's rule picks."""
    n_rows = len(y)
    est.size_limit_ = None
    if not entries or not _cross_validates(est, n_rows) or est._interrupted:
        return SearchOutcome(entries)
    pick = int(select(entries, "balanced"))
    labels = fold_labels(n_rows, rng)
    evals_left = math.inf if est.max_evaluations is None else est.max_evaluations - est.n_evaluations_
    try:
        errors, spent = out_of_fold_errors([e.expression for e in entries], as_columns(X), y, labels, rng, w,
                                           max_evaluations=evals_left)
    except INTERRUPTS as err:  # Ctrl-C while cross-validating: the training-loss rule picks
        if not is_interrupt(err):
            raise
        note_interrupt(est, "cross-validation", "the 'balanced' rule picks on training loss", stacklevel=5)
        return SearchOutcome(entries)
    est.n_evaluations_ += spent
    if errors is None:  # the evaluation budget ran out first: the training-loss rule picks
        return SearchOutcome(entries)
    est.validation_loss_ = errors.mean(axis=1)
    floor = _exact_fit_floor(y, w)  # two exact laws: rounding noise must not choose between them
    if _cross_validates_search(est, n_rows):
        limit = _size_limit(est, entries, X, y, w, rng, start)
        if limit is not None:
            est.size_limit_ = limit
            within = np.array([e.size <= limit for e in entries])
            # Entries above the limit leave the running: every later choice (the undersampled
            # waves, the poles) reads these errors.
            errors = np.where(within[:, None], errors, np.inf)
            kept = np.flatnonzero(within)
            pick = pick if within[pick] else int(kept[select([entries[i] for i in kept], "balanced")])
    return SearchOutcome(entries, cross_validated_choice(errors, pick, floor), errors)


def _size_limit(est: Any, entries: list[FrontEntry], X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
                rng: np.random.Generator, start: float) -> int | None:
    """:func:`dgsr.estimator.search_cv.size_limit` within what is left of ``est``'s budget (None
    when nothing is left, or after a Ctrl-C in it)."""
    deadline = None if est.max_time is None else start + est.max_time * (1.0 - _SEARCH_CV_TIME_MARGIN)
    evals_left = None if est.max_evaluations is None else est.max_evaluations - est.n_evaluations_
    try:
        limit, spent, interrupted = size_limit(est, entries, X, y, w, rng, deadline, evals_left)
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        limit, spent, interrupted = None, 0.0, True
    if interrupted:
        note_interrupt(est, "the search's cross-validation", "no size limit is applied", stacklevel=6)
    est.n_evaluations_ += spent
    return limit


def _fits_without_noise(est: Any, result: Any, n_rows: int) -> bool:
    """Whether the search ran on half of the budget for the whole-search check, and its front
    fits the rows so closely (:data:`~dgsr.estimator.search_cv.NOISE_FREE_R2`) that the check will
    be skipped; not after a Ctrl-C or a reached ``target_r2``."""
    if not _cross_validates_search(est, n_rows) or result.stop_reason in ("interrupted", "target"):
        return False
    return result.best is not None and result.best.r2 >= NOISE_FREE_R2


def _continued(first: Any, more: Any) -> Any:
    """One search result of a search and its continuation into the same archive."""
    return dataclasses.replace(
        more, n_evaluations=first.n_evaluations + more.n_evaluations, n_trials=first.n_trials + more.n_trials,
        n_iterations=first.n_iterations + more.n_iterations, elapsed=first.elapsed + more.elapsed,
        history=[*first.history, *(dict(h, evaluations=h["evaluations"] + first.n_evaluations) for h in more.history)],
        mutation_stats={k: first.mutation_stats.get(k, 0) + more.mutation_stats.get(k, 0)
                        for k in {*first.mutation_stats, *more.mutation_stats}},
        trials=[*first.trials, *more.trials])


def _search_with_progress(est: Any, X: np.ndarray, y: np.ndarray, policy: Any, rng: np.random.Generator,
                          start: float, previous: Any, w: np.ndarray | None, spent: float | None = None) -> Any:
    """The search under what is left of ``est``'s budget, with a progress line when ``verbose``.

    ``spent``: the evaluations of a first part of this search, which continues (into
    ``previous``) with all that is left, the fold searches' share included."""
    from dgsr.core.budget import Budget
    from dgsr.search.mcts import SearchConfig

    config_kwargs: dict[str, Any] = {"n_samples": est.n_samples, "p_uct": est.p_uct,
                                     "iterations_per_trial": est.iterations_per_trial,
                                     "max_size": est.max_size, "operators": allowed_operators(est),
                                     "inner_fit_steps": est.inner_fit_steps}
    if est.constant_fitting is not None:
        config_kwargs["constant_fitting"] = est.constant_fitting
    config = SearchConfig(**config_kwargs)
    # On tiny data the fold searches of the whole-search check take a share of the time.
    share = 1.0 - SEARCH_CV_SHARE if _cross_validates_search(est, len(y)) and spent is None else 1.0
    search_time = None
    if est.max_time is not None:
        reserve = min(_POLISH_TIME_SHARE * est.max_time, _POLISH_TIME_MAX)
        search_time = share * max(est.max_time - reserve - (time.perf_counter() - start), 0.0)
    search_evals = None
    if est.max_evaluations is not None:
        folds = _search_cv_reserve(est, len(y)) if spent is None else 0.0
        search_evals = max(1, int(est.max_evaluations * (1.0 - _POLISH_EVAL_SHARE) - _cv_reserve(est, len(y))
                                  - folds - (spent or 0.0)))
    budget = Budget(max_evaluations=search_evals, max_time=search_time, target_r2=est.target_r2)
    if not est.verbose:
        return run_units(est, X, y, policy, config, rng, budget, previous, None, w)
    from dgsr.estimator.progress import ProgressLine

    with ProgressLine(max_time=est.max_time, max_evaluations=est.max_evaluations) as progress:
        result = run_units(est, X, y, policy, config, rng, budget, previous, progress.update, w)
        progress.update(_snapshot(result), force=True)
    return result


def run_units(est: Any, X: np.ndarray, y: np.ndarray, policy: Any, config: Any, rng: np.random.Generator,
              budget: Any, previous: Any, on_progress: Any, w: np.ndarray | None = None) -> Any:
    """The search's work units on ``n_jobs`` processes (:mod:`dgsr.search.parallel`), or expert iteration on
    this dataset when ``finetune`` is set."""
    from dgsr.estimator.policy_loading import load_policy
    from dgsr.search.parallel import run_parallel_search

    if est.finetune:
        from dgsr.neural import require_torch

        require_torch("finetune=True")  # dgsr.online imports torch
        from dgsr.online.finetune import finetune_search, is_finetunable

        if is_finetunable(policy):
            if w is not None:
                warnings.warn("finetune=True does not use sample_weight during the search (the final "
                              "front's constants, losses and selection do).", UserWarning, stacklevel=6)
            result, _ = finetune_search(X, y, policy, config=config, rng=rng, budget=budget, archive=previous,
                                        on_progress=on_progress)
            return result
        warnings.warn("finetune=True needs the neural policy; running a plain search.", UserWarning,
                      stacklevel=6)
    _warn_if_capped(est.n_jobs, est.parallel_backend)
    make_policy = functools.partial(load_policy, est.policy, device=est.device, operators=allowed_operators(est))
    return run_parallel_search(X, y, policy, config=config, rng=rng, budget=budget, n_jobs=est.n_jobs,
                               backend=est.parallel_backend, make_policy=make_policy, archive=previous,
                               on_progress=on_progress, sample_weight=w)


def _warn_if_capped(n_jobs: int | None, backend: str) -> None:
    """Warn when a local ``n_jobs`` asks for more processes than this process has CPUs."""
    from dgsr.search.parallel import resolve_n_jobs
    from dgsr.search.workers import available_cpus

    cpus = available_cpus()
    if backend == "local" and resolve_n_jobs(n_jobs) > cpus:
        warnings.warn(f"n_jobs={n_jobs} is more than the {cpus} CPUs this process may use; running {cpus} "
                      "processes (results do not depend on n_jobs).", UserWarning, stacklevel=7)


def allowed_operators(est: Any) -> tuple[str, ...] | None:
    """The Table 1 operators the search may use (None: all), from the three operator parameters."""
    from dgsr.core.operators import resolve_operators

    return resolve_operators(est.operators, est.unary_operators, est.binary_operators)


def _feature_limit(policy: Any, max_features: int | None) -> tuple[int | None, str]:
    """How many columns the search may use (None: all) and why: the user's ``max_features``, or
    the policy's own variable limit (its ``max_variables`` attribute; the neural policy names 10)."""
    policy_limit = getattr(policy, "max_variables", None)
    if policy_limit is not None and (max_features is None or policy_limit < max_features):
        return int(policy_limit), f"the {policy_limit} variables the {type(policy).__name__} can name"
    if max_features is not None:
        return int(max_features), f"max_features={max_features}"
    return None, ""


def _root_rng(random_state: Any) -> np.random.Generator:
    """A Generator from ``random_state`` without touching global state (an int seeds it exactly)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    return np.random.default_rng(random_state)


def _snapshot(result: Any) -> Any:
    from dgsr.search.mcts import SearchProgress

    best = result.best
    return SearchProgress(result.elapsed, result.n_evaluations, best.r2 if best else -math.inf,
                          best.size if best else 0, result.n_trials)
