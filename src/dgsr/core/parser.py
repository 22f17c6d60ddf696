"""A small infix parser over the operator table (no ``eval``, no ``sympify``).

Formula strings from users or files never reach Python's ``eval`` (which ``sympy.sympify``
calls); this recursive-descent parser reads ``+ - * / ** ^``, parentheses, numbers, variable
names (any name in backticks, as :func:`dgsr.core.names.quote` writes it), ``pi`` and the functions of
:mod:`dgsr.core.operators` (``ln`` is accepted for ``log``), user-defined ones included
(``hyp(x, y)``).
Powers need a numeric exponent and are rewritten with ``sq``, ``sqrt``, ``inv`` and ``mul``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from dgsr.core.evaluate import evaluate_constant
from dgsr.core.expression import Expression
from dgsr.core.names import unquote
from dgsr.core.operators import OPERATORS, binary_names, is_variable, unary_names, variable_index

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[^\W\d]\w*)|(?P<quoted>`(?:[^`\\]|\\.)*`)"
    r"|(?P<op>\*\*|[-+*/^(),]))"
)
_ALIASES = {"ln": "log"}
_NAMED_CONSTANTS = {"pi": math.pi}


class ParseError(ValueError):
    """The formula text cannot be read into an expression of the operator set."""


def parse(text: str, variables: Sequence[str] | None = None, *, fold_constants: bool = True) -> Expression:
    """Parse an infix formula into an :class:`Expression`.

    Parameters
    ----------
    text:
        e.g. ``"x0*sin(1.5*x1) + 2"`` or, with ``variables=["m", "g", "z"]``, ``"m*g*z"``.
    variables:
        Variable names in column order. Without it, names must be ``x0``, ``x1``, ...
    fold_constants:
        Replace sub-expressions without variables by one constant (``2*pi`` -> ``6.283...``).
    """
    tokens = _tokenize(text)
    parser = _Parser(tokens, {n: i for i, n in enumerate(variables)} if variables is not None else None,
                     fold_constants)
    expr = parser.expression()
    if parser.pos != len(tokens):
        raise ParseError(f"unexpected {tokens[parser.pos][1]!r} in {text!r}")
    return expr


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ParseError(f"cannot read {text[pos:pos + 10]!r} in {text!r}")
        kind = m.lastgroup
        tokens.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if not tokens:
        raise ParseError("empty formula")
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], variables: dict[str, int] | None, fold: bool):
        self.tokens, self.pos, self.variables, self.fold = tokens, 0, variables, fold

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ParseError("unexpected end of formula" + (f", expected {expected!r}" if expected else ""))
        tok = self.tokens[self.pos]
        if expected is not None and tok[1] != expected:
            raise ParseError(f"expected {expected!r}, found {tok[1]!r}")
        self.pos += 1
        return tok

    def node(self, op: str, *children: Expression) -> Expression:
        expr = Expression.combine(op, *children)
        if self.fold and not expr.variables:
            value = evaluate_constant(expr)
            if math.isfinite(value):
                return Expression.constant(value)
        return expr

    def expression(self) -> Expression:
        left = self.term()
        while self.peek() in ("+", "-"):
            op = "add" if self.take()[1] == "+" else "sub"
            left = self.node(op, left, self.term())
        return left

    def term(self) -> Expression:
        left = self.unary()
        while self.peek() in ("*", "/"):
            op = "mul" if self.take()[1] == "*" else "div"
            left = self.node(op, left, self.unary())
        return left

    def unary(self) -> Expression:
        if self.peek() == "-":
            self.take()
            operand = self.unary()
            if operand.symbols == ("c",):
                return Expression.constant(-operand.constants[0])
            return self.node("mul", Expression.constant(-1.0), operand)
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self) -> Expression:
        base = self.atom()
        if self.peek() in ("**", "^"):
            self.take()
            exponent = self.unary()  # right-associative, allows x**-1
            if exponent.variables:
                raise ParseError("exponents must be numbers (x**y is not in the operator set)")
            return self.raise_to(base, evaluate_constant(exponent))
        return base

    def raise_to(self, base: Expression, p: float) -> Expression:
        if self.fold and not base.variables:
            try:
                value = math.pow(evaluate_constant(base), p)
            except (ValueError, OverflowError, ZeroDivisionError):
                value = math.nan
            if math.isfinite(value):
                return Expression.constant(value)
        return self._power_tree(base, p)

    def _power_tree(self, base: Expression, p: float) -> Expression:
        if p < 0:
            return self.node("inv", self._power_tree(base, -p))
        if p == 0:
            return Expression.constant(1.0)
        twice = 2 * p
        if twice != int(twice) or p > 16:
            raise ParseError(f"exponent {p:g} is not expressible with sq, sqrt, inv and mul")
        whole, half = int(p), twice % 2 == 1
        result = self._integer_power(base, whole) if whole else None
        if half:
            root = self.node("sqrt", base)
            result = root if result is None else self.node("mul", result, root)
        return result

    def _integer_power(self, base: Expression, n: int) -> Expression:
        if n == 1:
            return base
        if n % 2 == 0:
            return self.node("sq", self._integer_power(base, n // 2))
        return self.node("mul", self._integer_power(base, n - 1), base)

    def atom(self) -> Expression:
        kind, value = self.take()
        if kind == "num":
            return Expression.constant(float(value))
        if kind == "name":
            if self.peek() == "(":
                return self.call(_ALIASES.get(value, value))
            return self.name(value)
        if kind == "quoted":  # a variable whose name is not a plain identifier (dgsr.core.names.quote)
            name = unquote(value)
            if self.variables is not None and name in self.variables:
                return Expression.variable(self.variables[name])
            raise ParseError(f"unknown variable {name!r}")
        if value == "(":
            inner = self.expression()
            self.take(")")
            return inner
        raise ParseError(f"unexpected {value!r}")

    def call(self, fn: str) -> Expression:
        self.take("(")
        args = [self.expression()]
        while self.peek() == ",":
            self.take()
            args.append(self.expression())
        self.take(")")
        if fn not in OPERATORS or OPERATORS[fn].infix is not None:
            known = ", ".join(sorted(n for n in unary_names() + binary_names() if OPERATORS[n].infix is None))
            raise ParseError(f"function {fn!r} is not in the operator set ({known})")
        if len(args) != OPERATORS[fn].arity:
            raise ParseError(f"{fn} takes {OPERATORS[fn].arity} argument(s), got {len(args)}")
        return self.node(fn, *args)

    def name(self, value: str) -> Expression:
        if self.variables is not None and value in self.variables:
            return Expression.variable(self.variables[value])
        if self.variables is None and is_variable(value):
            return Expression.variable(variable_index(value))
        if value in _NAMED_CONSTANTS:
            return Expression.constant(_NAMED_CONSTANTS[value])
        if value in OPERATORS:
            raise ParseError(f"{value!r} is a function: write {value}(...)")
        raise ParseError(f"unknown variable {value!r}")
