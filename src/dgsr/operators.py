"""The one operator table (Table 1 of the DGSR-MCTS paper, plus arithmetic).

Every backend (numpy evaluation, SymPy export, infix/LaTeX formatting, tokens) is derived
from :data:`OPERATORS`, so adding an operator is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy


@dataclass(frozen=True)
class Operator:
    """One operator of the expression language.

    ``infix`` is set for the four arithmetic operators; ``transcendental`` marks the operators
    that may not appear below one another (CONTRACTS §1 nesting rule).
    """

    name: str
    arity: int
    numpy_fn: Callable[..., np.ndarray]
    sympy_fn: Callable[..., sympy.Expr]
    infix: str | None = None
    transcendental: bool = False


def _inv(a: np.ndarray) -> np.ndarray:
    return 1.0 / a


def _sq(a: np.ndarray) -> np.ndarray:
    return a * a


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator("add", 2, np.add, lambda a, b: a + b, infix="+"),
        Operator("sub", 2, np.subtract, lambda a, b: a - b, infix="-"),
        Operator("mul", 2, np.multiply, lambda a, b: a * b, infix="*"),
        Operator("div", 2, np.divide, lambda a, b: a / b, infix="/"),
        Operator("sin", 1, np.sin, sympy.sin, transcendental=True),
        Operator("cos", 1, np.cos, sympy.cos, transcendental=True),
        Operator("tan", 1, np.tan, sympy.tan, transcendental=True),
        Operator("exp", 1, np.exp, sympy.exp, transcendental=True),
        Operator("log", 1, np.log, sympy.log, transcendental=True),
        Operator("sqrt", 1, np.sqrt, sympy.sqrt),
        Operator("inv", 1, _inv, lambda a: 1 / a),
        Operator("sq", 1, _sq, lambda a: a**2),
    )
}

BINARY: tuple[str, ...] = tuple(n for n, op in OPERATORS.items() if op.arity == 2)
UNARY: tuple[str, ...] = tuple(n for n, op in OPERATORS.items() if op.arity == 1)
TRANSCENDENTAL: frozenset[str] = frozenset(n for n, op in OPERATORS.items() if op.transcendental)

#: Symbol used in a prefix sequence for a numeric constant; values live in ``Expression.constants``.
CONSTANT = "c"
#: Maximum number of input variables the language (and the model) names, x0..x{MAX_VARIABLES-1}.
#: The regressor pre-selects features above this (the paper's model takes at most 10 inputs).
MAX_VARIABLES = 10


def variable_symbol(index: int) -> str:
    """Prefix symbol of the ``index``-th input column (``x0``, ``x1``, ...)."""
    return f"x{index}"


def is_variable(symbol: str) -> bool:
    return len(symbol) > 1 and symbol[0] == "x" and symbol[1:].isdigit()


def variable_index(symbol: str) -> int:
    return int(symbol[1:])


def arity(symbol: str) -> int:
    """Number of children of a prefix symbol (0 for variables and constants)."""
    op = OPERATORS.get(symbol)
    return op.arity if op is not None else 0
