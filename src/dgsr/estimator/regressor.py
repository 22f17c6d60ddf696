"""``SymbolicRegressor``: the scikit-learn estimator, a facade over search, constants and Pareto front.

``fit`` only orchestrates: it validates the data (:mod:`dgsr.estimator.input_checks`), freezes
its parameters into a :class:`~dgsr.estimator.fit_config.FitConfig`, scales the rows, and calls
:func:`dgsr.estimator.fit_front.fit_front`, which chooses the columns, runs the MCTS search
under one budget plan (:mod:`dgsr.estimator.budget_plan`), refits the front's constants on all
training rows and selects an entry; ``fit`` copies the returned
:class:`~dgsr.estimator.fit_front.FitResult` onto the estimator. ``equations_`` is built when
first read. ``predict`` never returns NaN/inf for finite input (CONTRACTS §6). The estimator
contract is scikit-learn's (docs/DESIGN.md, "Estimator"): ``__init__`` only stores, fitted
attributes end in ``_``, ``check_estimator`` is a test."""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

import numpy as np
import sympy
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dgsr.core.custom_operators import define_operators, expand
from dgsr.core.display import equation_latex
from dgsr.core.simplify import round_floats
from dgsr.core.units import checked_units
from dgsr.estimator.data_warnings import warn_about_rows
from dgsr.estimator.display import DIGITS, FrontTableView, equation_line, simplify_seconds
from dgsr.estimator.export import FunctionExports
from dgsr.estimator.fallback import predict_front, scaled_r2
from dgsr.estimator.fit_config import FitConfig, config_from
from dgsr.estimator.fit_front import FitResult, fit_front
from dgsr.estimator.fit_search import random_streams, search_rows
from dgsr.estimator.fit_units import has_units
from dgsr.estimator.front import front_row
from dgsr.estimator.guesses import parse_guesses
from dgsr.estimator.html_repr import fitted_html
from dgsr.estimator.input_checks import (
    check_precision,
    validate_params,
    validate_predict_data,
    validate_training_data,
)
from dgsr.estimator.model_file import load_model, save_model
from dgsr.estimator.multi_output import each_output, fit_outputs, n_targets, predict_outputs
from dgsr.estimator.pickle_version import checked_state, parameter_defaults, with_version
from dgsr.estimator.plotting import plot_front
from dgsr.estimator.user_warnings import entry_point
from dgsr.estimator.warm_start import data_key
from dgsr.estimator.warm_up import warm_up_kernels

#: The default policy is the one that wins at equal wall time (CONTRACTS §2): the semantic policy
#: (data-aware proposals in closed form) beats the uniform random one at equal time and at equal
#: evaluations; the neural policy loses to both (docs/notes/benchmarks_history.md, "Semantic vs random").
DEFAULT_POLICY = "semantic"
#: The default model-selection rule, chosen by measurement on black-box, Feynman and scikit-learn
#: data (docs/notes/benchmarks_history.md, "Model selection"; docs/DESIGN.md, "Model selection").
DEFAULT_SELECTION = "cv"


def _announce_compiling() -> None:
    print("dgsr: compiling its numerical kernels (once after installing, about 20 s; cached for later "
          "runs; not counted in max_time)", file=sys.stderr, flush=True)


class SymbolicRegressor(FrontTableView, FunctionExports, RegressorMixin, BaseEstimator):
    """Symbolic regression by Monte-Carlo tree search with a learned mutation policy (DGSR-MCTS).

    Parameters
    ----------
    max_time : float, default=60
        Seconds of wall time for ``fit`` (None: no time limit).
    max_evaluations : int, default=500000
        Expression evaluations on the training rows (CONTRACTS §2), at most 10**15; whichever of the two limits
        comes first stops the search. Results are reproducible for a fixed ``random_state``
        when this, not ``max_time``, is the binding limit.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seed.
    policy : {"semantic", "learned", "random", "neural"}, path or Policy, default="semantic"
        Mutation policy: mutations aimed at the data by semantic backpropagation (no training),
        the same with a prior learned from dgsr's own searches (``"learned"``, or a path to its
        ``.json`` weights), uniform random mutations, the shipped pretrained transformer (the
        paper's reference), a ``.safetensors`` checkpoint, or an object implementing
        :class:`dgsr.search.policy.Policy`.
    n_samples : int, default=16
        Mutations sampled per expansion (K), 1 to 1024.
    iterations_per_trial : int, default=1000
        MCTS iterations before the tree is reset.
    p_uct : float, default=1.0
        Exploration constant of the PUCT rule (equation 3 of the paper).
    constant_fitting : {"never", "best", "all"} or None, default=None
        When to fit constants during search (Table 5); None uses the benchmark-chosen default.
    max_size : int, default=60
        Node limit of an expression.
    inner_fit_steps : int, default=3
        Levenberg-Marquardt steps a new candidate's inner constants (inside ``sin``, powers,
        quotients) get before it is valued, on a fixed subsample of rows; 0: valued as proposed.
    operators : list of str or None, default=None
        The operators expressions may use, from Table 1 of the paper: ``add sub mul div`` (or
        ``+ - * /``) and ``sin cos tan exp log sqrt inv sq`` (``inv`` = 1/x, ``sq`` = x**2, also
        ``"square"``). None: all of them. Unknown names raise a ValueError at ``fit``.
    unary_operators, binary_operators : list of str or None, default=None
        PySR's way of saying the same, one arity each; a list left at None allows every
        operator of its arity. Not together with ``operators``.
    target_r2 : float or None, default=None
        Stop once the best training R² reaches it (None: use the whole budget).
    model_selection : {"cv", "balanced", "best", "accuracy", "score", "validation"}, default="cv"
        Which front expression ``predict`` uses: highest R² (``"accuracy"``), largest drop of
        log-loss per unit of size (``"score"``), the highest score among expressions within
        1.5x of the lowest loss (``"best"``, PySR's rule), the same among those also within
        0.01 of the highest R² (``"balanced"``: on noisy data 1.5x the loss can be a tenth of the
        variance), ``"balanced"``'s pick checked by 5-fold cross-validation of the front's
        structures on up to ``cv_max_rows`` rows (``"cv"``, the default, chosen by measurement;
        it keeps the pick unless another formula predicts held-out folds better by more than one
        standard error, and sets ``validation_loss_`` to the out-of-fold losses; unless the
        front fits the rows exactly, half of the search's budget goes to repeating the search
        on 5 folds, and where the folds' larger formulas predict held-out rows worse the choice
        is kept within ``size_limit_``: on data with no signal, the constant), or the smallest
        expression within one standard error of the lowest loss on 25% of the rows held out from
        the search (``"validation"``). The front always holds the least-squares linear model
        when it fits in ``max_size``; a formula with a pole inside the data's range gives way to
        an equally good one without, and one with a sine or tangent that oscillates faster than
        the rows can show gives way to the rule's choice among the others (docs/DESIGN.md).
    cv_max_rows : int, default=1000
        The cross-validation regime of ``model_selection="cv"``: on 20 to ``cv_max_rows`` training
        rows it cross-validates the front and the whole search (above, the training loss is an
        honest guide and the rule ``"balanced"`` picks); 0 turns it off.
    verbose : bool, default=False
        Show a live progress line on stderr.
    max_features : int or None, default=None
        Search only this many columns, chosen by mutual information with ``y`` (with a warning
        and ``selected_features_``). None: all columns, unless the policy names fewer variables
        (the neural policy: 10; the random policy has no limit).
    device : str, default="cpu"
        Torch device for the neural policy.
    warm_start : bool, default=False
        Offer the previous fit's front to this one when fitting the same columns again: the search
        runs with the whole budget as in a cold fit, and the kept formulas have their constants
        refitted and losses measured on the new rows (never less accurate than a cold fit).
    finetune : bool, default=False
        Expert iteration on this dataset (Section 3.2): the budget is spent in trials with
        hyper-parameters drawn per trial (Appendix E.3), and after each trial a copy of the
        neural policy and its critic is trained on what the search found, so later trials use
        the fine-tuned policy (:mod:`dgsr.online`). Only for the neural policy (otherwise a
        warning and a plain search).
    n_jobs : int, default=1
        Processes running independent search units at once (-1: every CPU), at most one per CPU
        this process may use (more: a warning, and that many) and one per unit. The budget is cut
        into units that depend only on ``max_evaluations`` (:mod:`dgsr.search.parallel`), so the result
        is the same for any ``n_jobs`` at a fixed ``random_state`` and ``max_evaluations``.
    parallel_backend : {"local", "ray"}, default="local"
        Where the units run when ``n_jobs > 1``: a local process pool, or Ray tasks (the cluster
        named by ``RAY_ADDRESS``, else a local Ray instance).
    guesses : list of str or None, default=None
        Formulas you expect, in the column names (e.g. ``["m1*m2/r**2"]``): constants refitted, they
        join the front and the search's trials start from them (:mod:`dgsr.estimator.guesses`).
    nested_constraints, constraints, maxdepth : dict, dict, int or None, default=None
        PySR's limits on formulas: ``nested_constraints={"sin": {"sin": 0, "cos": 0}}`` (no sine
        or cosine anywhere below a sine; ``{"cos": {"cos": 2}}`` allows two cosines below one),
        ``constraints={"div": (-1, 3), "sin": 5}`` (a denominator of complexity at most 3, a
        sine's argument at most 5; -1: any), ``maxdepth`` (tree depth, a leaf being 1). Every
        policy's proposals and everything on the front obey them (:mod:`dgsr.core.formula_rules`).
    complexity_of_operators, complexity_of_constants, complexity_of_variables : dict, float or None, default=None
        What a node adds to a formula's complexity (PySR's names; 1 each by default: the node
        count), e.g. ``{"exp": 3}``; the front and its rules use it, ``max_size`` counts nodes.
    dimensional_constraint_penalty, dimensionless_constants_only : float, bool, default=1000.0, False
        PySR's names. With units (``fit``'s ``X_units``, ``y_units``): what is added to the loss of a
        dimensionally inconsistent formula, in units of the variance of ``y`` (PySR adds it raw);
        whether constants are pure numbers rather than carrying whatever unit they need.
    batching, batch_size : bool or None, int, default=None, 1000
        PySR's names: value candidates on ``batch_size`` rows drawn once (None: when there are more
        rows; False: on every row); above 100,000 rows the refit uses a sample and losses are
        measured on all rows (:mod:`dgsr.estimator.large_data`).
    snap_constants : bool, default=True
        Set each fitted constant of the front to a simple value near it (an integer, a half, a
        third, a quarter, a multiple of pi) where a likelihood-ratio test on the training rows
        cannot tell the two apart, the other constants refitted (:mod:`dgsr.core.snapping`): on
        noisy rows ``exp(-0.5003*x**2)`` becomes ``exp(-x**2/2)``.
    reduce_units : bool, default=True
        With units, first search ``y / P`` as a function of the dimensionless groups of the
        columns (Buckingham's pi theorem; ``P`` a product of powers of the columns with the
        target's unit) for 30% of the search's budget, and seed the search with what it finds
        (:mod:`dgsr.estimator.pi_search`). No effect without units.
    unit_differences : bool, default=True
        With ``reduce_units``, the reduced search also takes the difference of two same-unit columns'
        groups where it relates to ``y`` more than either (``cos(theta1 - theta2)``, ``E - U``).

    Attributes
    ----------
    n_outputs_, estimators_ : the number of targets; after a fit on several, the fitted single-output
        estimators, one per target, and the attributes below are lists, one item per target.
    equations_ : pandas.DataFrame
        The Pareto front sorted by complexity; columns ``complexity`` (node count, or as weighed
        by ``complexity_of_*``), ``loss``
        (MSE on the training rows), ``r2``, ``score``, ``equation`` (readable, the user's column
        names, constants to 4 significant digits), ``sympy`` (simplified SymPy expression) and
        ``simplified_size`` (its node count, as SRBench counts size). Built when first read
        (the SymPy simplification is not part of ``fit``'s time), then kept.
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
    size_limit_ : int or None
        The largest ``complexity`` the whole-search cross-validation of ``"cv"`` supports (the
        choice is made among the entries within it); None where that check did not run (more
        than ``cv_max_rows`` rows, another ``model_selection``, a front that fits the rows
        exactly) or found larger formulas predicting better as far as its folds reached.
    n_features_in_, feature_names_in_ : as in scikit-learn.
    target_name_ : str
        The target's name (a pandas Series' name, else ``"y"``), used by ``plot_front``.
    n_evaluations_ : int
        Expression evaluations the fit made (search, constant refits, checks), rounded to a whole
        number: a pass over a subset of the rows counts as that fraction of an evaluation.
    history_, stop_reason_ : search statistics. ``stop_reason_`` is
        ``"evaluations"``, ``"time"``, ``"target"``, ``"exhausted"`` (the search kept finding
        only expressions it had already scored: the operator set and ``max_size`` leave little
        to search), ``"interrupted"`` or ``"constant_target"``.
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
        inner_fit_steps: int = 3,
        operators: list[str] | None = None,
        unary_operators: list[str] | None = None,
        binary_operators: list[str] | None = None,
        target_r2: float | None = None,
        model_selection: str = DEFAULT_SELECTION,
        cv_max_rows: int = 1000,
        verbose: bool = False,
        max_features: int | None = None,
        device: str = "cpu",
        warm_start: bool = False,
        finetune: bool = False,
        n_jobs: int | None = 1,
        parallel_backend: str = "local",
        guesses: list[str] | None = None,
        nested_constraints: dict[str, dict[str, int]] | None = None,
        constraints: dict[str, Any] | None = None,
        maxdepth: int | None = None,
        complexity_of_operators: dict[str, float] | None = None,
        complexity_of_constants: float | None = None,
        complexity_of_variables: float | None = None,
        batching: bool | None = None,
        batch_size: int = 1000,
        dimensional_constraint_penalty: float = 1000.0,
        dimensionless_constants_only: bool = False,
        snap_constants: bool = True,
        reduce_units: bool = True,
        unit_differences: bool = True,
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
        self.inner_fit_steps = inner_fit_steps
        self.operators = operators
        self.unary_operators = unary_operators
        self.binary_operators = binary_operators
        self.target_r2 = target_r2
        self.model_selection = model_selection
        self.cv_max_rows = cv_max_rows
        self.verbose = verbose
        self.max_features = max_features
        self.device = device
        self.warm_start = warm_start
        self.finetune = finetune
        self.n_jobs = n_jobs
        self.parallel_backend = parallel_backend
        self.guesses = guesses
        self.nested_constraints = nested_constraints
        self.constraints = constraints
        self.maxdepth = maxdepth
        self.complexity_of_operators = complexity_of_operators
        self.complexity_of_constants = complexity_of_constants
        self.complexity_of_variables = complexity_of_variables
        self.batching = batching
        self.batch_size = batch_size
        self.dimensional_constraint_penalty = dimensional_constraint_penalty
        self.dimensionless_constants_only = dimensionless_constants_only
        self.snap_constants = snap_constants
        self.reduce_units = reduce_units
        self.unit_differences = unit_differences

    # ------------------------------------------------------------------ fit
    @entry_point
    def fit(self, X: Any, y: Any, sample_weight: Any = None, X_units: Any = None, y_units: Any = None
            ) -> SymbolicRegressor:
        """Search for expressions of the columns of ``X`` that fit ``y``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric, finite; DataFrame column names become the variable names.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Numeric, finite target. Several columns fit one front each, with ``1/n_outputs`` of
            the budget and a seed derived from ``random_state`` (:mod:`dgsr.estimator.multi_output`).
        sample_weight : array-like of shape (n_samples,) or None
            Non-negative row weights: the search's loss and R², the constant fits, the front's
            ``loss`` and ``r2`` columns and model selection are all weighted (None: equal).
        X_units, y_units : list of str, str (a list per target with several), or None
            PySR's units, read by pint (``["kg", "m/s"]``, ``"J"``; None: pure numbers): a formula
            whose units do not follow has ``dimensional_constraint_penalty`` times the variance of
            ``y`` added to its loss; ``equations_`` says which rows are consistent
            (:mod:`dgsr.core.units`).

        Returns
        -------
        self
        """
        start = time.perf_counter()
        config = dataclasses.replace(self._fit_config(), x_units=X_units, y_units=y_units)
        validate_params(config)
        if n_targets(y) > 1:
            return fit_outputs(self, X, y, sample_weight, X_units, y_units)
        self.X_units_, self.y_units_ = X_units, y_units
        self.n_outputs_, _ = 1, self.__dict__.pop("estimators_", None)  # forget a former fit's several targets
        self._interrupted = False  # set by the first Ctrl-C (dgsr.estimator.interrupts)
        previous = self._archive if config.warm_start and getattr(self, "_archive", None) is not None else None
        data = validate_training_data(self, X, y)
        parse_guesses(config, data.names)  # a guess that cannot be used: a ValueError now, before any search
        if has_units(config):  # so is a unit pint cannot read
            checked_units(X_units, y_units, data.X.shape[1], data.names)
        if config.max_time is not None:
            # Compiling the kernels (once after installing) is not the method's time: the clock
            # skips it. Loading them from the disk cache counts, as it did when it happened lazily.
            start += warm_up_kernels(_announce_compiling if config.verbose else None).compile_seconds
        # The search runs on data scaled by powers of two (exact), so any magnitude works; every
        # fitted state below is in those units and is mapped back for display and predict.
        rows = search_rows(data, sample_weight)
        # A warm refit of the same rows continues the series (fresh streams, it explores further);
        # on other rows it draws a cold fit's streams (dgsr.estimator.warm_start).
        key = data_key(rows.X, rows.y, rows.w) if config.warm_start else None  # a hash of every row
        same = previous is not None and getattr(self, "_data_key", None) == key
        self._n_fits = (getattr(self, "_n_fits", 0) + 1) if same else 1
        self._data_key = key
        self._full_scaling = rows.scaling
        name = getattr(y, "name", None)
        self.target_name_ = name if isinstance(name, str) and name else "y"
        warn_about_rows(data, rows, config.max_size)
        result = fit_front(config, rows, data.names, streams=random_streams(config.random_state, self._n_fits),
                           start=start, previous=previous)
        self._store(result)
        self._simplify_seconds = 0.0 if self._interrupted else simplify_seconds(config.max_time, start)
        return self

    def _fit_config(self) -> FitConfig:
        """This estimator's parameters as one fit reads them (an estimator unpickled from a version
        without a parameter gets its default)."""
        return config_from(vars(self))

    def _store(self, result: FitResult) -> None:
        """Copy a fit's result onto the estimator (its fitted attributes and private state)."""
        self._feature_index, self.selected_features_ = result.feature_index, list(result.selected_features)
        self.n_evaluations_, self.history_ = result.n_evaluations, result.history
        self.stop_reason_, self.n_trials_ = result.stop_reason, result.n_trials
        self._archive, self._interrupted, self._y_mean = result.archive, result.interrupted, result.y_mean
        self._units, self._column_signs = result.units, result.column_signs
        self._column_magnitudes = result.column_magnitudes
        self.validation_loss_, self.size_limit_ = result.validation_loss, result.size_limit
        self._scaling, self._front, self.best_index_ = result.scaling, result.entries, result.best_index
        self._validation_errors = None  # a field of 0.1.0's pickles, always None after fit
        self.expressions_ = [self._scaling.to_user(e.expression) for e in result.entries]
        self.expression_ = self.expressions_[self.best_index_]
        # The table is built when first read (its SymPy simplification is display work: a
        # fit inside a cross-validation loop never reads it), with the time fit would have left it.
        self._equations, self._sympy_rows = None, {}
        self.__dict__.pop("equations_", None)  # an unpickled 0.9.0 estimator's table, refitted

    def _outputs(self) -> list[SymbolicRegressor] | None:
        """The fitted single-output estimators of a multi-output fit (None after a single-output one)."""
        return self.__dict__.get("estimators_")

    def _row(self, index: int | None) -> int:
        """Row of ``equations_`` that ``index`` names (None: the selected one); IndexError if none."""
        return front_row(len(self._front), self.best_index_, index)

    # ------------------------------------------------------------------ use
    def predict(self, X: Any, index: int | None = None, strict: bool = False) -> np.ndarray:
        """Predictions of the selected expression (or of row ``index`` of ``equations_``).

        Rows where that expression is undefined (log of a negative, division by zero, overflow)
        take the value of the next front expression that is finite there (most accurate first),
        else the training mean, with a warning that names the rows and the fallback used; finite
        input never gives NaN or inf. With ``strict=True`` those rows are NaN instead.
        Several targets: shape ``(n_samples, n_outputs)``; ``index`` may name a row per output.
        """
        check_is_fitted(self, "expression_")
        if self._outputs() is not None:
            return predict_outputs(self._outputs(), X, index, strict)
        X_sel = validate_predict_data(self, X)[:, self._feature_index]
        scaling = getattr(self, "_scaling", None)  # absent in estimators built by hand (tests)
        return predict_front(self._front, scaling, self._y_mean, self._row(index),
                             X_sel if scaling is None else scaling.scale_X(X_sel), strict,
                             lambda i: equation_line(self.equations_, i))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R² of ``predict(X)`` against ``y`` (scikit-learn's ``score``), finite for any target scale;
        several targets: their R² averaged uniformly, as ``r2_score``'s default ``multioutput``."""
        return scaled_r2(np.asarray(y, dtype=np.float64), self.predict(X), sample_weight)

    @entry_point
    def sympy(self, index: int | None = None, precision: int | None = None,
              expand_operators: bool = False) -> sympy.Expr:
        """SymPy expression of the selected equation (or of row ``index`` of ``equations_``);
        ``precision`` (an integer >= 1) rounds its constants to that many significant digits
        (None: full precision). Simplifies that row alone when the table is not built yet.
        User-defined operators stay functions of their name (``gauss(x)``) unless
        ``expand_operators``, which writes out their bodies. Several targets: a list (``index``
        as in ``predict``)."""
        precision = check_precision(precision)
        check_is_fitted(self, "expression_")
        if self._outputs() is not None:
            return each_output(self._outputs(), index, lambda o, i: o.sympy(i, precision, expand_operators))
        row = self._row(index)
        table = self._built_table()
        expr = table["sympy"].iloc[row] if table is not None else self._simplified_rows([row])[row]
        expr = expand(expr) if expand_operators else expr
        return expr if precision is None else round_floats(expr, precision)

    def latex(self, index: int | None = None, precision: int = DIGITS) -> str:
        """LaTeX of the selected equation (or row ``index``), constants to ``precision`` (an
        integer >= 1) significant digits; several targets: a list, one per target."""
        if self._outputs() is not None:
            return each_output(self._outputs(), index, lambda o, i: o.latex(i, precision))
        return equation_latex(self.sympy(index), check_precision(precision, allow_none=False))

    def plot_front(self, ax: Any = None, target: str | None = None, output: int = 0) -> Any:
        """Plot the Pareto front (loss vs size, log scale) with the selected equation marked.

        ``target`` names y in the label (default: the target's name at ``fit``, ``target_name_``).
        Returns the matplotlib Axes; pass ``ax`` to draw into an existing figure (several targets: target ``output``'s).
        """
        check_is_fitted(self, "expression_")
        if self._outputs() is not None:
            return self._outputs()[output].plot_front(ax, target)
        target = target if target is not None else getattr(self, "target_name_", None) or "y"
        return plot_front(self.equations_, self.best_index_, self.model_selection, target, ax)

    # ------------------------------------------------------------------ files
    def save(self, path: Any) -> Any:
        """Write the fitted model to ``path`` as a versioned JSON model file, atomically; returns
        the path. :meth:`from_file` reads it back in this or any later dgsr, with the same
        predictions, ``equations_``, ``sympy()`` and ``latex()`` (:mod:`dgsr.estimator.model_file`).
        Builds ``equations_`` if it was not read yet: the file keeps its simplified formulas."""
        return save_model(self, path)

    @classmethod
    def from_file(cls, path: Any) -> SymbolicRegressor:
        """The fitted estimator that :meth:`save` (or ``dgsr fit``, as ``model.json``) wrote to ``path``.

        Raises :class:`dgsr.estimator.model_file.ModelFileError` (a ValueError) naming the file
        for a file that is not a model file, or one of a newer schema than this dgsr reads."""
        return load_model(cls, path)

    @property
    def _repr_html_(self) -> Any:
        # A property, as scikit-learn's: a notebook calls what it returns (dgsr.estimator.html_repr).
        if hasattr(self, "expression_"):
            return lambda: fitted_html(self)
        return super()._repr_html_

    def __getstate__(self) -> dict:
        # The pickle records which dgsr wrote it (dgsr.estimator.pickle_version).
        return with_version(super().__getstate__())

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(checked_state(state, type(self).__name__))
        for name, default in parameter_defaults(type(self)).items():  # parameters added since it was written
            self.__dict__.setdefault(name, default)
        # A fresh process knows only Table 1: the user-defined operators its formulas use, again.
        define_operators(self.operators, self.unary_operators, self.binary_operators)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = True
        return tags
