"""Mutations ``<node, operator, B>`` (Table 1 of the paper) and the validity rules.

A mutation names a node by its prefix position (0-based, CONTRACTS §1) and replaces the
subtree ``A`` rooted there:

* unary ``op``:          ``A -> op(A)``
* binary ``op``:         ``A -> A op B``      (``add sub mul div``)
* reversed binary ``rop``: ``A -> B op A``    (``radd rsub rmul rdiv``)
* ``root``:              ``0 -> B`` on the empty expression only.

Mutations only ever grow an expression. Validity (CONTRACTS §1): at most ``max_size`` nodes,
and no transcendental operator (sin, cos, tan, exp, log) anywhere below another one, with one
exception: a *power* ``exp(c*log(u))`` (``u**c`` for a constant ``c``, prefix ``exp mul c log``)
counts as one non-transcendental node, like ``sqrt`` or ``sq``. Table 1 has no general power, and
a law's non-integer exponent (``x**0.65``) has no other exact form; SymPy shows it as ``u**c``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dgsr.core.expression import Expression
from dgsr.core.operators import ARITY, BINARY, CONSTANT, TRANSCENDENTAL, UNARY

MAX_SIZE = 60
REVERSED_BINARY: tuple[str, ...] = tuple("r" + b for b in BINARY)
#: Every mutation operator, in a fixed order (the token order of the policy's vocabulary).
MUTATION_OPERATORS: tuple[str, ...] = ("root",) + UNARY + BINARY + REVERSED_BINARY
# The same names as a set for the hot path's membership test.
_MUTATION_OPERATOR_SET = frozenset(MUTATION_OPERATORS)
_IS_TRANSCENDENTAL = TRANSCENDENTAL.__contains__


@dataclass(frozen=True)
class Mutation:
    """``<node, op, operand>``; ``operand`` is ``B`` for binary and root mutations, else None."""

    node: int
    op: str
    operand: Expression | None = None

    @property
    def needs_operand(self) -> bool:
        return self.op == "root" or ARITY.get(self.op) == 2 or self.op in REVERSED_BINARY

    @property
    def size(self) -> int:
        """Mutation size as the paper defines it: the size of ``B`` (0 for unary mutations)."""
        return self.operand.size if self.operand is not None else 0

    def __str__(self) -> str:
        b = f", {self.operand}" if self.operand is not None else ""
        return f"<{self.node}, {self.op}{b}>"


class InvalidMutation(ValueError):
    """A mutation that cannot be applied, or whose result breaks a validity rule.

    ``reason`` is a short stable code, used to count rejections by kind. ``detail`` (often the
    mutation itself) is formatted only when the message is read: the search rejects thousands of
    proposals and never prints them.
    """

    def __init__(self, reason: str, detail: object = ""):
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail

    def __str__(self) -> str:
        detail = str(self.detail)
        return f"{self.reason}: {detail}" if detail else self.reason


def apply_mutation(expr: Expression, mutation: Mutation, *, max_size: int = MAX_SIZE) -> Expression:
    """Apply ``mutation`` to ``expr`` and check the result; raises :class:`InvalidMutation`."""
    op, node, operand = mutation.op, mutation.node, mutation.operand
    if op not in _MUTATION_OPERATOR_SET and op not in ARITY:  # ARITY: user-defined operators too
        raise InvalidMutation("unknown_operator", op)
    unary = ARITY.get(op) == 1
    if not unary:  # root, binary and reversed binary mutations take an operand
        if operand is None or operand.is_empty:
            raise InvalidMutation("missing_operand", mutation)
    elif operand is not None:
        raise InvalidMutation("unexpected_operand", mutation)

    if op == "root":
        if not expr.is_empty:
            raise InvalidMutation("root_on_nonempty", "0 -> B applies to the empty expression only")
        if node != 0:
            raise InvalidMutation("node_out_of_range", f"node {node} on the empty expression")
        result = operand
    else:
        symbols = expr.symbols
        if not symbols:
            raise InvalidMutation("node_out_of_range", f"{op} on the empty expression")
        if not 0 <= node < len(symbols):
            raise InvalidMutation("node_out_of_range", f"node {node} of {len(symbols)}")
        if len(symbols) + 1 + (0 if unary else operand.size) > max_size:
            raise InvalidMutation("too_large", mutation)  # the first rule checked: skip building it
        # A becomes op(A), A op B or B op A, its tuples joined directly (``combine`` would
        # check each part again: this runs for every proposal of every expansion).
        a = expr.subtree(node)
        if unary:
            new = Expression._trusted((op, *a.symbols), a.constants)
        elif ARITY.get(op) == 2:
            new = Expression._trusted((op, *a.symbols, *operand.symbols), a.constants + operand.constants)
        else:
            new = Expression._trusted((op[1:], *operand.symbols, *a.symbols), operand.constants + a.constants)
        result = expr.replace_subtree(node, new)
    reason = validity_violation(result, max_size=max_size)
    if reason is not None:
        raise InvalidMutation(reason, mutation)
    return result


def validity_violation(expr: Expression, *, max_size: int = MAX_SIZE) -> str | None:
    """``None`` if ``expr`` obeys the rules, else the reason code (``too_large``, ``nested_transcendental``)."""
    symbols = expr.symbols
    if len(symbols) > max_size:
        return "too_large"
    if sum(map(_IS_TRANSCENDENTAL, symbols)) < 2:  # nesting takes two (a count in C, no Python loop)
        return None
    # One forward scan: ``open`` counts the subtrees still to be read below the outermost
    # transcendental node met (0: outside any), so a transcendental met while it is positive is
    # nested. A candidate check, on every child the search builds: no per-node slices.
    arity, transcendental = ARITY.get, TRANSCENDENTAL
    powers = _power_logs(symbols)
    open_ = 0
    for i, s in enumerate(symbols):
        if s in transcendental and i not in powers:
            if open_:
                return "nested_transcendental"
            open_ = 1  # its operand's subtree
            continue
        if open_:
            open_ += arity(s, 0) - 1
    return None


_POWER = ("exp", "mul", CONSTANT, "log")


def _power_logs(symbols: tuple[str, ...]) -> frozenset[int]:
    """Positions of the ``exp`` and ``log`` of every power ``exp(c*log(u))`` in ``symbols``: the
    nesting rule reads each such pair as one non-transcendental power node."""
    if "log" not in symbols or "exp" not in symbols:
        return frozenset()
    out: set[int] = set()
    for i in range(len(symbols) - 3):
        if symbols[i:i + 4] == _POWER:
            out.update((i, i + 3))
    return frozenset(out)


def is_power_at(symbols: tuple[str, ...], i: int) -> bool:
    """Whether ``symbols[i]`` starts a power ``exp(c*log(u))`` (see :func:`validity_violation`)."""
    return symbols[i:i + 4] == _POWER


def is_valid(expr: Expression, *, max_size: int = MAX_SIZE) -> bool:
    return validity_violation(expr, max_size=max_size) is None
