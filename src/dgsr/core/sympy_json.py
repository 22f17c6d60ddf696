"""SymPy expressions as JSON trees, read back exactly and without ``eval``.

A model file stores each front row's simplified SymPy form, so that a loaded model shows the
same ``equations_``, ``sympy()`` and ``latex()`` as the estimator that wrote it: simplifying again
would run under a time cap and could stop at another point. ``sympy.srepr`` would round-trip, but
reading it back means ``eval`` (which ``sympify`` calls) on the file's text, and a model file is
data, not code. So the tree is written as nested lists and rebuilt from a fixed set of node
kinds, with ``evaluate=False`` so that SymPy rebuilds the very same tree:

- ``["Symbol", name]`` (``["Symbol", name, assumptions]`` where there are any),
- ``["Integer", "12"]``, ``["Rational", "1", "3"]`` (digits as strings: any size),
- ``["Float", sign, mantissa_hex, exponent, bit_count, precision]`` (the exact binary value),
- ``["S", name]`` for SymPy's named constants (``Pi``, ``Exp1``, ``Infinity``, ``NaN``, ...),
- ``["Add" | "Mul" | "Pow", child, ...]`` and ``["Function", name, arg, ...]`` for SymPy's own
  functions (``sin``, ``exp``, ``Abs``, ...);
- ``["Operator", name, arg, ...]`` for a user-defined operator (:mod:`dgsr.core.custom_operators`),
  read back only where that operator is defined.

Anything else raises :class:`UnsupportedSympy` when written and ``ValueError`` when read.
"""

from __future__ import annotations

from typing import Any

import sympy
from sympy.core.function import AppliedUndef

from dgsr.core.custom_operators import is_custom

_OPERATIONS = {"Add": sympy.Add, "Mul": sympy.Mul, "Pow": sympy.Pow}
#: Symbols without assumptions have only this one (``Symbol("x").assumptions0``).
_PLAIN = {"commutative": True}


class UnsupportedSympy(ValueError):
    """A SymPy node outside the kinds this module writes."""


def to_tree(expr: sympy.Basic) -> list:
    """``expr`` as a JSON-ready nested list (see the module docstring)."""
    if isinstance(expr, sympy.Float):
        sign, mantissa, exponent, bits = expr._mpf_
        return ["Float", int(sign), format(int(mantissa), "x"), int(exponent), int(bits), int(expr._prec)]
    if isinstance(expr, sympy.Integer):
        return ["Integer", str(int(expr))]
    if isinstance(expr, sympy.Rational):
        return ["Rational", str(expr.p), str(expr.q)]
    if type(expr) is sympy.Symbol:
        # The assumptions as given (SymPy 1.12+), else the full derived set: equal symbols either way.
        given = getattr(expr, "_assumptions_orig", None)
        assumptions = dict(expr.assumptions0 if given is None else given)
        return ["Symbol", expr.name] if assumptions in ({}, _PLAIN) else ["Symbol", expr.name, assumptions]
    name = type(expr).__name__
    if expr.is_Atom and getattr(sympy.S, name, None) is expr:
        return ["S", name]
    if name in _OPERATIONS and type(expr) is _OPERATIONS[name]:
        return [name, *(to_tree(a) for a in expr.args)]
    if isinstance(expr, sympy.Function) and _function_class(name) is type(expr):
        return ["Function", name, *(to_tree(a) for a in expr.args)]
    if isinstance(expr, AppliedUndef) and is_custom(name):
        return ["Operator", name, *(to_tree(a) for a in expr.args)]
    raise UnsupportedSympy(f"cannot write SymPy node {name} ({expr})")


def from_tree(tree: Any) -> sympy.Expr:
    """The SymPy expression that :func:`to_tree` wrote; ``ValueError`` for any other input."""
    if not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
        raise ValueError(f"not a SymPy tree node: {tree!r:.80}")
    head, rest = tree[0], tree[1:]
    try:
        if head == "Float":
            sign, mantissa, exponent, bits, precision = rest
            return sympy.Float((int(sign), str(mantissa), int(exponent), int(bits)), precision=int(precision))
        if head == "Integer":
            return sympy.Integer(int(_digits(rest[0])))
        if head == "Rational":
            return sympy.Rational(int(_digits(rest[0])), int(_digits(rest[1])))
        if head == "Symbol":
            return sympy.Symbol(str(rest[0]), **(_assumptions(rest[1]) if len(rest) > 1 else {}))
        if head == "S":
            return _named_constant(rest[0])
        if head in _OPERATIONS:
            return _OPERATIONS[head](*(from_tree(a) for a in rest), evaluate=False)
        if head == "Function":
            cls = _function_class(rest[0]) if isinstance(rest[0], str) else None
            if cls is None:
                raise ValueError(f"unknown SymPy function {rest[0]!r}")
            return cls(*(from_tree(a) for a in rest[1:]), evaluate=False)
        if head == "Operator":
            if not (isinstance(rest[0], str) and is_custom(rest[0])):
                raise ValueError(f"{rest[0]!r} is not a user-defined operator of this process")
            return sympy.Function(rest[0])(*(from_tree(a) for a in rest[1:]))
    except (TypeError, IndexError) as err:
        raise ValueError(f"malformed SymPy tree node {head!r}: {err}") from None
    raise ValueError(f"unknown SymPy tree node {head!r}")


def _function_class(name: str) -> type | None:
    """SymPy's own function class of that name (``sin``, ``Abs``, ...), else None: only classes,
    never an arbitrary callable of the ``sympy`` namespace."""
    cls = getattr(sympy, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, sympy.Function) else None


def _named_constant(name: Any) -> sympy.Expr:
    value = getattr(sympy.S, name, None) if isinstance(name, str) else None
    if not isinstance(value, sympy.Basic) or not value.is_Atom:
        raise ValueError(f"unknown SymPy constant {name!r}")
    return value


def _digits(text: Any) -> str:
    """A decimal integer's text (``int()`` alone would also take ``"1_0"`` or spaces)."""
    if not isinstance(text, str) or not text.lstrip("-").isdigit():
        raise ValueError(f"not an integer: {text!r:.40}")
    return text


def _assumptions(values: Any) -> dict[str, bool]:
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, bool) for k, v in values.items()):
        raise ValueError(f"symbol assumptions must map names to true/false, got {values!r:.80}")
    return values
