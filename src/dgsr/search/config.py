"""Hyper-parameters of the search (CONTRACTS §4, Appendix E of the paper)."""

from __future__ import annotations

from dataclasses import dataclass

from dgsr.core.custom_operators import definitions_in
from dgsr.core.expression import Expression
from dgsr.core.formula_rules import FormulaRules
from dgsr.core.operators import resolve_operators
from dgsr.core.units import UnitCheck

CONSTANT_FITTING_MODES = ("never", "best", "all")
#: The largest formula a search builds, in nodes: SearchConfig and the estimator's checks share it.
MAX_SIZE_LIMIT = 60


@dataclass(frozen=True)
class SearchConfig:
    """Hyper-parameters of the search (defaults: CONTRACTS §4 and Appendix E).

    Attributes
    ----------
    n_samples:
        K, mutations asked of the policy per expansion.
    iterations_per_trial:
        MCTS iterations before the tree is reset.
    p_uct:
        Exploration constant of equation 3.
    depth_decay:
        Back-propagated values are multiplied by ``depth_decay ** distance`` (Appendix E.3).
    constant_fitting:
        ``"never"``, ``"best"`` (each expression that improves on the trial's best so far) or
        ``"all"`` (every new one).
    constant_method, constant_time_limit, constant_batch_size:
        Optimiser (None: :data:`dgsr.core.constants.DEFAULT_METHOD`), seconds and rows per fit.
    max_size:
        Node limit of an expression.
    solved_r2:
        R² at which an expression counts as a solution (value 1).
    max_trials:
        Stop after this many trials (None: only the budget stops the search).
    max_idle_trials:
        Stop (``"exhausted"``) after this many trials in a row that scored no new expression:
        every child they built had been scored before, so the policy has run out of what it
        reaches (a tiny operator set, one variable, a small ``max_size``). None: never.
    record_training_data:
        Keep, per trial, the shortest mutation path to a solution and the critic targets
        (for expert iteration); off by default because it holds on to the trees' expressions.
    min_visits:
        N_min_visits: nodes visited fewer times give no critic target.
    linear_scaling:
        Score an expression evaluated without constant fitting as ``a*f + b`` with the
        closed-form best ``a, b`` (free: no extra evaluation), as Operon does; the archive gets
        both the scaled and the unscaled expression.
    linear_terms:
        Also score an expression that is a sum of terms (through ``add``/``sub``) with each term's
        own least-squares weight, ``b + sum_i w_i * t_i`` (one small linear solve on the values
        already computed, no extra evaluation); that expression is offered to the archive and
        its R² is the node's accuracy. Gives sums the per-term coefficients that mutations
        rarely find (black-box data, Feynman sums).
    progressive_widening:
        A node expanded ``e`` times is expanded again (K more proposals, new children only)
        once ``e < progressive_widening * sqrt(visits / K)``, at most 8 times; 0 turns it off
        (the paper's one expansion per node).
    inner_fit_steps, inner_fit_rows:
        A new child whose constants include inner ones (inside a nonlinear part, beyond each
        term's own coefficient) first gets at most ``inner_fit_steps`` Levenberg-Marquardt
        steps on a fixed subsample of ``inner_fit_rows`` training rows
        (:func:`dgsr.core.inner_fit.fit_inner_constants`), and the tree keeps the fitted
        constants, so its children start from them. 0 turns it off.
    max_rows:
        The search scores expressions on a fixed random subset of at most this many training
        rows (drawn once per search; each pass counts ``max_rows / n_rows`` evaluations); the
        final front is refitted and scored on all rows by the estimator. None: all rows.
    cache_size:
        Evaluations remembered by expression key; the cache is cleared when it is full.
    operators:
        The Table 1 operators expressions may use (None: all). The search rejects any proposal
        that uses another one, whatever the policy (policies should not propose them: the
        random policy and the neural one take the same set as their ``operators`` argument,
        see :func:`dgsr.estimator.policy_loading.load_policy`). Linear scaling and term weights build ``add``
        and ``mul`` nodes, so they are off unless both are allowed.
    roots:
        Expressions to start from (the estimator's ``guesses``): each is scored with its constants
        fitted before the first trial, so it joins the archive, and trial ``t`` starts from
        ``roots[t % (len(roots) + 1)]`` (the empty expression when that index is ``len(roots)``).
        Empty: every trial starts from the empty expression.
    rules:
        The user's nesting, argument-size, depth and complexity rules
        (:class:`dgsr.core.formula_rules.FormulaRules`; None: none). The search rejects any
        child that breaks them, whatever the policy, and the archive keeps neither such an
        expression nor a built one (scaled, reweighted) that breaks them; with complexity
        weights the archive's sizes are complexities.
    units:
        The columns' and the target's units (:class:`dgsr.core.units.UnitCheck`; None: none): the
        archive adds its penalty to the loss of a formula that is not dimensionally consistent.
    """

    n_samples: int = 16
    iterations_per_trial: int = 1000
    p_uct: float = 1.0
    depth_decay: float = 1.0
    constant_fitting: str = "best"
    constant_method: str | None = None
    constant_time_limit: float = 1.0
    constant_batch_size: int = 256
    max_size: int = 60
    solved_r2: float = 0.99
    max_trials: int | None = None
    max_idle_trials: int | None = 25
    record_training_data: bool = False
    min_visits: int = 5
    linear_scaling: bool = True
    linear_terms: bool = True
    progressive_widening: float = 1.0
    max_rows: int | None = 1000
    cache_size: int = 200_000
    inner_fit_steps: int = 0
    inner_fit_rows: int = 64
    operators: tuple[str, ...] | None = None
    roots: tuple[Expression, ...] = ()
    rules: FormulaRules | None = None
    units: UnitCheck | None = None
    #: The definitions of the user-defined operators among ``operators`` (set here, not given):
    #: what a worker process defines before it runs the search.
    definitions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.operators is not None:
            allowed = resolve_operators(self.operators)
            object.__setattr__(self, "operators", allowed)
            object.__setattr__(self, "definitions", definitions_in(allowed))
            if allowed is not None and not {"add", "mul"} <= set(allowed):
                object.__setattr__(self, "linear_scaling", False)
                object.__setattr__(self, "linear_terms", False)
        if self.constant_fitting not in CONSTANT_FITTING_MODES:
            raise ValueError(f"constant_fitting must be one of {CONSTANT_FITTING_MODES}, "
                             f"got {self.constant_fitting!r}")
        if self.n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {self.n_samples}")
        if self.iterations_per_trial < 1:
            raise ValueError(f"iterations_per_trial must be >= 1, got {self.iterations_per_trial}")
        if not self.p_uct >= 0:
            raise ValueError(f"p_uct must be >= 0, got {self.p_uct}")
        if not 0 < self.depth_decay <= 1:
            raise ValueError(f"depth_decay must be in (0, 1], got {self.depth_decay}")
        if self.inner_fit_steps < 0 or self.inner_fit_rows < 1:
            raise ValueError(f"inner_fit_steps must be >= 0 and inner_fit_rows >= 1, got "
                             f"{self.inner_fit_steps} and {self.inner_fit_rows}")
        if not 1 <= self.max_size <= MAX_SIZE_LIMIT:
            raise ValueError(f"max_size must be in 1..{MAX_SIZE_LIMIT}, got {self.max_size}")
