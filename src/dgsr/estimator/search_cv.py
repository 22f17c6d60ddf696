"""Cross-validation of the whole search on small data: how large a formula the rows support.

The ``"cv"`` check (:mod:`dgsr.estimator.cross_validation`) refits the front's constants fold by
fold, but the front's *structures* were chosen because they fit these very rows; on a few dozen
noisy rows a structure that fits their noise by chance keeps a low out-of-fold error. The
selection has to happen inside the folds for the estimate to be honest (Hastie, Tibshirani and
Friedman, *The Elements of Statistical Learning*, 2nd ed., section 7.10.2). So on small data the
whole search is repeated on each ``K-1`` folds (a short fit with the same parameters), and for each
size limit ``s`` the most accurate entry of that fold's front with at most ``s`` nodes is scored
on the fold left out: every row gets an out-of-fold error for every limit. Where the folds'
larger formulas predicted worse than smaller ones, the smallest limit within one standard error
of the lowest pooled error (Breiman's rule, paired per-row differences) bounds the final choice
among the front of the search on all rows; where larger was better as far as the folds
reached, there is no limit.

It runs on small data (:func:`runs_search_cv`). The fold searches share the budget with the main
search (:data:`SEARCH_CV_SHARE`); their evaluations count (CONTRACTS §2). They are deterministic
for a seed under ``max_evaluations`` like any fit, each fold's seed drawn from the caller's
generator.
"""

from __future__ import annotations

import copy
import sys
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dgsr.estimator.cross_validation import fold_labels
from dgsr.estimator.model_selection import one_se_eligible

if TYPE_CHECKING:
    from dgsr.estimator.fit_config import FitConfig

#: Folds of the whole-search check.
SEARCH_CV_FOLDS = 5
#: Fewer rows than this per fold and there is nothing to hold out.
SEARCH_CV_MIN_ROWS = 4 * SEARCH_CV_FOLDS
#: Share of the search's budget (time and evaluations) given to the fold searches together.
SEARCH_CV_SHARE = 0.5
#: A front whose most accurate entry explains this share of var(y) on the training rows fits
#: them without noise worth the name: what overfitting could cost on new rows is below what it
#: leaves unexplained (1e-6 of the variance), so the check is skipped (an exact law, or a close
#: approximation of one, is never cut down), and its share of the budget goes back to the search.
NOISE_FREE_R2 = 1.0 - 1e-6
#: A fold search with less time than this is not started (the check is then left out).
_MIN_FOLD_SECONDS = 0.01


def is_tiny(n_rows: int, max_size: int) -> bool:
    """Tiny data, as ``fit`` warns about it: fewer rows than ``max_size`` nodes, so a formula can
    carry as many fitted constants as half the rows and interpolate them."""
    return n_rows < max_size


def runs_search_cv(model_selection: str, n_rows: int, max_rows: int) -> bool:
    """Whether a fit with ``model_selection`` on ``n_rows`` rows cross-validates its search: under
    ``"cv"`` on :data:`SEARCH_CV_MIN_ROWS` to ``max_rows`` rows (the estimator's ``cv_max_rows``).
    On more rows the training loss is an honest guide. Below, a search's structures fit the
    noise of the very rows they are chosen on: on 200 rows with no signal, a size-23 formula
    whose test R² is 0.1 below the linear model's."""
    return model_selection == "cv" and SEARCH_CV_MIN_ROWS <= n_rows <= max_rows


def limit_errors(fronts: Sequence[tuple[np.ndarray, np.ndarray]], labels: np.ndarray, y: np.ndarray,
                 limits: Sequence[int], w: np.ndarray | None = None) -> np.ndarray:
    """``[n_limits, n_rows]`` squared out-of-fold errors of each size limit.

    ``fronts[k]`` is fold ``k``'s front as ``(sizes, predictions)``: the entries' sizes
    (ascending) and their ``[n_entries, n_rows_of_fold_k]`` predictions on the rows with
    ``labels == k``. Under limit ``s`` a fold answers with its largest entry of at most ``s``
    nodes (on a front sorted by size, the most accurate one), or its smallest when none is that
    small. Rows whose prediction is not finite get inf (such a formula cannot be trusted on new
    rows). Weighted like :func:`dgsr.estimator.model_selection.squared_errors`.
    """
    n_rows = len(y)
    scale = np.ones(n_rows) if w is None else w / np.mean(w)
    out = np.empty((len(limits), n_rows))
    for k, (sizes, predictions) in enumerate(fronts):
        rows = np.flatnonzero(labels == k)
        sizes = np.asarray(sizes)
        for g, limit in enumerate(limits):
            within = np.flatnonzero(sizes <= limit)
            entry = int(within[-1]) if len(within) else 0
            with np.errstate(all="ignore"):
                err = scale[rows] * (predictions[entry] - y[rows]) ** 2
            out[g, rows] = np.where(np.isfinite(err), err, np.inf)
    return out


def fold_tested_limits(entry_sizes: Sequence[int], fold_sizes: Sequence[np.ndarray]) -> list[int]:
    """The size limits the folds test, ascending: every size of the front's entries and of the
    folds' fronts, from the largest of the folds' smallest sizes up. Below a fold's smallest entry
    the fold answers with that entry (:func:`limit_errors`), which credits the limit with a larger
    formula's error: on a law every fold finds at size 11, a limit of 6 scored as well as 11 and
    cut the fit down to a size-6 formula of R² below 0."""
    floor = max(int(np.min(sizes)) for sizes in fold_sizes)
    return sorted(s for s in {*map(int, entry_sizes), *(int(v) for sizes in fold_sizes for v in sizes)} if s >= floor)


def chosen_limit(errors: np.ndarray, limits: Sequence[int], reached: int) -> int | None:
    """The size limit the out-of-fold ``errors`` of ``limits`` (ascending) support, or None.

    None (no limit) when the lowest mean error belongs to the first limit at or above
    ``reached``, the largest size the fold searches' fronts reached: as far as the folds could
    test, larger formulas predicted better, so nothing says the full search's larger ones fit
    noise (a short fold search simply reaches fewer sizes). Otherwise the smallest limit within
    one standard error of the lowest mean (:func:`one_se_eligible`). None as well when no limit
    has finite errors everywhere.
    """
    means = errors.mean(axis=1)
    if not np.isfinite(means).any():
        return None
    best = int(np.argmin(np.where(np.isfinite(means), means, np.inf)))
    if limits[best] >= reached:
        return None
    return int(limits[int(np.flatnonzero(one_se_eligible(errors, best))[0])])


def fold_fronts(config: FitConfig, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, labels: np.ndarray,
                seeds: Sequence[int], deadline: float | None, max_evaluations: float | None,
                operands: tuple[Any, ...] | None = None) -> tuple[list[tuple[np.ndarray, np.ndarray]], float, bool]:
    """``(fronts, evaluations, interrupted)``: each fold's front, as :func:`limit_errors` takes it,
    from a search of the other folds' rows (:func:`dgsr.estimator.fit_front.fit_front` on
    :meth:`~dgsr.estimator.fit_config.FitConfig.for_fold_search` of ``config``: chosen by
    ``"balanced"``, one process, no expert iteration, silent, seed ``seeds[k]``, an equal share of
    the time left before ``deadline`` (a ``time.perf_counter()``), at most ``max_evaluations``
    evaluations each; its predictions NaN where a formula is undefined), the evaluations all of
    them spent, and whether a Ctrl-C ended one of them. Fewer fronts than folds: the time ran out
    or a Ctrl-C came. ``operands``: the search on all rows' parametric operands, which the fold
    searches' libraries refit rather than screen again (:func:`search_operands`)."""
    from dgsr.estimator.fit_front import fit_front
    from dgsr.estimator.fit_search import search_rows
    from dgsr.estimator.input_checks import TrainingData

    fronts, spent = [], 0.0
    names = tuple(f"x{i}" for i in range(X.shape[1]))
    for k, seed in enumerate(seeds):
        test = labels == k
        train = ~test
        max_time = None if deadline is None else (deadline - time.perf_counter()) / (len(seeds) - k)
        if max_time is not None and max_time < _MIN_FOLD_SECONDS:
            break  # out of time: the fronts are incomplete
        fold = config.for_fold_search(int(seed), max_time, max_evaluations, fold_policy(config, operands))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fold's notes on its smaller data are not the user's
            start = time.perf_counter()
            data = TrainingData(np.ascontiguousarray(X[train]), np.ascontiguousarray(y[train]), names)
            result = fit_front(fold, search_rows(data, None if w is None else w[train]), names, start=start)
            spent += float(result.n_evaluations)
            if result.interrupted:
                return fronts, spent, True
            predictions = np.array([result.predictions(X[test], i) for i in range(len(result.entries))])
        fronts.append((np.array([e.size for e in result.entries]), predictions))
    return fronts, spent, False


def fold_policy(config: FitConfig, operands: tuple[Any, ...] | None = None) -> Any:
    """The fold searches' policy: the fit's own, but the semantic policy's library built from
    ``operands``, the search on all rows' parametric operands refitted on the fold's rows
    (:func:`search_operands`), or without ``operands``, without its chains
    (:mod:`dgsr.policies.semantic.parametric_forms`). Screening every form's starts is a fixed
    cost per search, paid again in every fold: on a few dozen rows it took most of a short fold
    search's time, so the folds reached small sizes only and let a large formula through."""
    from dgsr.policies.semantic.policy import SemanticPolicy

    spec = config.policy
    if isinstance(spec, str) and spec in ("semantic", "learned"):
        # The folds only measure how large a formula the rows support: the semantic policy does.
        policy = SemanticPolicy(operators=config.allowed_operators(), inner_chains=0)
    elif isinstance(spec, SemanticPolicy):
        policy = copy.copy(spec)
        policy.inner_chains = 0
    else:
        return spec
    policy.seeded_operands = operands
    return policy


def search_operands(policy: Any, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, ...] | None:
    """The parametric operands of ``policy``'s library on all of ``X, y`` (its scoring rows drawn
    from ``rng``), for the fold searches to refit (:func:`fold_policy`); None for a policy without
    them. Built here rather than kept from the search, so they do not depend on ``n_jobs`` (the
    policy's memo of its fits on these rows makes it cheap after a search in this process)."""
    from dgsr.policies.semantic.policy import SemanticPolicy

    if not isinstance(policy, SemanticPolicy) or not policy.parametric_operands:
        return None
    library = policy.prepare(X, y, rng).library
    return tuple(e for e, fitted in zip(library.expressions, library.parametric) if fitted)


def size_limit(config: FitConfig, entries: Sequence[Any], X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
               rng: np.random.Generator, deadline: float | None, max_evaluations: float | None,
               policy: Any = None) -> tuple[int | None, float, bool]:
    """``(limit, evaluations, interrupted)``: the size limit the whole-search check supports for
    the front ``entries`` of a fit on ``X, y`` (None where it does not apply: an exact front, no
    budget left, a Ctrl-C), the evaluations spent, and whether a Ctrl-C ended it.
    ``deadline``: ``time.perf_counter()`` by which the fold searches end; ``max_evaluations``:
    what they may spend together; ``policy``: the search's, whose parametric operands the fold
    searches refit (:func:`search_operands`)."""
    if not entries or max(e.r2 for e in entries) >= NOISE_FREE_R2:
        return None, 0.0, False
    labels = fold_labels(len(y), rng, SEARCH_CV_FOLDS)
    seeds = rng.integers(2**31 - 1, size=SEARCH_CV_FOLDS)
    fold_evals = None if max_evaluations is None else max_evaluations / SEARCH_CV_FOLDS
    if (deadline is not None and deadline <= time.perf_counter()) or (fold_evals is not None and fold_evals < 1.0):
        return None, 0.0, False
    if config.verbose:
        print(f"dgsr: {len(y)} rows: repeating the search on {SEARCH_CV_FOLDS} folds to see how large a "
              "formula they support", file=sys.stderr, flush=True)
    operands = search_operands(policy, X, y, rng.spawn(1)[0])
    fronts, spent, interrupted = fold_fronts(config, X, y, w, labels, seeds, deadline, fold_evals, operands)
    if interrupted or len(fronts) < SEARCH_CV_FOLDS:
        return None, spent, interrupted
    limits = fold_tested_limits([int(e.size) for e in entries], [sizes for sizes, _ in fronts])
    reached = max(int(sizes.max()) for sizes, _ in fronts)
    return chosen_limit(limit_errors(fronts, labels, y, limits, w), limits, reached), spent, False

