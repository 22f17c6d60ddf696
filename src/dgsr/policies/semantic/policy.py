"""The semantic policy: mutations aimed at the data in closed form, with no training.

For the expression to expand, the policy computes the *desired values* of its nodes by semantic backpropagation
(:mod:`dgsr.policies.semantic.backprop`), turns them into the values an operand ``B`` should take for each binary
mutation (``A + B = D`` gives ``B = D - A``, ``A * B = D`` gives ``B = D / A``, ...), and scores every operand of a
library (:mod:`dgsr.policies.semantic.operand_library`) against every such target at once with matrix products:
the score is the share of the target's variance a least-squares line ``c*B + d`` leaves unexplained. Unary
mutations are scored the same way on their own values. The best-matching distinct valid mutations are proposed
first, with priors from their match quality; a share of uniformly random proposals keeps exploring. A trial's
first proposals also hold sums of operands chosen jointly (:mod:`dgsr.policies.semantic.additive`).

When the position of ``B`` absorbs a scale (a chain of ``mul``/``div``/``inv``/``sq``/``sqrt`` up to the root,
whose linear scaling the search fits for free; or a top-level sum, whose terms the search reweights) the operand
is proposed as it is; otherwise as ``c*B`` or ``c*B + d`` with the fitted constants, so the inner constants a
law needs arrive with it (the search refines them by Levenberg-Marquardt).

CONTRACTS §5: ``prepare`` (library and scoring rows, once per trial), ``propose``, ``value``
(NaN: nodes are valued by their accuracy, as for the random policy). Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from dgsr.core.evaluate import as_columns, evenly_spaced
from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, OPERATORS, UNARY, resolve_operators, unary_names
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic.additive import best_sums
from dgsr.policies.semantic.backprop import spread
from dgsr.policies.semantic.compiled_backprop import backprop_for, root_targets
from dgsr.policies.semantic.matching import OperandFit, match_operands, top_matches
from dgsr.policies.semantic.operand_library import FitMemo, OperandLibrary, build_library, operand_library
from dgsr.policies.semantic.operand_mutation import absorbs, operand_mutation, round4
from dgsr.policies.semantic.position_rows import KINDS, position_rows
from dgsr.policies.semantic.power_law import (
    log_design,
    positive_variables,
    power_law_operands,
    target_monomials,
)
from dgsr.policies.semantic.relevance import relevance
from dgsr.policies.semantic.single_index import SingleIndex, single_index
from dgsr.policies.semantic.target_chains import ChainMemo, expansion_chains
from dgsr.policies.semantic.target_weights import clean_weights
from dgsr.search.mutations import InvalidMutation, Mutation, apply_mutation
from dgsr.search.policy import Proposal

_ALL_OPERATORS = frozenset(OPERATORS)  # a policy allowed all of them checks no mutation's symbols
_MAX_PENDING = 5000  # expressions whose pending candidates a trial's context remembers
_POWER_LAW_ROWS = 1000  # rows the power-law exponents are fitted on
_CHAIN_VARIABLES = 6  # variables most related to y that the per-expansion chains take
#: Rows the parametric operands' constants are fitted on (the scoring rows are n_rows): on 100 a sine
#: of a shifted product lands in a wrong optimum in 1 draw of 5, on 300 in none of 24 (design_history).
_PARAMETRIC_FIT_ROWS = 300


@dataclass(frozen=True)
class ScoredProposal:
    """A proposal before its prior: the mutation, its match (decades of unexplained variance the
    expression would keep, :meth:`SemanticPolicy._ranked`), the child it makes, and whether it is
    a uniformly random exploration proposal rather than a match."""

    mutation: Mutation
    match: float
    child: Expression
    explore: bool = False


def match_priors(matches: np.ndarray, temperature: float) -> list[float]:
    """``softmax(match / temperature)`` over one expansion's proposals.

    On data too small to rank anything (2 rows: every spread is 0) the matches are not finite:
    such candidates share the prior of the weakest finite one, or all are equal."""
    finite = np.isfinite(matches)
    if not finite.all():
        matches = np.where(finite, matches, matches[finite].min() if finite.any() else 0.0)
    weights = np.exp((matches - matches.max()) / max(temperature, 1e-6))
    return (weights / weights.sum()).tolist()


@dataclass
class SemanticContext:
    """Per-trial state: the scoring rows, the library and a random fallback's context."""

    columns: np.ndarray
    y: np.ndarray
    library: OperandLibrary
    n_features: int
    #: Variables whose log the per-expansion power laws use, and that log design (None: off or none).
    log_variables: list = field(default_factory=list)
    log_design: np.ndarray | None = None
    #: The log variables positive on every row: where a power law may keep a non-half exponent.
    positive_variables: frozenset = frozenset()
    #: Per expanded expression: its ranked candidates not yet proposed, and the children already
    #: proposed. A node expanded again (progressive widening) gets the next-best candidates.
    pending: dict = field(default_factory=dict)
    #: The per-expansion power laws already built (exponents -> operand), their values on
    #: ``columns`` (operand key -> values) and their libraries (operand keys -> library): the
    #: same few recur at every expansion.
    monomials: dict = field(default_factory=dict)
    monomial_values: dict = field(default_factory=dict)
    monomial_libraries: dict = field(default_factory=dict)
    #: The variables the per-expansion chains take (the most related to ``y``; empty: off), and
    #: the chains fitted per (variable, target) (:func:`~dgsr.policies.semantic.target_chains.expansion_chains`).
    chain_variables: list = field(default_factory=list)
    target_chains: ChainMemo = field(default_factory=ChainMemo)


class SemanticPolicy:
    """Data-aware mutations by semantic backpropagation and library matching (no training).

    Parameters
    ----------
    n_rows:
        Rows (a random subset drawn per trial) on which desired values and operands are compared.
    random_share:
        Share of each expansion's proposals drawn by the uniform random policy (exploration).
    max_nodes:
        Nodes of the expression considered per expansion (the root always, the rest sampled).
    size_penalty:
        Subtracted from a candidate's match per node of its operand (parsimony among near-equal
        matches; the match is in decades of unexplained variance).
    temperature:
        Priors are ``softmax(match / temperature)`` with ``match = -log10(unexplained share)``.
    max_size: node limit proposals respect.
    operators:
        Table 1 operators the proposals may use, in mutations and operands (default: all); the
        estimator passes its ``operators`` / ``unary_operators`` / ``binary_operators`` here.
    parametric_operands:
        Add operands with constants inside a nonlinear part (``sin(c*u + d)``, ``inv(u + c)``) to
        the library, fitted to ``y`` (:func:`~dgsr.policies.semantic.operand_library.build_library`).
    additive_roots:
        Also propose, as a trial's first mutation, sums of operands that explain ``y`` together
        (:func:`~dgsr.policies.semantic.additive.best_sums`).
    power_laws:
        Add the monomials read off a log-space regression of ``y`` on the variables to the
        library (:func:`~dgsr.policies.semantic.power_law.power_law_operands`).
    inner_chains:
        Chains ``op(a*x + b)`` of one or two unary operators (:mod:`~dgsr.policies.semantic.parametric_forms`)
        kept in the library, those that explain ``y`` best (0: none).
    free_exponents:
        Power laws keep exponents that are no half-integer as fitted (``x**0.65``), where the data
        are a product of powers; off, they are rounded to halves or left out.
    chain_pairs:
        With ``inner_chains``, also the terms of sums of two chains of one shape fitted together
        (:func:`~dgsr.policies.semantic.parametric_forms.chain_pair`: two exponentials, sines, ...).
        Off: no gain at equal time on the confirm halves (docs/decisions/2026-11-28-chain-pairs.md).
    pair_operands:
        With ``parametric_operands``, also the two-variable forms (``sin(c*u + d)``, ``sq(u - c)``,
        ``inv(u + c)`` of a pair's product or sum, the sine of a shifted product) and the bumps
        over 3-5 variables (docs/DESIGN.md, "General mechanisms, not templates").
    unit_chains:
        In a fit with units, chains also over the dimensionless groups of the variables
        (``h*omega/(kb*T)``: :func:`dgsr.core.units.dimensionless_groups`), set by the estimator.
    ratio_chains:
        Without units or a single index, chains also over ratios and products of the variables most
        related to ``y``. Off: no gain at equal time on the confirm halves (docs/decisions/2026-11-29-ratio-chains.md).
    index_chains:
        Chains also over the monomial that ``y`` is a curve of, times a product of powers
        (:mod:`~dgsr.policies.semantic.single_index`): ``exp(-m*g*x/(kb*T))`` without units (with
        units, the dimensionless groups take their place). On: it wins on the confirm halves
        (docs/decisions/2026-11-30-single-index-chains.md).
    index_prefactors:
        With ``index_chains``, also the chains over the index fitted to ``y`` over the power law
        beside it, times it: ``hbar*omega**3/(exp(hbar*omega/(kb*T)) - 1)``
        (docs/decisions/2026-11-30-index-prefactors.md).
    rational_operands:
        With ``parametric_operands``, also the ratios of small polynomials that explain ``y``
        best (:mod:`~dgsr.policies.semantic.rational_forms`): ``V*s/(K + s + s**2/Ki)``.
    power_chains:
        Also a power of an argument times a chain over it (:mod:`~dgsr.policies.semantic.power_chains`).
    linearized_operands, linearized_ratios, linearized_factors:
        Also powers of sums of products, ratios of such sums, and such forms times ``y``'s power
        factors, that fit ``y`` (:mod:`~dgsr.policies.semantic.linearized_forms`).
    target_chains:
        Chains fitted per expansion to a node's target where it is a function of one variable
        (:mod:`~dgsr.policies.semantic.target_chains`). Off: no gain on the develop halves, and a
        quarter fewer evaluations per second (docs/decisions/2026-11-29-target-chains.md).
    """

    has_critic = False
    max_variables = None
    #: A fold search's: the search on all rows' parametric operands, refitted instead of screened.
    seeded_operands: tuple[Expression, ...] | None = None
    #: The dimensionless groups of a fit with units (the estimator sets them when ``unit_chains``).
    unit_groups: tuple[Expression, ...] = ()

    def __init__(self, n_rows: int = 100, random_share: float = 0.25, max_nodes: int = 6,
                 temperature: float = 1.0, max_size: int = 60, operators: Iterable[str] | None = None,
                 size_penalty: float = 0.03, parametric_operands: bool = True, additive_roots: bool = True,
                 power_laws: bool = True, inner_chains: int = 4, free_exponents: bool = True,
                 pair_operands: bool = True, chain_pairs: bool = False, unit_chains: bool = True,
                 ratio_chains: bool = False, target_chains: bool = False, index_chains: bool = True,
                 index_prefactors: bool = True, rational_operands: bool = True, power_chains: bool = True,
                 linearized_operands: bool = True, linearized_ratios: bool = True, linearized_factors: bool = True):
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must be in [0, 1], got {random_share}")
        self.n_rows, self.random_share, self.max_nodes = n_rows, random_share, max_nodes
        self.temperature, self.size_penalty = temperature, size_penalty
        self.parametric_operands, self.additive_roots, self.power_laws = parametric_operands, additive_roots, power_laws
        self.inner_chains, self.chain_pairs, self.free_exponents = inner_chains, chain_pairs, free_exponents
        self.pair_operands, self.unit_chains, self.ratio_chains = pair_operands, unit_chains, ratio_chains
        self.target_chains, self.index_chains, self.index_prefactors = target_chains, index_chains, index_prefactors
        self.rational_operands, self.power_chains = rational_operands, power_chains
        self.linearized_operands, self.linearized_ratios = linearized_operands, linearized_ratios
        self.linearized_factors, self.max_size = linearized_factors, max_size
        allowed = resolve_operators(list(operators)) if operators is not None else None
        self.operators = frozenset(allowed) if allowed is not None else frozenset(UNARY + BINARY)
        self._random = RandomPolicy(max_size=max_size, operators=allowed)

    # ------------------------------------------------------------------ seam
    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> SemanticContext:
        """Draw the scoring rows and build the operand library on them."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = len(y)
        rows = np.sort(rng.choice(n, size=self.n_rows, replace=False)) if n > self.n_rows else np.arange(n)
        columns = as_columns(X[rows])
        y_rows = y[rows]
        power_laws = getattr(self, "power_laws", False)  # policies pickled before 0.6 lack the attribute
        # The single index feeds the chains alone, and with units the dimensionless groups are
        # the arguments the units allow (policies pickled before 0.26.0 lack the attribute).
        index = (getattr(self, "index_chains", False) and self.parametric_operands
                 and getattr(self, "inner_chains", 0) > 0 and not self.unit_groups)
        monomials: list[Expression] = []
        arguments, prefactors = tuple(self.unit_groups), ()
        if power_laws or index:
            # Up to 1,000 evenly spaced rows (more than the scoring rows: a factor that is not a
            # power is noise in log space), without drawing from rng.
            spread = evenly_spaced(n, _POWER_LAW_ROWS)
            wide_columns, wide_y = as_columns(X[spread]), y[spread]
            if power_laws:
                monomials = power_law_operands(wide_columns, wide_y, free=getattr(self, "free_exponents", False))
            if index:
                found = self._single_index(wide_columns, wide_y)
                arguments = found.monomials
                # Policies pickled before 0.27.0 lack the attribute.
                prefactors = found.prefactors if getattr(self, "index_prefactors", False) else ()
        fit_rows = None
        if self.parametric_operands and n > self.n_rows:
            # The parametric constants are fitted on more rows than the scoring ones, evenly
            # spaced (no draw from rng), the scoring rows' values read off the fitted forms.
            spread = evenly_spaced(n, _PARAMETRIC_FIT_ROWS)
            fit_rows = (as_columns(X[spread]), y[spread])
        library = build_library(columns, y_rows, allowed=self.operators, fit_parametric=self.parametric_operands,
                                extra_operands=monomials, fit_rows=fit_rows, fit_memo=self._fit_memo(),
                                max_chains=getattr(self, "inner_chains", 0), pair_forms=getattr(self, "pair_operands", True),
                                chain_pairs=getattr(self, "chain_pairs", False), seeded=self.seeded_operands,
                                chain_arguments=arguments, ratio_chains=getattr(self, "ratio_chains", False),
                                chain_prefactors=prefactors,
                                rational=getattr(self, "rational_operands", False),  # False: pickled before 0.27.0
                                power_chains=getattr(self, "power_chains", False),  # False: pickled before 0.28.0
                                linearized=getattr(self, "linearized_operands", False),  # False: pickled before 0.30.0 (ratios: 0.31.0, factors: 0.32.0)
                                linearized_ratios=getattr(self, "linearized_ratios", False), linearized_factors=getattr(self, "linearized_factors", False))
        log_variables, design = log_design(columns) if power_laws else ([], None)
        positive = positive_variables(columns, log_variables) if getattr(self, "free_exponents", False) \
            else frozenset()
        chain_variables = []
        if getattr(self, "target_chains", False):  # policies pickled before 0.21.0 lack the attribute
            chain_variables = [int(i) for i in np.argsort(-relevance(columns, y_rows), kind="stable")[:_CHAIN_VARIABLES]]
        return SemanticContext(columns, y_rows, library, X.shape[1], log_variables, design,
                               positive_variables=positive, chain_variables=chain_variables)

    def _single_index(self, columns: np.ndarray, y: np.ndarray) -> SingleIndex:
        """The single index of these rows and the power laws beside it, found once per search
        (memoised across trials, :func:`~dgsr.policies.semantic.single_index.single_index`)."""
        memo = self._fit_memo("_index_fits").for_rows(columns, y)
        if "index" not in memo.fits:
            memo.fits["index"] = single_index(columns, y) or SingleIndex(())
        return memo.fits["index"]

    def _fit_memo(self, name: str = "_parametric_fits") -> FitMemo:
        """The parametric fits (or, by ``name``, the single-index monomials) kept across this
        policy's trials (:class:`FitMemo`: the same operands with or without it, computed once
        per set of fit rows)."""
        memo = self.__dict__.get(name)
        if memo is None:
            memo = self.__dict__[name] = FitMemo()
        return memo

    def __getstate__(self) -> dict:
        # The memo is a cache of one dataset's fits: a pickled policy does not carry it.
        return {k: v for k, v in self.__dict__.items() if k not in ("_parametric_fits", "_index_fits")}

    def propose(self, context: SemanticContext, expression: Expression, k: int,
                rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` distinct valid mutations of ``expression``, best-matching first."""
        found = self.scored_proposals(context, expression, k, rng)
        if not found:
            return []
        priors = match_priors(np.array([c.match for c in found]), self.temperature)
        return [Proposal(c.mutation, p, c.child) for c, p in zip(found, priors)]

    def scored_proposals(self, context: SemanticContext, expression: Expression, k: int,
                         rng: np.random.Generator) -> list[ScoredProposal]:
        """The proposals of :meth:`propose` before their priors: each with its match (random
        exploration at the weakest match less half a decade) and where it came from."""
        n_random = round(k * self.random_share)
        key = expression.key()
        if key not in context.pending:
            if len(context.pending) >= _MAX_PENDING:
                context.pending.clear()
            context.pending[key] = (self._ranked(context, expression, rng), set())
        ranked, proposed = context.pending[key]
        found: dict[tuple, ScoredProposal] = {}
        while ranked and len(found) < k - n_random:
            match, build = ranked.pop()
            mutation = build()
            if mutation is not None:
                self._add(found, expression, mutation, match, proposed)
        # Exploration: uniform random proposals fill the rest (at a prior of the weakest match).
        floor = min((c.match for c in found.values()), default=0.0)
        for p in self._random.propose(context.n_features, expression, k - len(found) + 2, rng):
            if len(found) >= k:
                break
            self._add(found, expression, p.mutation, floor - 0.5, proposed, p.child, explore=True)
        return list(found.values())

    def value(self, context: SemanticContext, expressions: Sequence[Expression]) -> np.ndarray:
        """No critic: NaN for every expression (the search values nodes by their accuracy)."""
        return np.full(len(expressions), np.nan)

    # ------------------------------------------------------------------ internals
    def _add(self, found: dict, expression: Expression, mutation: Mutation, match: float,
             proposed: set, child: Expression | None = None, explore: bool = False) -> None:
        """Keep ``mutation`` (and its child: ``child`` when the caller built it already) unless it
        is disallowed, invalid or a duplicate of one proposed for this expression before."""
        if not self._allowed(mutation):
            return
        if child is None:
            try:
                child = apply_mutation(expression, mutation, max_size=self.max_size)
            except InvalidMutation:
                return
        key = child.key()
        if key not in found and key not in proposed:
            found[key] = ScoredProposal(mutation, match, child, explore)
            proposed.add(key)

    def _allowed(self, mutation: Mutation) -> bool:
        """Whether the mutation uses only allowed operators (its own and its operand's)."""
        if self.operators >= _ALL_OPERATORS:  # the default: no need to look at the symbols
            return True
        if mutation.op != "root" and mutation.op.removeprefix("r") not in self.operators:
            return False
        operand = mutation.operand
        return operand is None or all(s in self.operators for s in operand.symbols if s in OPERATORS)

    def _ranked(self, context: SemanticContext, expression: Expression,
                rng: np.random.Generator) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """Candidate mutations, best *last* (popped from the end): ``(match, build)`` where
        ``build()`` makes the mutation (or None); building is deferred because most candidates are
        never needed.

        Every candidate is scored by a first-order estimate of the share of the root target's
        variance the whole expression would leave unexplained after it: the error at the node,
        ``D - new value``, is weighted by the squared derivative of the root with respect to the
        node (and, for a binary mutation, of the node with respect to ``B``), so candidates at
        different nodes and of different kinds compare on one scale.
        """
        lib = context.library
        if expression.is_empty:
            return self._root_candidates(context)

        backprop = backprop_for(expression, context.columns)
        values, parent = backprop.values, backprop.parent
        roots, spreads = root_targets(context.y, values[0])  # indexed by intercept: [False], [True]
        positions = self._positions(expression, rng)
        paths = [absorbs(expression, parent, pos) for pos in positions]
        unary_ops = [op for op in unary_names() if op in self.operators]
        # roots/spreads indexed by flag = not scale_path: through a chain of products up to the
        # root, y's offset cannot be produced below, so aim at y ~ a*f there (an offset would
        # leak into every quotient of the chain).
        rows = position_rows(backprop, roots, spreads, positions,
                             [p[0] for p in paths], [p[1] for p in paths], unary_ops)
        picks: list[tuple[int, int]] = []  # (position index, kind index) of each binary target
        denominators: list[float] = []
        meta: list[tuple[int, str, bool, bool]] = []  # position, kind, scale absorbed, offset absorbed
        ranked: list[tuple[float, Callable[[], Mutation | None]]] = []
        for i, pos in enumerate(positions):
            if not rows.usable[i]:
                continue
            scale_path, additive_path = paths[i]
            ranked.extend((match, partial(Mutation, pos, op))
                          for op, match in zip(unary_ops, rows.unary[i].tolist()) if math.isfinite(match))
            for k, kind in enumerate(KINDS):
                if (kind == "rsub" and additive_path) or kind.removeprefix("r") not in self.operators:
                    continue
                picks.append((i, k))
                denominators.append(spreads[not scale_path])
                if kind in ("add", "rsub"):  # A + c*B is no rescaling of A + B: only separate terms absorb c
                    meta.append((pos, kind, additive_path, additive_path))
                else:  # A * (c*B) is a rescaling of A * B
                    meta.append((pos, kind, scale_path or additive_path, False))
        if picks:
            at_position, at_kind = np.array(picks).T
            targets = rows.targets[at_position, at_kind]
            weights = clean_weights(rows.weights[at_position, at_kind], targets)
            fit = match_operands(targets, weights, lib, np.array(denominators)[:, None])
            ranked.extend(self._operand_candidates(fit, lib, meta))
            # Products of powers fitted to each target in log space: operands no fixed library holds.
            found = target_monomials(context.log_variables, context.log_design, targets, weights > 0,
                                     context.monomials, context.positive_variables)
            # And chains fitted to the targets that are a function of one variable.
            chains = []
            if context.chain_variables:  # the option is on (built only then: this is the hot path)
                factor = np.array([m[1] in ("mul", "div", "rdiv") for m in meta])
                chains = expansion_chains(context.columns, targets, weights, factor, context.chain_variables,
                                          self.operators, context.target_chains)
            for dynamic in (self._monomial_library(context, [e for e in found if e is not None]),
                            operand_library(chains, context.columns) if chains else None):
                if dynamic is not None:
                    dynamic_fit = match_operands(targets, weights, dynamic, np.array(denominators)[:, None])
                    ranked.extend(self._operand_candidates(dynamic_fit, dynamic, meta))
            ranked.extend(self._constants(fit, meta))
        ranked.sort(key=lambda r: r[0])
        return ranked

    @staticmethod
    def _monomial_library(context: SemanticContext, found: list[Expression]) -> OperandLibrary | None:
        """:func:`operand_library` of an expansion's power laws, kept per trial by their keys."""
        key = tuple(e.key() for e in found)
        memo = context.monomial_libraries
        if key not in memo:
            if len(memo) >= _MAX_PENDING:
                memo.clear()
            memo[key] = operand_library(found, context.columns, context.monomial_values)
        return memo[key]

    def _operand_candidates(self, fit: OperandFit, lib: OperandLibrary, meta: list[tuple[int, str, bool, bool]]
                            ) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """The best binary mutations ``<node, kind, B>`` for ``lib``'s operands ``B`` from their fits
        to the targets (``meta`` says each target's node and kind)."""
        # Parsimony: between operands that match about as well, the smaller first (a factor
        # c*B costs 2 nodes more where nothing absorbs it).
        extra = np.array([0.0 if m[2] else 2.0 for m in meta])
        order, values = top_matches(fit.match, lib.sizes, extra, self.size_penalty,
                                    min(fit.match.size, 6 * self.max_nodes))
        seen: set[tuple[int, float]] = set()
        picked, picked_values = [], []
        for f, value in zip(order.tolist(), values.tolist()):
            t, j = divmod(f, len(lib))
            # The same operand matching equally well at several nodes (x0*x1*B at either
            # factor) gives equivalent children: propose it once.
            twin = (j, round(value, 6))
            if twin in seen:
                continue
            seen.add(twin)
            picked.append((t, j))
            picked_values.append(value)
        if not picked:
            return []
        ts, js = np.array(picked).T
        return [(value, partial(operand_mutation, meta[t], lib.expressions[j], sums))
                for (t, j), value, sums in zip(picked, picked_values, fit.at_many(ts, js))]

    def _root_candidates(self, context: SemanticContext) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """The first mutation of a trial: the library operands that best explain y, best last."""
        lib = context.library
        targets = context.y[None, :]
        match = match_operands(targets, np.ones_like(targets), lib, spread(context.y)).match
        match = match - self.size_penalty * lib.sizes[None, :]
        order = np.argsort(-match[0], kind="stable")
        ranked = [(float(match[0, j]), partial(Mutation, 0, "root", lib.expressions[j]))
                  for j in order[: 4 * self.max_nodes]]
        if self.additive_roots:
            alone = match[0] + self.size_penalty * lib.sizes
            ranked.extend((m, partial(Mutation, 0, "root", e))
                          for m, e in best_sums(lib, context.y, alone, self.size_penalty, self.max_size))
        ranked.sort(key=lambda r: r[0])
        return ranked

    def _constants(self, fit: OperandFit, meta: list[tuple[int, str, bool, bool]]
                   ) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """A constant operand ``B = c`` where nothing absorbs it (``A + c`` inside a function,
        ``A * c`` inside a sum of a function): ``c`` is the weighted mean of the target."""
        out = []
        with np.errstate(all="ignore"):
            match = -np.log10(np.clip(fit.var_y[:, 0] / fit.denominator[:, 0], 1e-12, 1.0))
            value = fit.sy[:, 0] / fit.n[:, 0]
        usable = (np.isfinite(match) & np.isfinite(value) & (value != 0)).tolist()  # one pass, not one per target
        for (pos, kind, scale_ok, offset_ok), ok, m, v in zip(meta, usable, match.tolist(), value.tolist()):
            useless = offset_ok if kind in ("add", "rsub") else scale_ok
            if useless or not ok:
                continue
            out.append((m, partial(Mutation, pos, kind, Expression.constant(round4(v)))))
        return out

    def _positions(self, expression: Expression, rng: np.random.Generator) -> list[int]:
        if expression.size <= self.max_nodes:
            return list(range(expression.size))
        # Drawn from range(size - 1) and shifted: the same draws as from arange(1, size), without the array.
        rest = rng.choice(expression.size - 1, size=self.max_nodes - 1, replace=False)
        return [0, *sorted(int(p) + 1 for p in rest)]
