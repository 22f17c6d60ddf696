"""The uniform baseline policy: random node, random operator, small random operand ``B``.

It has no critic: :meth:`RandomPolicy.value` returns NaN, and the search then values a node
by its own accuracy (:mod:`dgsr.search.mcts`). It proposes only valid, distinct mutations, so its
expansions never waste an evaluation on a rejected mutation.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import ARITY, BINARY, UNARY, binary_names, resolve_operators, unary_names
from dgsr.search.mutations import REVERSED_BINARY, InvalidMutation, Mutation, apply_mutation
from dgsr.search.policy import Proposal

# Simple constants are common in laws (2, 1/2, pi...); the rest come from N(0, 1) and are
# fitted by the search when constant fitting is on.
_SIMPLE_CONSTANTS = np.array([1.0, 2.0, 3.0, 0.5, -1.0, np.pi])


class RandomPolicy:
    """Uniform mutations; operands are a variable, a constant, or a small combination of both.

    Parameters
    ----------
    max_operand_size:
        Largest operand ``B`` it draws (1 to 3 nodes by default).
    max_attempts:
        Draws per requested mutation before giving up on finding ``k`` valid distinct ones.
    max_size:
        Node limit its proposals respect.
    operators:
        The Table 1 operators it may use, in mutations and operands (None: all); the estimator
        passes its ``operators`` / ``unary_operators`` / ``binary_operators`` here.
    """

    has_critic = False
    max_variables = None

    def __init__(self, max_operand_size: int = 3, max_attempts: int = 4, max_size: int = 60,
                 operators: Collection[str] | None = None):
        self.max_operand_size = max_operand_size
        self.max_attempts = max_attempts
        self.max_size = max_size
        allowed = resolve_operators(list(operators)) if operators is not None else None
        self.operators = allowed
        # Without a list, Table 1; with one, the operators it names (user-defined ones included).
        self._unary = UNARY if allowed is None else tuple(o for o in unary_names() if o in allowed)
        self._binary = BINARY if allowed is None else tuple(o for o in binary_names() if o in allowed)
        self._growth = self._unary + self._binary + tuple(r for r in REVERSED_BINARY if r[1:] in self._binary)

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> int:
        """The context is just the number of features."""
        return int(np.shape(X)[1])

    def propose(self, context: int, expression: Expression, k: int, rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` distinct valid mutations of ``expression``, each with prior 1/n."""
        n_features = context
        found: dict[tuple, tuple[Mutation, Expression]] = {}
        for _ in range(self.max_attempts * k):
            if len(found) >= k:
                break
            mutation = self._draw(expression, n_features, rng)
            try:
                child = apply_mutation(expression, mutation, max_size=self.max_size)
            except InvalidMutation:
                continue
            found.setdefault(child.key(), (mutation, child))
        if not found:
            return []
        prior = 1.0 / len(found)
        return [Proposal(m, prior, child) for m, child in found.values()]

    def value(self, context: int, expressions: Sequence[Expression]) -> np.ndarray:
        """No critic: NaN for every expression."""
        return np.full(len(expressions), np.nan)

    def _draw(self, expression: Expression, n_features: int, rng: np.random.Generator) -> Mutation:
        if expression.is_empty:
            return Mutation(0, "root", self.random_operand(n_features, rng))
        # Wrapping the whole expression is the commonest useful growth step; a third of the
        # draws take the root, the rest a uniform node.
        node = 0 if rng.random() < 1 / 3 else int(rng.integers(expression.size))
        op = self._growth[int(rng.integers(len(self._growth)))]
        if ARITY.get(op) == 1:
            return Mutation(node, op)
        return Mutation(node, op, self.random_operand(n_features, rng))

    def random_operand(self, n_features: int, rng: np.random.Generator) -> Expression:
        """A variable (most often), a constant, or a 2- to 3-node combination of them."""
        choices = [s for s in (1, 1, 1, 2, 3) if s <= max(self.max_operand_size, 1)
                   and (s != 2 or self._unary) and (s != 3 or self._binary)]
        size = choices[int(rng.integers(len(choices)))]
        if size == 1:
            return self._leaf(n_features, rng, constant_share=0.3)
        if size == 2:
            return Expression.combine(self._unary[int(rng.integers(len(self._unary)))],
                                      self._leaf(n_features, rng, 0.0))
        op = self._binary[int(rng.integers(len(self._binary)))]
        return Expression.combine(op, self._leaf(n_features, rng, 0.0), self._leaf(n_features, rng, 0.5))

    @staticmethod
    def _leaf(n_features: int, rng: np.random.Generator, constant_share: float) -> Expression:
        if rng.random() < constant_share or n_features == 0:
            if rng.random() < 0.5:
                return Expression.constant(float(_SIMPLE_CONSTANTS[int(rng.integers(len(_SIMPLE_CONSTANTS)))]))
            return Expression.constant(float(rng.normal()))
        return Expression.variable(int(rng.integers(n_features)))
