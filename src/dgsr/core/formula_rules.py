"""A user's rules on formulas, with PySR's names and meanings: nesting limits, argument sizes,
depth, and the complexity each node adds.

``nested_constraints={"sin": {"sin": 0, "cos": 0}}``: below a ``sin`` node, no path down holds
a ``sin`` or ``cos``; ``{"cos": {"cos": 2}}`` allows ``cos(cos(cos(x)))`` but not a fourth.
``constraints={"div": (-1, 3), "sin": 5}``: a quotient's denominator has complexity at most 3,
a sine's argument at most 5 (-1: no limit). ``maxdepth``: the tree's depth, a leaf being 1.
``complexity_of_operators={"exp": 3}``, ``complexity_of_constants``, ``complexity_of_variables``:
what each node adds to a formula's complexity (1 each by default, so complexity is the node
count). These come on top of the language's own rules (:func:`dgsr.search.mutations.validity_violation`).

A power ``u**c`` is ``exp(c*log(u))`` in the expression language, so the rules see (and weigh)
its ``exp``, ``mul``, constant and ``log`` nodes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dgsr.core.expression import Expression
from dgsr.core.operators import ARITY, CONSTANT, OPERATORS, canonical_operator

#: The estimator parameters (PySR's names) that :func:`formula_rules` reads.
RULE_PARAMETERS = ("nested_constraints", "constraints", "maxdepth", "complexity_of_operators",
                   "complexity_of_constants", "complexity_of_variables")


@dataclass(frozen=True)
class FormulaRules:
    """The rules, in canonical operator names and hashable form (it travels to worker processes).

    ``nested``: (outer, inner, most) triples; ``argument_limits``: (operator, per-argument
    limits, -1 for none); ``operator_complexity``: (operator, weight) pairs for the operators
    whose weight is not 1.
    """

    nested: tuple[tuple[str, str, int], ...] = ()
    argument_limits: tuple[tuple[str, tuple[int, ...]], ...] = ()
    max_depth: int | None = None
    operator_complexity: tuple[tuple[str, float], ...] = ()
    constant_complexity: float = 1.0
    variable_complexity: float = 1.0

    @property
    def weighted(self) -> bool:
        """Whether complexity differs from the node count."""
        return bool(self.operator_complexity) or self.constant_complexity != 1 or self.variable_complexity != 1

    def node_weights(self, symbols: tuple[str, ...]) -> list[float]:
        weights = dict(self.operator_complexity)
        return [self.constant_complexity if s == CONSTANT else
                weights.get(s, 1.0) if s in OPERATORS else self.variable_complexity for s in symbols]

    def complexity(self, expr: Expression) -> int:
        """The formula's complexity: its weighted node count, rounded (at least 1)."""
        if not self.weighted:
            return expr.size
        return max(1, round(sum(self.node_weights(expr.symbols))))

    def violation(self, expr: Expression) -> str | None:
        """None if ``expr`` keeps the rules, else which one it breaks (for messages and counts)."""
        symbols = expr.symbols
        if not symbols:
            return None
        if self.max_depth is not None and _depth(expr) > self.max_depth:
            return f"maxdepth={self.max_depth}"
        for outer, inner, most in self.nested:
            if outer in symbols and inner in symbols and _nesting(expr, outer, inner) > most:
                return f"nested_constraints: {inner} nested in {outer} more than {most} times"
        if self.argument_limits:
            return self._argument_violation(symbols, expr.subtree_ends)
        return None

    def _argument_violation(self, symbols: tuple[str, ...], ends: tuple[int, ...]) -> str | None:
        limits = dict(self.argument_limits)
        weights = self.node_weights(symbols)
        for i, s in enumerate(symbols):
            if s not in limits:
                continue
            start = i + 1
            for k, most in enumerate(limits[s]):
                end = ends[start]
                if most >= 0 and max(1, round(sum(weights[start:end]))) > most:
                    return f"constraints: argument {k + 1} of {s} larger than {most}"
                start = end
        return None


def _depth(expr: Expression) -> int:
    """Nodes on the longest path from the root to a leaf."""
    symbols = expr.symbols
    depth = [1] * len(symbols)
    for i in range(len(symbols) - 1, -1, -1):
        if ARITY.get(symbols[i], 0):
            depth[i] = 1 + max(depth[c] for c in expr.children(i))
    return depth[0]


def _nesting(expr: Expression, outer: str, inner: str) -> int:
    """The most ``inner`` nodes on one path down from (and not counting) an ``outer`` node."""
    symbols = expr.symbols
    below = [0] * len(symbols)  # inner nodes on the best path from node i down, i included
    worst = 0
    for i in range(len(symbols) - 1, -1, -1):
        deepest = max((below[c] for c in expr.children(i)), default=0)
        below[i] = deepest + (symbols[i] == inner)
        if symbols[i] == outer:
            worst = max(worst, deepest)
    return worst


def formula_rules(params: Mapping[str, Any]) -> FormulaRules | None:
    """The rules that the estimator parameters in ``params`` (PySR's names, :data:`RULE_PARAMETERS`)
    set, or None when they set none. Raises ValueError (TypeError for a value that is not a dict
    where one is needed) naming the parameter for anything malformed."""
    rules = FormulaRules(
        nested=_nested(params.get("nested_constraints")),
        argument_limits=_argument_limits(params.get("constraints")),
        max_depth=_max_depth(params.get("maxdepth")),
        operator_complexity=_operator_weights(params.get("complexity_of_operators")),
        constant_complexity=_weight(params.get("complexity_of_constants"), "complexity_of_constants"),
        variable_complexity=_weight(params.get("complexity_of_variables"), "complexity_of_variables"))
    return None if rules == FormulaRules() else rules


def _mapping(value: Any, what: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a dict, got {value!r}")
    return value


def _whole(value: Any, what: str, low: int) -> int:
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or value != int(value) or value < low):
        raise ValueError(f"{what} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _nested(value: Any) -> tuple[tuple[str, str, int], ...]:
    if value is None:
        return ()
    out = []
    for outer, inners in _mapping(value, "nested_constraints").items():
        outer_op = canonical_operator(outer, None, "nested_constraints")
        for inner, most in _mapping(inners, f"nested_constraints (at {outer!r})").items():
            out.append((outer_op, canonical_operator(inner, None, "nested_constraints"),
                        _whole(most, f"nested_constraints (at {outer!r}, {inner!r})", 0)))
    return tuple(sorted(out))


def _argument_limits(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if value is None:
        return ()
    out = []
    for name, limit in _mapping(value, "constraints").items():
        op = canonical_operator(name, None, "constraints")
        what = f"constraints (at {name!r})"
        if OPERATORS[op].arity == 1:
            limits = (limit,) if not isinstance(limit, (tuple, list)) else tuple(limit)
        elif not isinstance(limit, (tuple, list)) or len(limit) != 2:
            raise ValueError(f"{what}: {name!r} is binary, so its limit is a pair (left, right), got {limit!r}")
        else:
            limits = tuple(limit)
        if len(limits) != OPERATORS[op].arity:
            raise ValueError(f"{what}: {name!r} is unary, so its limit is one number, got {limit!r}")
        out.append((op, tuple(_whole(v, what, -1) for v in limits)))
    return tuple(sorted(out))


def _max_depth(value: Any) -> int | None:
    return None if value is None else _whole(value, "maxdepth", 1)


def _weight(value: Any, what: str) -> float:
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a number > 0, got {value!r}")
    return float(value)


def _operator_weights(value: Any) -> tuple[tuple[str, float], ...]:
    if value is None:
        return ()
    out = {}
    for name, weight in _mapping(value, "complexity_of_operators").items():
        out[canonical_operator(name, None, "complexity_of_operators")] = _weight(
            weight, f"complexity_of_operators (at {name!r})")
    return tuple(sorted((k, v) for k, v in out.items() if v != 1.0))
