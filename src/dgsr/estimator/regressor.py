"""``SymbolicRegressor``: the scikit-learn estimator, a facade over search, constants and Pareto front.

``fit`` validates the data (:mod:`dgsr.estimator.input_checks`), pre-selects features only when asked to
(``max_features``) or when the policy names fewer variables than there are columns
(:mod:`dgsr.estimator.features`), runs the MCTS search (:func:`dgsr.search.mcts.run_search`)
under one :class:`~dgsr.core.budget.Budget`, refits the constants of the final Pareto front on all
training rows, and builds the ``equations_`` table. ``predict`` never returns NaN/inf for
finite input (CONTRACTS §6). The estimator contract is scikit-learn's (DESIGN §4 habit 9):
``__init__`` only stores, fitted attributes end in ``_``, ``check_estimator`` is a test.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sympy
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dgsr.core.constants import fit_constants
from dgsr.core.display import FrontTable, equation_latex, equation_text
from dgsr.core.evaluate import as_columns, evaluate, evaluate_columns, r2_score, weighted_mean, weighted_var
from dgsr.core.exponent_scaling import Scaling, fit_scaling, is_constant_target
from dgsr.core.expression import Expression
from dgsr.core.pareto import front_scores, non_dominated
from dgsr.core.simplify import complexity, round_floats, simplify
from dgsr.estimator.features import select_features
from dgsr.estimator.input_checks import (
    validate_params,
    validate_predict_data,
    validate_sample_weight,
    validate_training_data,
)
from dgsr.estimator.model_selection import (
    MIN_VALIDATION_ROWS,
    VALIDATION_SHARE,
    linear_candidate,
    prefer_pole_free,
    probe_points,
    squared_errors,
    validation_choice,
    validation_split,
)

#: The default policy is the one that wins at equal wall time (CONTRACTS §2): the semantic policy
#: (data-aware proposals in closed form) beats the uniform random one at equal time and at equal
#: evaluations; the shipped neural policy loses to both (docs/BENCHMARKS.md, "Semantic policy").
DEFAULT_POLICY = "semantic"
#: The default model-selection rule, chosen by measurement on black-box, Feynman and scikit-learn
#: data (docs/BENCHMARKS.md, "Model selection"; docs/DESIGN.md).
DEFAULT_SELECTION = "balanced"

# Share of the budget kept back from the search for refitting the front's constants on all rows.
_POLISH_TIME_SHARE, _POLISH_TIME_MAX = 0.05, 5.0
_POLISH_EVAL_SHARE = 0.02
# Refit cap per expression (the search's own fits stop at 1 s, Appendix E.2); longer here since
# it runs once per front entry, on all rows.
_POLISH_SECONDS = 2.0
# Total seconds of SymPy simplification for the whole front, and per expression.
_SIMPLIFY_TOTAL, _SIMPLIFY_EACH = 10.0, 1.0
_DIGITS = 4  # significant digits of constants in the displayed equations


@dataclass(frozen=True)
class FrontEntry:
    """One expression of the final Pareto front (after refitting its constants on all rows)."""

    size: int
    expression: Expression
    mse: float
    r2: float


class SymbolicRegressor(RegressorMixin, BaseEstimator):
    """Symbolic regression by Monte-Carlo tree search with a learned mutation policy (DGSR-MCTS).

    Parameters
    ----------
    max_time : float, default=60
        Seconds of wall time for ``fit`` (None: no time limit).
    max_evaluations : int, default=500000
        Expression evaluations on the training rows (CONTRACTS §2); whichever of the two limits
        comes first stops the search. Results are reproducible for a fixed ``random_state``
        when this, not ``max_time``, is the binding limit.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seed.
    policy : {"semantic", "random", "neural"}, path or Policy, default="semantic"
        Mutation policy: mutations aimed at the data by semantic backpropagation (no training),
        uniform random mutations, the shipped pretrained weights, a ``.safetensors`` checkpoint,
        or an object implementing :class:`dgsr.search.policy.Policy`.
    n_samples : int, default=16
        Mutations sampled per expansion (K).
    iterations_per_trial : int, default=1000
        MCTS iterations before the tree is reset.
    p_uct : float, default=1.0
        Exploration constant of the PUCT rule (equation 3 of the paper).
    constant_fitting : {"never", "best", "all"} or None, default=None
        When to fit constants during search (Table 5); None uses the benchmark-chosen default.
    max_size : int, default=60
        Node limit of an expression.
    operators : list of str or None, default=None
        The operators expressions may use, from Table 1 of the paper: ``add sub mul div`` (or
        ``+ - * /``) and ``sin cos tan exp log sqrt inv sq`` (``inv`` = 1/x, ``sq`` = x**2, also
        ``"square"``). None: all of them. Unknown names raise a ValueError at ``fit``.
    unary_operators, binary_operators : list of str or None, default=None
        PySR's way of saying the same, one arity each; a list left at None allows every
        operator of its arity. Not together with ``operators``.
    target_r2 : float or None, default=None
        Stop once the best training R² reaches it (None: use the whole budget).
    model_selection : {"balanced", "best", "accuracy", "score", "validation"}, default="balanced"
        Which front expression ``predict`` uses: highest R² (``"accuracy"``), largest drop of
        log-loss per unit of size (``"score"``), the highest score among expressions within
        1.5x of the lowest loss (``"best"``, PySR's rule), the same among those also within
        0.01 of the highest R² (``"balanced"``, the default, chosen by measurement: on noisy
        data 1.5x the loss can be a tenth of the variance), or the smallest expression within
        one standard error of the lowest loss on 25% of the rows held out from the search
        (``"validation"``). The front always holds the least-squares linear model when it fits
        in ``max_size``, and a formula with a pole inside the data's range gives way to an
        equally good one without (docs/DESIGN.md).
    verbose : bool, default=False
        Show a live progress line on stderr.
    max_features : int or None, default=None
        Search only this many columns, chosen by mutual information with ``y`` (with a warning
        and ``selected_features_``). None: all columns, unless the policy names fewer variables
        (the neural policy: 10; the random policy has no limit).
    device : str, default="cpu"
        Torch device for the neural policy.
    warm_start : bool, default=False
        Continue from the previous fit's archive when fitting the same columns again.
    finetune : bool, default=False
        Expert iteration on this dataset (Section 3.2): the budget is spent in trials with
        hyper-parameters drawn per trial (Appendix E.3), and after each trial a copy of the
        neural policy and its critic is trained on what the search found, so later trials use
        the fine-tuned policy (:mod:`dgsr.online`). Only for the neural policy (otherwise a
        warning and a plain search).
    n_jobs : int, default=1
        Processes running independent search units at once (-1: every CPU). The budget is cut
        into units that depend only on ``max_evaluations`` (:mod:`dgsr.search.parallel`), so the result
        is the same for any ``n_jobs`` at a fixed ``random_state`` and ``max_evaluations``.
    parallel_backend : {"local", "ray"}, default="local"
        Where the units run when ``n_jobs > 1``: a local process pool, or Ray tasks (the cluster
        named by ``RAY_ADDRESS``, else a local Ray instance).

    Attributes
    ----------
    equations_ : pandas.DataFrame
        The Pareto front sorted by complexity; columns ``complexity`` (node count), ``loss``
        (MSE on the training rows), ``r2``, ``score``, ``equation`` (readable, the user's column
        names, constants to 4 significant digits), ``sympy`` (simplified SymPy expression) and
        ``simplified_size`` (its node count, as SRBench counts size).
    expression_ : Expression
        The selected expression in the user's units (variables ``x0..`` index
        ``selected_features_``).
    expressions_ : list of Expression
        One per row of ``equations_``, in the user's units (the search runs on data scaled by
        powers of two; these are mapped back exactly, see docs/DESIGN.md "Numeric range").
    best_index_ : int
        Row of ``equations_`` that ``predict`` uses.
    selected_features_ : list of str
        Names of the input columns the search used.
    n_features_in_, feature_names_in_ : as in scikit-learn.
    target_name_ : str
        The target's name (a pandas Series' name, else ``"y"``), used by ``plot_front``.
    n_evaluations_, history_, stop_reason_ : search statistics.
    """

    def __init__(
        self,
        max_time: float | None = 60,
        max_evaluations: int | None = 500000,
        random_state: Any = None,
        policy: Any = DEFAULT_POLICY,
        n_samples: int = 16,
        iterations_per_trial: int = 1000,
        p_uct: float = 1.0,
        constant_fitting: str | None = None,
        max_size: int = 60,
        operators: list[str] | None = None,
        unary_operators: list[str] | None = None,
        binary_operators: list[str] | None = None,
        target_r2: float | None = None,
        model_selection: str = DEFAULT_SELECTION,
        verbose: bool = False,
        max_features: int | None = None,
        device: str = "cpu",
        warm_start: bool = False,
        finetune: bool = False,
        n_jobs: int | None = 1,
        parallel_backend: str = "local",
    ):
        self.max_time = max_time
        self.max_evaluations = max_evaluations
        self.random_state = random_state
        self.policy = policy
        self.n_samples = n_samples
        self.iterations_per_trial = iterations_per_trial
        self.p_uct = p_uct
        self.constant_fitting = constant_fitting
        self.max_size = max_size
        self.operators = operators
        self.unary_operators = unary_operators
        self.binary_operators = binary_operators
        self.target_r2 = target_r2
        self.model_selection = model_selection
        self.verbose = verbose
        self.max_features = max_features
        self.device = device
        self.warm_start = warm_start
        self.finetune = finetune
        self.n_jobs = n_jobs
        self.parallel_backend = parallel_backend

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SymbolicRegressor:
        """Search for expressions of the columns of ``X`` that fit ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric, finite; DataFrame column names become the variable names.
        y : array-like of shape (n_samples,)
            Numeric, finite target.
        sample_weight : array-like of shape (n_samples,) or None
            Non-negative row weights: the search's loss and R², the constant fits, the front's
            ``loss`` and ``r2`` columns and model selection are all weighted (None: equal).

        Returns
        -------
        self
        """
        start = time.perf_counter()
        validate_params(self)
        self._interrupted = False  # set by the first Ctrl-C (see _note_interrupt)
        previous = self._warm_state()
        data = validate_training_data(self, X, y)
        root = _root_rng(self.random_state)
        # A warm-started fit continues with fresh random streams instead of replaying the last one.
        self._n_fits = (getattr(self, "_n_fits", 0) + 1) if previous is not None else 1
        for _ in range(self._n_fits - 1):
            root = root.spawn(1)[0]
        feat_rng, search_rng, polish_rng = root.spawn(3)
        # The search runs on data scaled by powers of two (exact), so any magnitude works; every
        # fitted state below is in those units and is mapped back for display and predict.
        full_scaling = fit_scaling(data.X, data.y, data.names)
        X_arr, y_arr = full_scaling.scale_X(data.X), full_scaling.scale_y(data.y)
        self._full_scaling = full_scaling
        name = getattr(y, "name", None)
        self.target_name_ = name if isinstance(name, str) and name else "y"
        w = validate_sample_weight(sample_weight, X_arr)
        if w is not None and not (w > 0).all():  # a zero weight is a row left out, exactly
            keep = w > 0
            X_arr, y_arr = X_arr[keep], y_arr[keep]
            w = w[keep] * (len(w[keep]) / float(np.sum(w[keep])))
        self._y_mean = weighted_mean(y_arr, w)
        if len(y_arr) < self.max_size and not is_constant_target(y_arr):
            warnings.warn(
                f"Only {len(y_arr)} rows for expressions of up to max_size={self.max_size} nodes (as many as "
                f"{self.max_size // 2} fitted constants): large formulas can fit these rows exactly and still be "
                f"wrong between them. Prefer the small formulas of equations_, or pass max_size={len(y_arr)} "
                "(no more nodes than rows) or more data.", UserWarning, stacklevel=2)

        if is_constant_target(y_arr):
            warnings.warn(f"y is constant ({data.y[0]:g}); the model is that constant (no search was run).",
                          UserWarning, stacklevel=2)
            self._feature_index = np.arange(0)
            self.selected_features_ = []
            entries = [_entry(Expression.constant(self._y_mean), as_columns(X_arr[:, :0]), y_arr, w=w)]
            self.n_evaluations_, self.history_, self.stop_reason_ = 0.0, [], "constant_target"
            self.n_trials_ = 0
            self._archive = None
            self.validation_loss_ = None
            chosen: int | None = 0
        else:
            from dgsr.policies.registry import load_policy

            policy = load_policy(self.policy, device=self.device, operators=self._allowed_operators())
            limit, why = _feature_limit(policy, self.max_features)
            index = select_features(X_arr, y_arr, limit, rng=feat_rng) if limit is not None else \
                np.arange(X_arr.shape[1])
            if len(index) < X_arr.shape[1]:
                kept = [data.names[i] for i in index]
                warnings.warn(
                    f"X has {X_arr.shape[1]} columns, more than {why}; the search uses the {len(index)} "
                    f"with the highest mutual information with y: {', '.join(kept)}.", UserWarning, stacklevel=2)
            if previous is not None and (not np.array_equal(previous[0], index) or previous[2] != full_scaling):
                previous = None  # other columns or units: the old archive's variables mean other things
            self._feature_index = index
            self.selected_features_ = [data.names[i] for i in index]
            split = self._validation_rows(len(y_arr), feat_rng.spawn(1)[0])
            entries, chosen = self._search(X_arr[:, index], y_arr, search_rng, polish_rng, start,
                                           previous[1] if previous is not None else None, w, split, policy)

        names = self.selected_features_
        self._scaling = Scaling(tuple(full_scaling.x_exponents[i] for i in self._feature_index),
                                full_scaling.y_exponent)
        self._front = entries
        if chosen is None:
            chosen = self._select(entries)
        # Poles are looked for in the search's units (powers of two: the same box, scaled).
        self.best_index_ = self._avoid_pole(entries, chosen, X_arr[:, self._feature_index])
        if self.validation_loss_ is not None:
            self.validation_loss_ = np.array([self._scaling.unscale_loss(v) for v in self.validation_loss_])
        self.expressions_ = [self._scaling.to_user(e.expression) for e in entries]
        seconds = 0.0 if self._interrupted else self._simplify_seconds(start)
        try:
            self.equations_ = _front_table(entries, self.expressions_, self._scaling, names, seconds)
        except KeyboardInterrupt:
            if self._interrupted:
                raise
            self._note_interrupt("simplification", "the constants are final")
            self.equations_ = _front_table(entries, self.expressions_, self._scaling, names, 0.0)
        self.expression_ = self.expressions_[self.best_index_]
        self.equations_.selected_row = self.best_index_
        return self

    def _validation_rows(self, n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray] | None:
        """(search rows, validation rows) for ``model_selection="validation"``, else None."""
        self.validation_loss_ = None
        if self.model_selection != "validation":
            return None
        split = validation_split(n_rows, rng)
        if split is None:
            warnings.warn(f"model_selection='validation' needs at least {MIN_VALIDATION_ROWS} validation rows "
                          f"({VALIDATION_SHARE:.0%} of the data); with {n_rows} rows the search uses them all "
                          "and selects by the 'balanced' rule.", UserWarning, stacklevel=3)
        return split

    def _avoid_pole(self, entries: list[FrontEntry], chosen: int, X: np.ndarray) -> int:
        """``chosen``, or an equally good front entry without a pole inside the data range (warns
        when the selected one keeps a pole)."""
        errors, self._validation_errors = getattr(self, "_validation_errors", None), None
        if not entries or X.shape[1] == 0:
            return chosen
        index, pole = prefer_pole_free(entries, chosen, probe_points(X), errors)
        if pole:
            warnings.warn("The selected expression has a pole (or is undefined) inside the range of the training "
                          "data and no equally good expression of the front avoids it: predictions near it can be "
                          "huge. See equations_ for the alternatives.", UserWarning, stacklevel=3)
        return index

    def _search(self, X: np.ndarray, y: np.ndarray, search_rng: np.random.Generator,
                polish_rng: np.random.Generator, start: float, previous: Any,
                w: np.ndarray | None = None, split: tuple[np.ndarray, np.ndarray] | None = None,
                policy: Any = None) -> tuple[list[FrontEntry], int | None]:
        """Run the MCTS search, then refit the front's constants on all rows.

        With a validation ``split`` the search and the refit use the search rows only; the
        expression is chosen on the validation rows, then its constants are refitted on all
        rows. Returns the front and the chosen index (None: the caller applies its rule).
        """
        X_all, y_all, w_all = X, y, w
        if split is not None:
            X, y = X_all[split[0]], y_all[split[0]]
            w = w_all[split[0]] if w_all is not None else None
        from dgsr.core.budget import Budget
        from dgsr.policies.registry import load_policy
        from dgsr.search.mcts import SearchConfig

        allowed = self._allowed_operators()
        config_kwargs: dict[str, Any] = {"n_samples": self.n_samples, "p_uct": self.p_uct,
                                         "iterations_per_trial": self.iterations_per_trial,
                                         "max_size": self.max_size, "operators": allowed}
        if self.constant_fitting is not None:
            config_kwargs["constant_fitting"] = self.constant_fitting
        config = SearchConfig(**config_kwargs)
        if policy is None:
            policy = load_policy(self.policy, device=self.device, operators=allowed)
        search_time = None
        if self.max_time is not None:
            reserve = min(_POLISH_TIME_SHARE * self.max_time, _POLISH_TIME_MAX)
            search_time = max(self.max_time - reserve - (time.perf_counter() - start), 0.0)
        search_evals = None
        if self.max_evaluations is not None:
            search_evals = max(1, int(self.max_evaluations * (1.0 - _POLISH_EVAL_SHARE)))
        budget = Budget(max_evaluations=search_evals, max_time=search_time, target_r2=self.target_r2)

        progress = None
        if self.verbose:
            from dgsr.estimator.progress import ProgressLine

            progress = ProgressLine(max_time=self.max_time, max_evaluations=self.max_evaluations)
        try:
            if progress is not None:
                progress.__enter__()
            result = self._run_search(X, y, policy, config, search_rng, budget, previous,
                                      progress.update if progress is not None else None, w)
            if progress is not None:
                progress.update(_snapshot(result), force=True)
        finally:
            if progress is not None:
                progress.__exit__(None, None, None)
        self.n_evaluations_ = float(result.n_evaluations)
        self.history_ = list(result.history)
        self.stop_reason_ = result.stop_reason
        self.n_trials_ = int(result.n_trials)
        # Kept only when asked for: it is the one part of the fitted state that grows with the search.
        self._archive = (self._feature_index, result.archive, self._full_scaling) \
            if self.warm_start else None

        columns = as_columns(X)
        candidates = [e.expression for e in result.archive.front()]
        if not candidates:  # nothing valid within the budget: the mean is the honest answer
            candidates = [Expression.constant(weighted_mean(y, w))]
        linear = linear_candidate(X, y, self.max_size, w) if allowed is None or {"add", "mul"} <= set(allowed) \
            else None
        if linear is not None:  # the front then never loses to linear regression (DESIGN: model selection)
            candidates.append(linear)
        if result.stop_reason == "interrupted":  # Ctrl-C in the search: no polish (see _note_interrupt)
            self._note_interrupt("the search", "constants are not refitted on all rows")
        entries = _pareto(self._polish(candidates, columns, y, polish_rng, start, w))
        if split is None:
            return entries, None
        w_val = w_all[split[1]] if w_all is not None else None
        errors = squared_errors([e.expression for e in entries], X_all[split[1]], y_all[split[1]], w_val)
        chosen = validation_choice(errors)
        refit = self._polish([entries[chosen].expression], as_columns(X_all), y_all, polish_rng, start, w_all)
        if refit:
            entries[chosen] = refit[0]
        all_columns, y_var = as_columns(X_all), weighted_var(y_all, w_all)
        entries = [_entry(e.expression, all_columns, y_all, y_var, w_all) for e in entries]
        self.validation_loss_ = errors.mean(axis=1)
        self._validation_errors = errors
        return entries, chosen

    def _note_interrupt(self, where: str, consequence: str) -> None:
        """Record a first Ctrl-C: the rest of ``fit`` skips polishing and simplification (so a
        second Ctrl-C, caught by no one, aborts at once) and says so."""
        self._interrupted = True
        self.stop_reason_ = "interrupted"
        warnings.warn(f"Interrupted (Ctrl-C) during {where}: returning the best result reached so far; "
                      f"{consequence} and the equations are not simplified. Press Ctrl-C again to abort.",
                      UserWarning, stacklevel=4)

    def _run_search(self, X: np.ndarray, y: np.ndarray, policy: Any, config: Any, rng: np.random.Generator,
                    budget: Any, previous: Any, on_progress: Any, w: np.ndarray | None = None) -> Any:
        """The search's work units on ``n_jobs`` processes (:mod:`dgsr.search.parallel`), or expert iteration on
        this dataset when ``finetune`` is set."""
        from dgsr.policies.registry import load_policy
        from dgsr.search.parallel import run_parallel_search

        if self.finetune:
            from dgsr.online.finetune import finetune_search, is_finetunable

            if is_finetunable(policy):
                if w is not None:
                    warnings.warn("finetune=True does not use sample_weight during the search (the final "
                                  "front's constants, losses and selection do).", UserWarning, stacklevel=4)
                result, _ = finetune_search(X, y, policy, config=config, rng=rng, budget=budget, archive=previous,
                                            on_progress=on_progress)
                return result
            warnings.warn("finetune=True needs the neural policy; running a plain search.", UserWarning,
                          stacklevel=4)
        make_policy = functools.partial(load_policy, self.policy, device=self.device,
                                        operators=self._allowed_operators())
        return run_parallel_search(X, y, policy, config=config, rng=rng, budget=budget, n_jobs=self.n_jobs,
                                   backend=self.parallel_backend, make_policy=make_policy, archive=previous,
                                   on_progress=on_progress, sample_weight=w)

    def _polish(self, exprs: list[Expression], columns: np.ndarray, y: np.ndarray,
                rng: np.random.Generator, start: float, w: np.ndarray | None = None) -> list[FrontEntry]:
        """Refit constants on all training rows (the search fits on 256-row subsets)."""
        y_var = weighted_var(y, w)
        evals_left = math.inf
        if self.max_evaluations is not None:
            evals_left = self.max_evaluations - self.n_evaluations_
        entries = []
        for i, expr in enumerate(exprs):
            if not self._interrupted:
                try:
                    expr, evals_left = self._polish_one(expr, columns, y, rng, start, w, y_var, evals_left,
                                                        len(exprs) - i)
                except KeyboardInterrupt:  # Ctrl-C while polishing: keep what was searched
                    self._note_interrupt("constant polishing", "the remaining constants are as the search found them")
            entries.append(_entry(expr, columns, y, y_var, w))
        return [e for e in entries if math.isfinite(e.mse)]

    def _polish_one(self, expr: Expression, columns: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                    start: float, w: np.ndarray | None, y_var: float, evals_left: float,
                    n_left: int) -> tuple[Expression, float]:
        """Refit and tidy one expression's constants; returns it and the evaluations left."""
        time_left = math.inf
        if self.max_time is not None:
            time_left = self.max_time - (time.perf_counter() - start)
        if expr.n_constants and evals_left >= 2 and time_left > 0:
            cap = min(_POLISH_SECONDS, time_left / n_left)
            fit = fit_constants(expr, columns, y, rng=rng, time_limit=cap, batch_size=columns.shape[1],
                                y_var=y_var, max_iter=int(min(200, max(evals_left / 2, 1))),
                                max_evaluations=evals_left, sample_weight=w)
            evals_left -= fit.evaluations
            self.n_evaluations_ += fit.evaluations
            if fit.improved and fit.r2 > -math.inf:
                expr = fit.expression
        if expr.n_constants and evals_left >= 2 * expr.n_constants + 2:  # tidy_constants's most
            expr, spent = tidy_constants(expr, columns, y, w=w)
            evals_left -= spent
            self.n_evaluations_ += spent
        return expr, evals_left

    def _allowed_operators(self) -> tuple[str, ...] | None:
        """The Table 1 operators the search may use (None: all), from the three operator parameters."""
        from dgsr.core.operators import resolve_operators

        return resolve_operators(self.operators, self.unary_operators, self.binary_operators)

    def _warm_state(self) -> tuple[np.ndarray, Any] | None:
        """(feature index, archive) of the previous fit when warm-starting, else None."""
        if not self.warm_start or getattr(self, "_archive", None) is None:
            return None
        return self._archive

    def _simplify_seconds(self, start: float) -> float:
        """Seconds of SymPy simplification allowed: at most 10, and within max_time when possible."""
        if self.max_time is None:
            return _SIMPLIFY_TOTAL
        left = self.max_time - (time.perf_counter() - start)
        return max(min(_SIMPLIFY_TOTAL, left), 0.5)

    def _select(self, entries: list[FrontEntry]) -> int:
        from dgsr.core.pareto import select

        rule = "balanced" if self.model_selection == "validation" else self.model_selection
        return int(select(entries, rule))

    # ------------------------------------------------------------------ use
    def predict(self, X: Any, index: int | None = None, strict: bool = False) -> np.ndarray:
        """Predictions of the selected expression (or of row ``index`` of ``equations_``).

        Rows where that expression is undefined (log of a negative, division by zero, overflow)
        take the value of the next front expression that is finite there (most accurate first),
        else the training mean, with a warning that names the rows and the fallback used; finite
        input never gives NaN or inf. With ``strict=True`` those rows are NaN instead.
        """
        check_is_fitted(self, "expression_")
        X_arr = validate_predict_data(self, X)
        scaling = getattr(self, "_scaling", None)
        X_sel = X_arr[:, self._feature_index]
        if scaling is not None:
            X_sel = scaling.scale_X(X_sel)
        first = self._row(index)
        order = self._fallback_order(first)
        out = self._values(order[0], X_sel)
        bad = ~np.isfinite(out)
        if not bad.any():
            return out
        bad_rows = np.flatnonzero(bad)
        if strict:
            out[bad] = np.nan
            warnings.warn(f"Row {first} of equations_ is undefined on {len(bad_rows)} of {len(out)} rows "
                          f"({_list_rows(bad_rows)}); they are NaN (strict=True).", RuntimeWarning, stacklevel=2)
            return out
        used = []
        for i in order[1:]:
            rows = np.flatnonzero(bad)
            values = self._values(i, X_sel[rows])
            ok = np.isfinite(values)
            if ok.any():
                out[rows[ok]] = values[ok]
                bad[rows[ok]] = False
                used.append(f"row {i} of equations_ ({self._equation_text(i)}) on {_list_rows(rows[ok])}")
            if not bad.any():
                break
        if bad.any():
            mean = self._y_mean if scaling is None else float(scaling.unscale_y(np.array(self._y_mean)))
            out[bad] = mean
            used.append(f"the training mean ({mean:.6g}) on {_list_rows(np.flatnonzero(bad))}")
        warnings.warn(f"The selected expression (row {first} of equations_: {self._equation_text(first)}) is undefined on {len(bad_rows)} of "
                      f"{len(out)} rows ({_list_rows(bad_rows)}); used instead: {'; '.join(used)}. "
                      "predict(..., strict=True) gives NaN there instead.", RuntimeWarning, stacklevel=2)
        return out

    def _equation_text(self, i: int) -> str:
        column = self.equations_.get("equation")
        return str(column.iloc[i]) if column is not None else str(self.equations_["sympy"].iloc[i])

    def _values(self, i: int, X_scaled: np.ndarray) -> np.ndarray:
        """Front entry ``i`` on scaled inputs, in the user's units (non-finite where undefined)."""
        values = evaluate(self._front[i].expression, X_scaled)
        scaling = getattr(self, "_scaling", None)
        return values if scaling is None else scaling.unscale_y(values)

    def _row(self, index: int | None) -> int:
        if index is None:
            return self.best_index_
        n = len(self._front)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not -n <= index < n:
            raise IndexError(f"index must be an integer row of equations_ (0..{n - 1}), got {index!r}")
        return int(index) % n

    def _fallback_order(self, first: int) -> list[int]:
        rest = sorted((i for i in range(len(self._front)) if i != first), key=lambda i: self._front[i].mse)
        return [first, *rest]

    def sympy(self, index: int | None = None, precision: int | None = None) -> sympy.Expr:
        """SymPy expression of the selected equation (or of row ``index`` of ``equations_``);
        ``precision`` rounds its constants to that many significant digits (None: full precision)."""
        check_is_fitted(self, "expression_")
        expr = self.equations_["sympy"].iloc[self._row(index)]
        return expr if precision is None else round_floats(expr, precision)

    def latex(self, index: int | None = None, precision: int = _DIGITS) -> str:
        """LaTeX of the selected equation (or row ``index``), constants to ``precision`` digits."""
        return equation_latex(self.sympy(index), precision)

    def to_numpy(self, index: int | None = None) -> Any:
        """The selected equation (or row ``index``) as a numpy function ``f(X)`` of the same ``X``
        that ``predict`` takes (all ``n_features_in_`` columns); generated by SymPy.

        Unlike ``predict`` it has no fallback: rows where the formula is undefined give NaN/inf.
        """
        return self._export(index, "numpy")

    def to_torch(self, index: int | None = None) -> Any:
        """As :meth:`to_numpy`, for torch tensors (differentiable); needs torch installed."""
        return self._export(index, "torch")

    def to_jax(self, index: int | None = None) -> Any:
        """As :meth:`to_numpy`, for JAX arrays (works under ``jax.jit``); needs jax installed."""
        return self._export(index, "jax")

    def _export(self, index: int | None, backend: str) -> Any:
        from dgsr.estimator.export import export_function

        check_is_fitted(self, "expression_")
        return export_function(self.expressions_[self._row(index)], list(self._feature_index), backend)

    def plot_front(self, ax: Any = None, target: str | None = None) -> Any:
        """Plot the Pareto front (loss vs size, log scale) with the selected equation marked.

        ``target`` names y in the label (default: the target's name at ``fit``, ``target_name_``).
        Returns the matplotlib Axes; pass ``ax`` to draw into an existing figure.
        """
        check_is_fitted(self, "expression_")
        try:
            import matplotlib  # noqa: F401
        except ImportError as err:  # a dependency, but an environment may lack it: say how to get it
            raise ImportError("plot_front needs matplotlib: pip install matplotlib") from err
        from dgsr.estimator.plotting import plot_front

        return plot_front(self, ax, target)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = False
        return tags


# ---------------------------------------------------------------------- helpers
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


def _list_rows(rows: np.ndarray, limit: int = 10) -> str:
    """``rows 3, 8, 20`` (the first ``limit`` of them, then how many more)."""
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


def _entry(expr: Expression, columns: np.ndarray, y: np.ndarray, y_var: float | None = None,
           w: np.ndarray | None = None) -> FrontEntry:
    with np.errstate(all="ignore"):
        pred = evaluate_columns(expr, columns)
        mse = weighted_mean((pred - y) ** 2, w)
    if not math.isfinite(mse):
        mse = math.inf
    return FrontEntry(expr.size, expr, mse, r2_score(y, pred, y_var, w))


def tidy_constants(expr: Expression, columns: np.ndarray, y: np.ndarray,
                   digits: int = 4, tolerance: float = 1e-9, w: np.ndarray | None = None) -> tuple[Expression, int]:
    """Zero negligible constants and round the others to ``digits`` significant digits where that
    costs (almost) nothing: ``6.674*m1*(m2 + 1.2e-10)`` becomes ``6.674*m1*(m2 + 0)``, which SymPy
    then shows as ``6.674*m1*m2``.

    A change is kept when the training MSE grows by at most ``tolerance`` relative to the
    variance of ``y`` (an R² loss below 1e-9). Returns the expression and the evaluations spent.
    """
    y_var = weighted_var(y, w)
    slack = tolerance * (y_var if y_var > 0 else 1.0)

    def mse_of(candidate: Expression) -> float:
        with np.errstate(all="ignore"):
            value = weighted_mean((evaluate_columns(candidate, columns) - y) ** 2, w)
        return value if math.isfinite(value) else math.inf

    limit = mse_of(expr) + slack
    spent = 1
    values = list(expr.constants)
    # All at once first: constants that cancel (c - 206.0157 + 206.0157) round together.
    rounded = [float(f"{v:.{digits}g}") for v in values]
    if rounded != values:
        spent += 1
        if mse_of(expr.with_constants(rounded)) <= limit:
            values = rounded
    for i in sorted(range(len(values)), key=lambda j: abs(values[j])):
        for candidate in (0.0, float(f"{values[i]:.{digits}g}")):
            if candidate == values[i]:
                break
            trial = values[:i] + [candidate] + values[i + 1:]
            spent += 1
            if mse_of(expr.with_constants(trial)) <= limit:
                values = trial
                break
    return expr.with_constants(values), spent


def _pareto(entries: list[FrontEntry]) -> list[FrontEntry]:
    """Non-dominated entries sorted by size: each more accurate than every smaller one (by more than
    float rounding: :func:`pareto.more_accurate`).

    Refitting constants can make a small expression beat a larger one, which then drops out.
    """
    best: dict[int, FrontEntry] = {}
    for e in entries:
        if e.size not in best or e.mse < best[e.size].mse:
            best[e.size] = e
    return non_dominated(best)


def _front_table(entries: list[FrontEntry], user_exprs: list[Expression], scaling: Scaling, names: list[str],
                 seconds: float) -> pd.DataFrame:
    """The ``equations_`` table: sizes and scores from the search's units (scale-free), equations
    and losses in the user's units (a loss beyond the float range shows as inf or 0)."""
    deadline = time.perf_counter() + seconds
    rows = []
    # SymPy works on x0, x1, ... and the user's names come in last, so a column called E, I or
    # "a b" is only ever a Symbol's name, and simplification does not depend on the names.
    rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(str(n)) for i, n in enumerate(names)}
    for e, user, score in zip(entries, user_exprs, front_scores(entries)):
        raw = user.to_sympy()
        cap = min(_SIMPLIFY_EACH, deadline - time.perf_counter())
        expr = (simplify(raw, timeout=cap) if cap > 0.05 else raw).xreplace(rename)
        rows.append({"complexity": e.size, "loss": scaling.unscale_loss(e.mse), "r2": e.r2, "score": float(score),
                     "equation": equation_text(expr, _DIGITS), "sympy": expr,
                     "simplified_size": complexity(expr)})
    return FrontTable(rows, columns=["complexity", "loss", "r2", "score", "equation", "sympy", "simplified_size"])
