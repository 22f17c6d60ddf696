"""Monte-Carlo tree search over expressions (Section 3.1 of the paper).

A search runs *trials*; each trial builds a tree from the empty expression for
``iterations_per_trial`` iterations, then the tree is reset (the policy may have changed in
between: expert iteration). One iteration:

1. **selection**: from the root, follow the child maximising equation 3,
   ``V(f') + p_uct * P(f') * sqrt(sum_children N) / (1 + N(f'))``, to a leaf;
2. **expansion**: ask the policy for K mutations of the leaf and apply them; every new
   expression is evaluated (constants fitted per ``constant_fitting``, Table 5) and offered
   to the Pareto archive; its first value is 1 when it solves the problem (R² >= 0.99), else
   the critic's estimate (or, for a policy without a critic, its own accuracy);
3. **back-propagation**: every ancestor adds the new values, times ``depth_decay ** distance``.

The tree stores the expressions as mutated, not with fitted constants (Section 4.1); the
archive stores the fitted ones. A leaf with no valid new child is terminal, as is a node whose
children all are; a terminal root ends the trial early. Evaluations are counted as CONTRACTS §2
says, and cached by expression key for the whole search. This module never imports torch or
SymPy (CONTRACTS §5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.constants import (
    DEFAULT_METHOD,
    additive_terms,
    fit_constants,
    fit_term_weights,
    scale_expression,
    weighted_sum,
)
from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.operators import mutation_uses_only, resolve_operators
from dgsr.core.pareto import ParetoArchive, ParetoEntry
from dgsr.search.mutations import InvalidMutation, Mutation, apply_mutation
from dgsr.search.policy import Policy

CONSTANT_FITTING_MODES = ("never", "best", "all")
_PROGRESS_EVERY = 8  # iterations between progress callbacks (the display rate-limits itself)


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
        see :func:`dgsr.policies.registry.load_policy`). Linear scaling and term weights build ``add``
        and ``mul`` nodes, so they are off unless both are allowed.
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
    record_training_data: bool = False
    min_visits: int = 5
    linear_scaling: bool = True
    linear_terms: bool = True
    progressive_widening: float = 1.0
    max_rows: int | None = 1000
    cache_size: int = 200_000
    operators: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.operators is not None:
            allowed = resolve_operators(self.operators)
            object.__setattr__(self, "operators", allowed)
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
        if not 1 <= self.max_size <= 60:
            raise ValueError(f"max_size must be in 1..60, got {self.max_size}")


@dataclass(frozen=True)
class SearchProgress:
    """What a progress display needs; passed to ``on_progress``."""

    elapsed: float
    evaluations: float
    best_r2: float
    best_size: int
    trials: int


def _path_to(node: _Node) -> list[tuple[Expression, Mutation]]:
    """``(state, mutation)`` pairs from the root (the empty expression) down to ``node``."""
    path = []
    while node.parent is not None:
        path.append((node.parent.expression, node.mutation))
        node = node.parent
    return path[::-1]


@dataclass
class TrialRecord:
    """Summary of one trial, with expert-iteration data when the config asks for it.

    ``solution_path``: ``(state, mutation)`` pairs from the empty expression to the solution
    reached in the fewest mutations (None when nothing was solved). ``best_path``: the same
    pairs up to the trial's most accurate expression (the shallowest on ties), solved or not,
    with that expression's R² in ``best_path_r2``. ``critic_targets``:
    ``(expression, target)``, 1.0 on paths to solutions, else the node's mean value, for nodes
    visited at least ``min_visits`` times.
    """

    index: int
    iterations: int
    evaluations: float
    best_r2: float
    solved: bool
    solution_path: list[tuple[Expression, Mutation]] | None = None
    best_path: list[tuple[Expression, Mutation]] | None = None
    best_path_r2: float = -math.inf
    critic_targets: list[tuple[Expression, float]] = field(default_factory=list)


@dataclass
class SearchResult:
    """Outcome of :func:`run_search`; ``archive.front()`` holds the accuracy-size front."""

    archive: ParetoArchive
    best: ParetoEntry | None
    n_evaluations: float
    n_trials: int
    n_iterations: int
    elapsed: float
    stop_reason: str
    history: list[dict[str, float]]
    mutation_stats: dict[str, int]
    trials: list[TrialRecord]


class _Node:
    __slots__ = (
        "children",
        "depth",
        "expansions",
        "expression",
        "mutation",
        "parent",
        "prior",
        "r2",
        "terminal",
        "value_sum",
        "visits",
    )

    def __init__(self, expression: Expression, parent: _Node | None, mutation: Mutation | None,
                 prior: float, r2: float):
        self.expression = expression
        self.parent = parent
        self.mutation = mutation
        self.prior = prior
        self.children: list[_Node] = []
        self.expansions = 0
        self.visits = 0
        self.value_sum = 0.0
        self.terminal = False
        self.depth = 0 if parent is None else parent.depth + 1
        self.r2 = r2


class _Evaluator:
    """Scores expressions on the training rows, caching by key, counting, feeding the archive."""

    def __init__(self, X: np.ndarray, y: np.ndarray, config: SearchConfig, budget: Budget,
                 archive: ParetoArchive, rng: np.random.Generator, sample_weight: np.ndarray | None = None):
        y = np.asarray(y, dtype=np.float64)
        self.weight = 1.0  # evaluations counted per scoring pass (CONTRACTS §2: b rows of N count b/N)
        if config.max_rows is not None and len(y) > config.max_rows:
            rows = np.sort(rng.choice(len(y), size=config.max_rows, replace=False))
            self.weight = config.max_rows / len(y)
            X, y = X[rows], y[rows]
            sample_weight = sample_weight[rows] if sample_weight is not None else None
        self.columns = as_columns(X)
        self.y = y
        self.n = len(self.y)
        # Row weights normalised to mean 1, so every weighted mean is dot(w, .) / n; None = equal.
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if w is not None and (np.ptp(w) == 0 or not np.sum(w) > 0):
            w = None
        self.w = None if w is None else w * (self.n / float(np.sum(w)))
        self.y_mean = float(np.mean(self.y)) if self.w is None else float(np.dot(self.w, self.y)) / self.n
        self.y_centered = self.y - self.y_mean
        self.wy_centered = self.y_centered if self.w is None else self.w * self.y_centered
        self.y_var = float(np.dot(self.y_centered, self.wy_centered)) / self.n
        self.config = config
        self.budget = budget
        self.archive = archive
        self.rng = rng
        self.method = config.constant_method or DEFAULT_METHOD
        self.cache: dict[tuple, float] = {}
        self.fitted: set[tuple] = set()
        self.best_r2 = -math.inf
        self.best_size = 0

    def score(self, expr: Expression, fit: bool, key: tuple | None = None) -> float:
        """R² of ``expr`` (constants fitted first when ``fit`` and it has any); -inf if invalid.

        ``key`` is ``expr.key()`` when the caller already has it.
        """
        key = expr.key() if key is None else key
        hit = self.cache.get(key)
        if hit is not None and (not fit or key in self.fitted or not expr.n_constants):
            return hit
        if fit and expr.n_constants:
            result = fit_constants(expr, self.columns, self.y, method=self.method, rng=self.rng,
                                   time_limit=self.budget.cap(self.config.constant_time_limit),
                                   batch_size=self.config.constant_batch_size, y_var=self.y_var,
                                   max_evaluations=self.budget.evaluations_left() / self.weight,
                                   sample_weight=self.w)
            self.budget.add(result.evaluations * self.weight)
            self.fitted.add(key)
            r2 = result.r2
            self._offer(result.expression, r2)
            if hit is not None and hit > r2:  # the mutated constants were better than the fit
                r2 = hit
        else:
            terms = additive_terms(expr) if self.config.linear_terms else []
            if sum(1 for _, t in terms if t.variables) >= 2:
                # evaluated term by term (the same work as the whole), so the terms can be reweighted
                values = [evaluate_columns(t, self.columns) for _, t in terms]
                with np.errstate(all="ignore"):
                    pred = sum(sign * v for (sign, _), v in zip(terms, values))
                self.budget.add(self.weight)
                r2 = max(self._score_prediction(expr, pred), self._score_terms(terms, values))
            else:
                pred = evaluate_columns(expr, self.columns)
                self.budget.add(self.weight)
                r2 = self._score_prediction(expr, pred)
        if len(self.cache) >= self.config.cache_size:
            self.cache.clear()
            self.fitted.clear()
        self.cache[key] = r2
        return r2

    def _score_prediction(self, expr: Expression, pred: np.ndarray) -> float:
        """R² of ``pred``, or of its least-squares rescaling ``a*pred + b`` when linear scaling is on.

        Both come from the first two moments of ``pred`` and its covariance with ``y``: one pass,
        no second evaluation; the scaled expression is built only when the archive keeps it.
        """
        n, y_var = self.n, self.y_var
        w = self.w
        with np.errstate(all="ignore"):
            mean = float(np.add.reduce(pred) if w is None else np.dot(w, pred)) / n
            centered = pred - mean
            var = float(np.dot(centered, centered if w is None else w * centered)) / n
            cov = float(np.dot(centered, self.wy_centered)) / n
        if not (math.isfinite(var) and math.isfinite(cov)):
            return -math.inf  # NaN or inf somewhere in pred (or an overflow of its moments)
        offset = self.y_mean - mean
        mse = max(y_var + var - 2.0 * cov + offset * offset, 0.0)  # float * overflows to inf, ** raises
        r2 = 1.0 - mse / y_var if y_var > 0 else (1.0 if mse == 0 else -math.inf)
        self._offer(expr, r2, mse)
        if not self.config.linear_scaling or var <= 1e-300 * max(mean * mean, 1.0) or y_var <= 0:
            return r2
        scaled_r2 = min((cov / var) * (cov / y_var), 1.0)  # var * y_var can underflow to 0
        scaled_size = expr.size + 4
        if not math.isfinite(scaled_r2) or scaled_r2 <= r2 or scaled_size > self.config.max_size:
            return r2
        a = cov / var
        self._offer_built(scaled_size, scaled_r2, (1.0 - scaled_r2) * y_var,
                          lambda: scale_expression(expr, a, self.y_mean - a * mean))
        return scaled_r2

    def _score_terms(self, terms: list[tuple[float, Expression]], values: list[np.ndarray]) -> float:
        """R² of the least-squares reweighting ``b + sum w_i t_i`` of the non-constant additive terms
        (offered to the archive as an expression); -inf when it cannot be built within ``max_size``."""
        keep = [i for i, (_, t) in enumerate(terms) if t.variables]
        size = sum(terms[i][1].size for i in keep) + 3 * len(keep) + 1
        if size > self.config.max_size or self.y_var <= 0:
            return -math.inf
        fit = fit_term_weights(np.stack([np.broadcast_to(values[i], (self.n,)) for i in keep]), self.y, self.w)
        if fit is None:
            return -math.inf
        weights, intercept, mse = fit
        r2 = 1.0 - mse / self.y_var
        self._offer_built(size, r2, mse, lambda: weighted_sum([terms[i][1] for i in keep], weights, intercept))
        return r2

    def _offer_built(self, size: int, r2: float, mse: float, build: Callable[[], Expression]) -> None:
        """Offer the expression ``build()`` makes (of ``size`` nodes), building it only when the
        archive would keep it; otherwise only the best-so-far statistics are updated."""
        if self.archive.accepts(size, mse):
            self._offer(build(), r2, mse)
        else:
            self._note_best(r2, size)

    def _offer(self, expr: Expression, r2: float, mse: float | None = None) -> None:
        if not math.isfinite(r2):
            return
        if mse is None:  # R² = 1 - mse / var(y): the loss needs no second pass over the rows
            mse = max(1.0 - r2, 0.0) * self.y_var
        self.archive.add(expr, mse, r2)
        self._note_best(r2, expr.size)

    def _note_best(self, r2: float, size: int) -> None:
        if r2 > self.best_r2 or (r2 == self.best_r2 and size < self.best_size):
            self.best_r2, self.best_size = r2, size


def accuracy_value(r2: float, solved_r2: float = 0.99) -> float:
    """Value of a node for a policy without a critic: its accuracy on a log scale, in [0, 1).

    ``-log10(1 - R²)`` spreads the high-accuracy range that matters (R² 0.9 vs 0.99 vs 0.999)
    where plain R² would squeeze it into [0.9, 1]; it reaches 1 only for a solution.
    """
    if not r2 > 0:
        return 0.0
    if r2 >= solved_r2:
        return 1.0
    return min(-math.log10(1.0 - r2) / -math.log10(1.0 - solved_r2), 0.999)


def run_search(
    X: np.ndarray,
    y: np.ndarray,
    policy: Policy,
    *,
    config: SearchConfig | None = None,
    rng: np.random.Generator | int | None = None,
    budget: Budget | None = None,
    archive: ParetoArchive | None = None,
    on_progress: Callable[[SearchProgress], Any] | None = None,
    sample_weight: np.ndarray | None = None,
) -> SearchResult:
    """Search for expressions of the columns of ``X`` that fit ``y``.

    Parameters
    ----------
    X, y:
        Training rows ``[n_rows, n_features]`` and targets ``[n_rows]``, all finite.
    policy:
        The mutation policy (:class:`dgsr.search.policy.Policy`).
    config:
        Search hyper-parameters (default :class:`SearchConfig`).
    rng:
        Randomness of the search, the policy's sampling and the constant fits.
    budget:
        Evaluations / time / target R² (default: 100,000 evaluations).
    archive:
        A Pareto archive to continue (warm start); a new one otherwise.
    on_progress:
        Called every few iterations with a :class:`SearchProgress`.
    sample_weight:
        Non-negative row weights ``[n_rows]`` (None: equal): every loss and R² of the search,
        and its constant fits, are weighted by them.

    Returns
    -------
    SearchResult
        ``stop_reason`` is ``"evaluations"``, ``"time"``, ``"target"``, ``"trials"`` or
        ``"interrupted"`` (Ctrl-C: the search returns what it found so far).
    """
    config = config or SearchConfig()
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    budget = (budget or Budget(max_evaluations=100_000)).start()
    archive = archive if archive is not None else ParetoArchive()
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be [n_rows, n_features] and y [n_rows]; got {X.shape} and {y.shape}")

    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != y.shape:
            raise ValueError(f"sample_weight must have shape {y.shape}, got {sample_weight.shape}")
    evaluator = _Evaluator(X, y, config, budget, archive, rng, sample_weight)
    stats: Counter[str] = Counter()
    history: list[dict[str, float]] = []
    trials: list[TrialRecord] = []
    n_iterations = 0
    stop_reason = None

    def record_history(trial: int) -> None:
        if not history or evaluator.best_r2 > history[-1]["best_r2"]:
            history.append({"evaluations": budget.evaluations, "time": budget.elapsed,
                            "best_r2": evaluator.best_r2, "best_size": evaluator.best_size, "trial": trial})

    def progress(trial: int) -> None:
        if on_progress is not None:
            on_progress(SearchProgress(budget.elapsed, budget.evaluations, evaluator.best_r2,
                                       evaluator.best_size, trial))

    try:
        trial = 0
        while stop_reason is None:
            if config.max_trials is not None and trial >= config.max_trials:
                stop_reason = "trials"
                break
            trial_rng = np.random.default_rng(rng.integers(2**63))
            search = _Trial(trial, policy, policy.prepare(X, y, trial_rng), evaluator, config, trial_rng, stats)
            trials.append(search.record)
            fit_now = config.constant_fitting == "all"
            while search.iterations < config.iterations_per_trial:
                stop_reason = budget.exhausted(evaluator.best_r2)
                if stop_reason is not None or search.root.terminal:
                    break
                search.iterate(fit_now)
                n_iterations += 1
                record_history(trial)
                if search.iterations % _PROGRESS_EVERY == 0:
                    progress(trial + 1)
            search.finish()
            record_history(trial)
            trial += 1
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    record_history(len(trials))
    if stop_reason is None:
        stop_reason = budget.exhausted(evaluator.best_r2) or "trials"
    progress(len(trials))
    return SearchResult(archive=archive, best=archive.best(), n_evaluations=budget.evaluations,
                        n_trials=len(trials), n_iterations=n_iterations, elapsed=budget.elapsed,
                        stop_reason=stop_reason, history=history, mutation_stats=dict(stats), trials=trials)


class _Trial:
    """One search tree, from the empty expression."""

    def __init__(self, index: int, policy: Policy, context: Any, evaluator: _Evaluator, config: SearchConfig,
                 rng: np.random.Generator, stats: Counter):
        self.policy = policy
        self.context = context
        self.evaluator = evaluator
        self.config = config
        self.rng = rng
        self.stats = stats
        self.root = _Node(Expression.empty(), None, None, 1.0, -math.inf)
        self.nodes: list[_Node] = [self.root]
        self.keys: set[tuple] = {self.root.expression.key()}
        self.iterations = 0
        self.has_critic = getattr(policy, "has_critic", True)
        self.fit_improvements = config.constant_fitting == "best"
        self.allowed = frozenset(config.operators) if config.operators is not None else None
        self.record = TrialRecord(index=index, iterations=0, evaluations=0.0, best_r2=-math.inf, solved=False)
        self._evaluations_at_start = evaluator.budget.evaluations

    def iterate(self, fit: bool) -> None:
        leaf = self._select()
        children = self._expand(leaf, fit)
        self.iterations += 1
        if not children:
            if not leaf.children or all(c.terminal for c in leaf.children):
                self._mark_terminal(leaf)
            else:  # widening found nothing new: stop widening this node
                leaf.expansions = 8
            return
        self._backpropagate(leaf, [c.value_sum for c in children])

    def _select(self) -> _Node:
        node = self.root
        p_uct = self.config.p_uct
        widening = self.config.progressive_widening
        k = self.config.n_samples
        while node.children:
            if widening > 0 and node.expansions < widening * math.sqrt(node.visits / k) and node.expansions < 8:
                return node  # progressive widening: a much-visited node gets K more proposals
            best, best_score = None, -math.inf
            sqrt_total = math.sqrt(sum(c.visits for c in node.children))
            for c in node.children:
                if c.terminal:
                    continue
                score = c.value_sum / c.visits + p_uct * c.prior * sqrt_total / (1 + c.visits)
                if score > best_score:
                    best, best_score = c, score
            if best is None:  # all children terminal (kept consistent by _mark_terminal)
                return node
            node = best
        return node

    def _expand(self, leaf: _Node, fit: bool) -> list[_Node]:
        proposals = self.policy.propose(self.context, leaf.expression, self.config.n_samples, self.rng)
        self.stats["proposed"] += len(proposals)
        fresh: list[tuple[Expression, Mutation, float, float]] = []
        for p in proposals:
            if self.allowed is not None and not mutation_uses_only(
                    p.mutation.op, p.mutation.operand.symbols if p.mutation.operand is not None else None,
                    self.allowed):
                self.stats["invalid:operator_not_allowed"] += 1
                continue
            try:
                child = apply_mutation(leaf.expression, p.mutation, max_size=self.config.max_size)
            except InvalidMutation as err:
                self.stats[f"invalid:{err.reason}"] += 1
                continue
            key = child.key()
            if key in self.keys:
                self.stats["duplicate"] += 1
                continue
            if self.evaluator.budget.evaluations_left() <= 0:
                break  # the budget ran out mid-expansion: the remaining proposals are not scored
            self.keys.add(key)
            r2 = self.evaluator.score(child, fit, key)
            if self.fit_improvements and child.n_constants and r2 > self.record.best_r2:
                # "best" mode: each new best of the trial gets its constants fitted at once.
                r2 = max(r2, self.evaluator.score(child, fit=True, key=key))
            self.record.best_r2 = max(self.record.best_r2, r2)
            if not math.isfinite(r2):
                self.stats["non_finite"] += 1
                continue
            self.stats["valid"] += 1
            fresh.append((child, p.mutation, p.prior, r2))
        if not fresh:
            return []
        values = self._values(fresh)
        prior_sum = sum(f[2] for f in fresh)
        children = []
        for (expr, mutation, prior, r2), value in zip(fresh, values):
            node = _Node(expr, leaf, mutation, prior / prior_sum if prior_sum > 0 else 1 / len(fresh), r2)
            node.visits, node.value_sum = 1, float(value)
            children.append(node)
        leaf.children.extend(children)
        leaf.expansions += 1
        self.nodes.extend(children)
        return children

    def _values(self, fresh: list[tuple[Expression, Mutation, float, float]]) -> np.ndarray:
        solved = np.array([f[3] >= self.config.solved_r2 for f in fresh])
        values = np.ones(len(fresh))
        todo = np.flatnonzero(~solved)
        if len(todo) and self.has_critic:
            values[todo] = np.asarray(self.policy.value(self.context, [fresh[i][0] for i in todo]), dtype=float)
        elif len(todo):
            values[todo] = np.nan  # no critic: every unsolved node is scored by its accuracy below
        missing = ~np.isfinite(values)
        if missing.any():
            values[missing] = [accuracy_value(fresh[i][3], self.config.solved_r2) for i in np.flatnonzero(missing)]
        return np.clip(values, 0.0, 1.0)

    def _backpropagate(self, leaf: _Node, values: list[float]) -> None:
        total, count = float(sum(values)), len(values)
        decay = self.config.depth_decay
        node: _Node | None = leaf
        while node is not None:
            total *= decay
            node.value_sum += total
            node.visits += count
            node = node.parent

    def _mark_terminal(self, node: _Node) -> None:
        node.terminal = True
        parent = node.parent
        while parent is not None and all(c.terminal for c in parent.children):
            parent.terminal = True
            parent = parent.parent

    def finish(self) -> None:
        """Close the trial: fill its record (and the expert-iteration data when asked for)."""
        record = self.record
        record.iterations = self.iterations
        record.evaluations = self.evaluator.budget.evaluations - self._evaluations_at_start
        solved = [n for n in self.nodes if n.r2 >= self.config.solved_r2]
        record.solved = bool(solved)
        if self.config.record_training_data:
            self._record_training_data(solved)

    def _record_training_data(self, solved: list[_Node]) -> None:
        on_path: set[int] = set()
        for node in solved:
            n: _Node | None = node
            while n is not None and id(n) not in on_path:
                on_path.add(id(n))
                n = n.parent
        if solved:
            self.record.solution_path = _path_to(min(solved, key=lambda n: (n.depth, -n.r2)))
        scored = [n for n in self.nodes if math.isfinite(n.r2)]
        if scored:
            best = max(scored, key=lambda n: (n.r2, -n.depth))
            self.record.best_path, self.record.best_path_r2 = _path_to(best), float(best.r2)
        for n in self.nodes:
            if id(n) in on_path:
                self.record.critic_targets.append((n.expression, 1.0))
            elif n.visits >= self.config.min_visits:
                self.record.critic_targets.append((n.expression, n.value_sum / n.visits))

