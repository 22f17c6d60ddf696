"""The op codes of the kernels' programs, and expressions encoded as programs.

A program is an expression's prefix sequence read backwards (postfix order) as two integer
arrays: each node's op code (``add sub mul div`` 0-3, the unary operators 4-11, a constant
:data:`CONST_CODE`, a variable :data:`VAR_CODE`) and its argument (a constant's index in the
expression's constants, a variable's column, 0 for an operator).
"""

from __future__ import annotations

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, OPERATORS, SymbolTable

__all__ = ["CODES", "CODES_BINARY_LAST", "CONST_CODE", "ENCODING", "VAR_CODE", "encode", "encode_symbols",
           "prefix_codes"]

#: Op code of each operator (postfix programs: the prefix sequence reversed).
CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3, "sin": 4, "cos": 5, "tan": 6, "exp": 7, "log": 8,
         "sqrt": 9, "inv": 10, "sq": 11}
#: Op codes of a constant and of a variable (pushes).
CONST_CODE, VAR_CODE = 20, 21
#: Codes 0..CODES_BINARY_LAST are the binary operators.
CODES_BINARY_LAST = 3
assert set(CODES) == set(OPERATORS), "every operator needs an op code"

#: Symbol -> ``op code << 32 | argument``: a variable's argument is its column, anything else's 0
#: (constants are numbered apart).
ENCODING = SymbolTable({**{s: c << 32 for s, c in CODES.items()}, CONSTANT: CONST_CODE << 32},
                       lambda column: VAR_CODE << 32 | column)


def encode(expr: Expression) -> tuple[np.ndarray, np.ndarray]:
    """``expr`` (non-empty) as op codes and arguments in postfix order: a constant's argument is
    its index in ``expr.constants``, a variable's its column, an operator's unused."""
    if expr.is_empty:
        raise ValueError("cannot encode the empty expression")
    return encode_symbols(expr.symbols)


def encode_symbols(symbols: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`encode` of a (non-empty, well-formed) prefix sequence."""
    codes = np.array([ENCODING[s] for s in reversed(symbols)], dtype=np.int64)
    ops = codes >> 32
    args = codes & 0xFFFFFFFF
    constants = ops == CONST_CODE
    args[constants] = np.arange(int(np.count_nonzero(constants)) - 1, -1, -1)  # prefix order, read backwards
    return ops, args


def prefix_codes(symbols: tuple[str, ...]) -> np.ndarray:
    """The prefix sequence as ``op code << 32 | column`` (:data:`ENCODING`), the input of
    :func:`dgsr.core.kernels.structure.structure`."""
    return np.fromiter(map(ENCODING.__getitem__, symbols), np.int64, len(symbols))
