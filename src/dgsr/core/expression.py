"""Expressions as flat prefix-order tuples.

An :class:`Expression` is immutable: a tuple of prefix symbols (operator names from
:mod:`dgsr.core.operators`, variables ``x0..x9`` and the constant placeholder ``"c"``) plus the
vector of constant values in order of appearance. A subtree is a contiguous slice of the prefix
sequence, so mutations are index arithmetic on subtree spans (as Operon caches subtree lengths)
and the tuple is a free hash key for caches and MCTS transpositions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import sympy

from dgsr.core.names import quote
from dgsr.core.operators import (
    ARITY,
    CONSTANT,
    OPERATORS,
    arity,
    is_variable,
    variable_index,
    variable_symbol,
)


class MalformedExpression(ValueError):
    """Raised when a prefix sequence is not a single well-formed tree."""


@dataclass(frozen=True)
class Expression:
    """An expression in prefix order.

    Attributes
    ----------
    symbols:
        Prefix sequence, e.g. ``("add", "mul", "c", "x0", "c")`` for ``c0*x0 + c1``.
    constants:
        Values of the ``"c"`` placeholders, in prefix order.
    """

    symbols: tuple[str, ...] = ()
    constants: tuple[float, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.symbols, tuple):
            object.__setattr__(self, "symbols", tuple(self.symbols))
        if not isinstance(self.constants, tuple) or any(type(c) is not float for c in self.constants):
            object.__setattr__(self, "constants", tuple(float(c) for c in self.constants))
        n_const = sum(1 for s in self.symbols if s == CONSTANT)
        if n_const != len(self.constants):
            raise MalformedExpression(f"{n_const} constant slots but {len(self.constants)} values")
        if self.symbols:
            need = 1
            children = ARITY.get
            for i, s in enumerate(self.symbols):
                if need == 0:
                    raise MalformedExpression(f"trailing symbols after position {i}: {self.symbols}")
                if s not in OPERATORS and s != CONSTANT and not is_variable(s):
                    raise MalformedExpression(f"unknown symbol {s!r}")
                need += children(s, 0) - 1
            if need != 0:
                raise MalformedExpression(f"incomplete prefix sequence {self.symbols}")

    # ------------------------------------------------------------------ construction
    @classmethod
    def _trusted(cls, symbols: tuple[str, ...], constants: tuple[float, ...]) -> Expression:
        """Build from parts already known to be well formed (skips the checks: search hot path)."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "symbols", symbols)
        object.__setattr__(obj, "constants", constants)
        return obj

    @classmethod
    def _sliced(cls, symbols: tuple[str, ...], constants: tuple[float, ...], variables: frozenset[int]) -> Expression:
        """:meth:`_trusted` with the variables already known (a cached analysis of the structure)."""
        obj = cls._trusted(symbols, constants)
        obj.__dict__["variables"] = variables  # the value the cached property would compute
        return obj

    @staticmethod
    def empty() -> Expression:
        """The empty expression, root of every search tree."""
        return _EMPTY

    @staticmethod
    def variable(index: int) -> Expression:
        if type(index) is int and index >= 0:  # the only check the constructor would make (hot path)
            return Expression._trusted((variable_symbol(index),), ())
        return Expression((variable_symbol(index),))

    @staticmethod
    def constant(value: float) -> Expression:
        return Expression._trusted((CONSTANT,), (float(value),))

    @staticmethod
    def combine(op: str, *children: Expression) -> Expression:
        """``op(children...)`` as one expression (children in argument order)."""
        if arity(op) != len(children) or op not in OPERATORS:
            raise MalformedExpression(f"{op!r} takes {arity(op)} arguments, got {len(children)}")
        symbols: tuple[str, ...] = (op,)
        constants: tuple[float, ...] = ()
        for child in children:
            if child.is_empty:
                raise MalformedExpression("cannot combine an empty expression")
            symbols += child.symbols
            constants += child.constants
        return Expression._trusted(symbols, constants)

    # ------------------------------------------------------------------ structure
    @property
    def size(self) -> int:
        """Number of nodes: operators + variables + constants (CONTRACTS §1)."""
        return len(self.symbols)

    @property
    def is_empty(self) -> bool:
        return not self.symbols

    @cached_property
    def subtree_ends(self) -> tuple[int, ...]:
        """``subtree_ends[i]`` is the exclusive end of the subtree rooted at prefix position ``i``."""
        symbols = self.symbols
        ends = [0] * len(symbols)
        stack: list[int] = []  # end positions of already-scanned subtrees, scanning right to left
        children, pop, push = ARITY.get, stack.pop, stack.append
        for i in range(len(symbols) - 1, -1, -1):
            k = children(symbols[i], 0)
            if k == 0:
                end = i + 1
            else:
                for _ in range(k):  # the last popped is the rightmost child's end
                    end = pop()
            ends[i] = end
            push(end)
        return tuple(ends)

    @cached_property
    def _constant_offsets(self) -> tuple[int, ...]:
        """Number of constants strictly before each prefix position (plus the total at the end)."""
        offsets, count = [], 0
        for s in self.symbols:
            offsets.append(count)
            count += s == CONSTANT
        offsets.append(count)
        return tuple(offsets)

    def constant_offset(self, position: int) -> int:
        """Index in ``constants`` of the first constant at or after prefix ``position``."""
        return self._constant_offsets[position]

    def subtree(self, position: int) -> Expression:
        """The subtree rooted at prefix ``position``."""
        end = self.subtree_ends[position]
        c0, c1 = self.constant_offset(position), self.constant_offset(end)
        return Expression._trusted(self.symbols[position:end], self.constants[c0:c1])

    def children(self, position: int = 0) -> list[int]:
        """Prefix positions of the children of the node at ``position``."""
        out, child = [], position + 1
        for _ in range(arity(self.symbols[position])):
            out.append(child)
            child = self.subtree_ends[child]
        return out

    def replace_subtree(self, position: int, new: Expression) -> Expression:
        """A copy with the subtree at ``position`` replaced by ``new``."""
        end = self.subtree_ends[position]
        c0, c1 = self.constant_offset(position), self.constant_offset(end)
        if new.is_empty:
            raise MalformedExpression("cannot insert an empty expression")
        return Expression._trusted(
            self.symbols[:position] + new.symbols + self.symbols[end:],
            self.constants[:c0] + new.constants + self.constants[c1:],
        )

    @cached_property
    def variables(self) -> frozenset[int]:
        """Indices of the input variables the expression uses."""
        return frozenset(variable_index(s) for s in self.symbols if is_variable(s))

    @property
    def n_constants(self) -> int:
        return len(self.constants)

    def with_constants(self, values: Sequence[float]) -> Expression:
        """Same structure, new constant values."""
        constants = tuple(float(v) for v in values)
        if len(constants) != len(self.constants):  # the structure is already checked: only the count can be wrong
            raise MalformedExpression(f"{len(self.constants)} constant slots but {len(constants)} values")
        return Expression._trusted(self.symbols, constants)

    def with_variables(self, replacements: Mapping[int, Expression]) -> Expression:
        """Each variable ``x_i`` of ``replacements`` replaced by ``replacements[i]`` (the others kept)."""
        symbols: list[str] = []
        constants: list[float] = []
        ci = 0
        for s in self.symbols:
            if s == CONSTANT:
                symbols.append(s)
                constants.append(self.constants[ci])
                ci += 1
            elif is_variable(s) and variable_index(s) in replacements:
                new = replacements[variable_index(s)]
                symbols += new.symbols
                constants += new.constants
            else:
                symbols.append(s)
        return Expression(tuple(symbols), tuple(constants))

    def key(self, digits: int | None = None) -> tuple:
        """Cheap canonical key for caches: the prefix tuple, with constants rounded if asked."""
        if digits is None:
            return (self.symbols, self.constants)
        return (self.symbols, tuple(_round_sig(c, digits) for c in self.constants))

    # ------------------------------------------------------------------ output
    def to_sympy(self, names: Sequence[str] | None = None, *, digits: int | None = None) -> sympy.Expr:
        """SymPy expression (unsimplified); ``names`` maps variable indices to symbol names."""
        if self.is_empty:
            return sympy.Integer(0)
        symbols = [sympy.Symbol(n) for n in names] if names is not None else None
        stack: list[sympy.Expr] = []
        ci = len(self.constants)
        for s in reversed(self.symbols):
            if s == CONSTANT:
                ci -= 1
                value = self.constants[ci]
                stack.append(_sympy_number(value, digits))
            elif is_variable(s):
                idx = variable_index(s)
                stack.append(symbols[idx] if symbols is not None else sympy.Symbol(s))
            else:
                op = OPERATORS[s]
                args = [stack.pop() for _ in range(op.arity)]
                stack.append(_folded(op.sympy_fn(*args), args))
        return stack[0]

    def format(self, names: Sequence[str] | None = None, *, precision: int | None = None) -> str:
        """Infix string that :func:`dgsr.core.parser.parse` reads back to the same prefix structure.

        Names that are not plain identifiers (``a b``, ``E``, ``sin``) are written in backticks.

        ``precision`` rounds constants to that many significant digits (default: exact repr).
        """
        if self.is_empty:
            return "<empty>"
        text, _ = self._format_at(0, names, precision)
        return text

    def _format_at(self, i: int, names: Sequence[str] | None, precision: int | None) -> tuple[str, int]:
        """Returns (text, precedence) of the subtree at ``i``; precedence 9 = atom."""
        s = self.symbols[i]
        if s == CONSTANT:
            v = self.constants[self.constant_offset(i)]
            text = _format_number(v, precision)
            return (f"({text})", 9) if text.startswith("-") else (text, 9)
        if is_variable(s):
            idx = variable_index(s)
            return (quote(names[idx]) if names is not None else s), 9
        op = OPERATORS[s]
        kids = [self._format_at(c, names, precision) for c in self.children(i)]
        if op.infix is not None:
            prec = 1 if s in ("add", "sub") else 2
            (lt, lp), (rt, rp) = kids
            left = lt if lp >= prec else f"({lt})"
            # parse() is left-associative, so a right operand of equal precedence keeps its
            # parentheses: the string then reads back to exactly the same prefix tree.
            right = rt if rp > prec else f"({rt})"
            sep = f" {op.infix} " if prec == 1 else op.infix
            return f"{left}{sep}{right}", prec
        if len(kids) == 2:  # a user-defined binary operator: a call
            return f"{s}({kids[0][0]}, {kids[1][0]})", 9
        (at, ap), = kids
        if s == "sq":
            return (f"{at}**2" if ap == 9 else f"({at})**2"), 4
        if s == "inv":
            return (f"{at}**-1" if ap == 9 else f"({at})**-1"), 4
        return f"{s}({at})", 9

    def __str__(self) -> str:
        return self.format(precision=4)

    def __repr__(self) -> str:
        return f"Expression({self.format()!r})"


_EMPTY = Expression()


def subtree_end(symbols: Sequence[str], start: int) -> int:
    """The exclusive end of the subtree rooted at prefix position ``start`` of a well-formed
    sequence: one scan forward, for callers that need one subtree's end and not the whole table
    of :attr:`Expression.subtree_ends` (a new candidate's checks)."""
    need, i = 1, start
    while need:
        need += ARITY.get(symbols[i], 0) - 1
        i += 1
    return i


def _round_sig(value: float, digits: int) -> float:
    """Round to ``digits`` significant digits (non-finite values pass through)."""
    if value == 0.0 or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def _format_number(value: float, precision: int | None) -> str:
    if precision is None:
        return repr(float(value))
    return f"{value:.{precision}g}"


def _folded(node: sympy.Expr, args: list[sympy.Expr]) -> sympy.Expr:
    """``node`` as its value where it is a function of numbers that SymPy keeps unevaluated: an
    exact integer argument leaves ``cos(4125)``, a constant that reads as a formula. Powers
    (``sqrt(2)``) and values SymPy finds exactly (``sin(pi/6)``) stay as they are."""
    if not (isinstance(node, sympy.Function) and all(a.is_Number or a.is_NumberSymbol for a in args)):
        return node
    value = node.evalf(15)
    return value if value.is_Float else node


def _sympy_number(value: float, digits: int | None = None) -> sympy.Expr:
    """An integer or a snapped simple value exactly (``1/3``, ``pi/2``), anything else as a float
    (rounded to ``digits`` significant digits when given)."""
    from dgsr.core.snapping import exact_value  # snapping builds on expressions

    exact = exact_value(value)  # never an integer
    if exact is not None:
        return exact
    if digits:
        value = _round_sig(value, digits)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return sympy.Integer(int(value))
    return sympy.Float(value)
