"""One search tree (a trial): selection by equation 3, expansion by the policy, back-propagation.

The tree stores the expressions as mutated, not with fitted constants (Section 4.1); the
archive stores the fitted ones. A leaf with no valid new child is terminal, as is a node whose
children all are; a terminal root ends the trial early.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from typing import Any

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import mutation_uses_only
from dgsr.search.config import SearchConfig
from dgsr.search.evaluator import Evaluator
from dgsr.search.mutations import InvalidMutation, Mutation, apply_mutation
from dgsr.search.policy import Policy
from dgsr.search.results import TrialRecord

#: Paths to this many of a trial's most accurate expressions are recorded (TrialRecord.top_paths).
_TOP_PATHS = 8


class Node:
    """A search-tree node: an expression, its statistics, and its children."""

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

    def __init__(self, expression: Expression, parent: Node | None, mutation: Mutation | None,
                 prior: float, r2: float):
        self.expression = expression
        self.parent = parent
        self.mutation = mutation
        self.prior = prior
        self.children: list[Node] = []
        self.expansions = 0
        self.visits = 0
        self.value_sum = 0.0
        self.terminal = False
        self.depth = 0 if parent is None else parent.depth + 1
        self.r2 = r2



def path_to(node: Node) -> list[tuple[Expression, Mutation]]:
    """``(state, mutation)`` pairs from the root (the empty expression) down to ``node``."""
    path = []
    while node.parent is not None:
        path.append((node.parent.expression, node.mutation))
        node = node.parent
    return path[::-1]



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



class Trial:
    """One search tree, from the empty expression or from ``root`` (a user's guess)."""

    def __init__(self, index: int, policy: Policy, context: Any, evaluator: Evaluator, config: SearchConfig,
                 rng: np.random.Generator, stats: Counter, root: Expression | None = None):
        self.policy = policy
        self.context = context
        self.evaluator = evaluator
        self.config = config
        self.rng = rng
        self.stats = stats
        self.root = Node(Expression.empty() if root is None else root, None, None, 1.0, -math.inf)
        self.nodes: list[Node] = [self.root]
        self.keys: set[tuple] = {self.root.expression.key()}
        self.iterations = 0
        self.has_critic = policy.has_critic
        self.fit_improvements = config.constant_fitting == "best"
        self.allowed = frozenset(config.operators) if config.operators is not None else None
        self.rules = config.rules
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

    def _select(self) -> Node:
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

    def _expand(self, leaf: Node, fit: bool) -> list[Node]:
        proposals = self.policy.propose(self.context, leaf.expression, self.config.n_samples, self.rng)
        self.stats["proposed"] += len(proposals)
        fresh: list[tuple[Expression, Mutation, float, float]] = []
        for p in proposals:
            if self.allowed is not None and not mutation_uses_only(
                    p.mutation.op, p.mutation.operand.symbols if p.mutation.operand is not None else None,
                    self.allowed):
                self.stats["invalid:operator_not_allowed"] += 1
                continue
            child = p.child  # built by the policy with the same rules, maybe under a larger size limit
            if child is None or child.size > self.config.max_size:
                try:
                    child = apply_mutation(leaf.expression, p.mutation, max_size=self.config.max_size)
                except InvalidMutation as err:
                    self.stats[f"invalid:{err.reason}"] += 1
                    continue
            if self.rules is not None and self.rules.violation(child) is not None:
                self.stats["invalid:user_rule"] += 1
                continue
            key = child.key()
            if key in self.keys:
                self.stats["duplicate"] += 1
                continue
            if self.evaluator.budget.evaluations_left() <= 0:
                break  # the budget ran out mid-expansion: the remaining proposals are not scored
            self.keys.add(key)
            if fit:
                r2 = self.evaluator.score(child, fit, key)
            else:  # the tree keeps the child with its inner constants fitted, when it has any
                r2, child = self.evaluator.score_child(child, key)
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
            node = Node(expr, leaf, mutation, prior / prior_sum if prior_sum > 0 else 1 / len(fresh), r2)
            node.visits, node.value_sum = 1, float(value)
            children.append(node)
        leaf.children.extend(children)
        leaf.expansions += 1
        self.nodes.extend(children)
        return children

    def _values(self, fresh: list[tuple[Expression, Mutation, float, float]]) -> np.ndarray | list[float]:
        solved_r2 = self.config.solved_r2
        if not self.has_critic:  # each value from the accuracy alone (already in [0, 1]): no arrays
            return [1.0 if f[3] >= solved_r2 else accuracy_value(f[3], solved_r2) for f in fresh]
        solved = np.array([f[3] >= solved_r2 for f in fresh])
        values = np.ones(len(fresh))
        todo = np.flatnonzero(~solved)
        if len(todo):
            values[todo] = np.asarray(self.policy.value(self.context, [fresh[i][0] for i in todo]), dtype=float)
        missing = ~np.isfinite(values)  # a critic that declines an expression: its accuracy instead
        if missing.any():
            values[missing] = [accuracy_value(fresh[i][3], solved_r2) for i in np.flatnonzero(missing)]
        return np.clip(values, 0.0, 1.0)

    def _backpropagate(self, leaf: Node, values: list[float]) -> None:
        total, count = float(sum(values)), len(values)
        decay = self.config.depth_decay
        node: Node | None = leaf
        while node is not None:
            total *= decay
            node.value_sum += total
            node.visits += count
            node = node.parent

    def _mark_terminal(self, node: Node) -> None:
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
        # A policy that learns from its trials (CONTRACTS §5's optional ``learn``) gets the record.
        learns = getattr(self.policy, "learns", False)
        if self.config.record_training_data or learns:
            self._record_training_data(solved)
        if learns:
            self.policy.learn(self.context, record)  # type: ignore[attr-defined]
            if not self.config.record_training_data:  # taken: the search's result does not keep it
                record.solution_path = record.best_path = None
                record.top_paths, record.critic_targets = [], []

    def release(self) -> None:
        """Unlink the finished tree (each node's parent and children), so that reference counting
        frees it when the trial is dropped: a tree is a web of cycles, which otherwise waits for
        the cyclic collector and is scanned by it, with everything the search still holds."""
        for node in self.nodes:
            node.parent = None
            node.children = []
        self.nodes = []

    def _record_training_data(self, solved: list[Node]) -> None:
        on_path: set[int] = set()
        for node in solved:
            n: Node | None = node
            while n is not None and id(n) not in on_path:
                on_path.add(id(n))
                n = n.parent
        if solved:
            self.record.solution_path = path_to(min(solved, key=lambda n: (n.depth, -n.r2)))
        scored = [n for n in self.nodes if math.isfinite(n.r2)]
        if scored:
            best = max(scored, key=lambda n: (n.r2, -n.depth))
            self.record.best_path, self.record.best_path_r2 = path_to(best), float(best.r2)
            top = heapq.nlargest(_TOP_PATHS, scored, key=lambda n: (n.r2, -n.depth))
            self.record.top_paths = [path_to(n) for n in top]
        for n in self.nodes:
            if id(n) in on_path:
                self.record.critic_targets.append((n.expression, 1.0))
            elif n.visits >= self.config.min_visits:
                self.record.critic_targets.append((n.expression, n.value_sum / n.visits))
