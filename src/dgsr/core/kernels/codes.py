"""The op codes of the kernels' programs, and expressions encoded as programs.

A program is an expression's prefix sequence read backwards (postfix order) as two integer
arrays: each node's op code (``add sub mul div`` 0-3, the unary operators 4-11, a constant
:data:`CONST_CODE`, a variable :data:`VAR_CODE`) and its argument (a constant's index in the
expression's constants, a variable's column, 0 for an operator).

User-defined operators (:mod:`dgsr.core.custom_operators`) take the codes
:data:`USER_UNARY_CODES` (12-75, between the unary operators and the pushes, so every walker's
"neither a push nor binary" test reads them as unary) and :data:`USER_BINARY_CODES` (-1 to -64,
below ``add``, so every "code <= :data:`CODES_BINARY_LAST`" test reads them as binary). Each
one's value and partial derivatives are small postfix programs over the built-in codes and the
body codes below, held in one table (:data:`OPERATOR_TABLE`) that the kernels take as an argument.
"""

from __future__ import annotations

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, OPERATORS, SymbolTable

__all__ = [
    "BODY_ARG0",
    "BODY_ARG1",
    "BODY_LIT",
    "BODY_POW",
    "BODY_UNARY",
    "CODES",
    "CODES_BINARY_LAST",
    "CONST_CODE",
    "ENCODING",
    "OPERATOR_TABLE",
    "TABLE_HEADER",
    "USER_BINARY_CODES",
    "USER_UNARY_CODES",
    "USER_UNARY_FIRST",
    "VAR_CODE",
    "encode",
    "encode_symbols",
    "install_operator",
    "prefix_codes",
    "table_slot",
]

#: Op code of each operator (postfix programs: the prefix sequence reversed).
CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3, "sin": 4, "cos": 5, "tan": 6, "exp": 7, "log": 8,
         "sqrt": 9, "inv": 10, "sq": 11}
#: Op codes of a constant and of a variable (pushes).
CONST_CODE, VAR_CODE = 100, 101
#: Codes 0..CODES_BINARY_LAST are the binary operators.
CODES_BINARY_LAST = 3
assert set(CODES) == set(OPERATORS), "every operator needs an op code"

#: Symbol -> ``op code << 32 | argument``: a variable's argument is its column, anything else's 0
#: (constants are numbered apart).
ENCODING = SymbolTable({**{s: c << 32 for s, c in CODES.items()}, CONSTANT: CONST_CODE << 32},
                       lambda column: VAR_CODE << 32 | column)

#: The codes of user-defined operators, in the order they are defined.
USER_UNARY_CODES: tuple[int, ...] = tuple(range(12, 76))
USER_BINARY_CODES: tuple[int, ...] = tuple(range(-1, -65, -1))
USER_UNARY_FIRST = USER_UNARY_CODES[0]
assert max(CODES.values()) < USER_UNARY_FIRST and USER_UNARY_CODES[-1] < CONST_CODE

# A body program (one per operator and role: its value, d/da, d/db) reads its arguments and
# literals with these pushes; besides the built-in codes 0-11 it may use these functions.
BODY_ARG0, BODY_ARG1, BODY_LIT = 250, 251, 252
BODY_POW = 200  # binary: the left operand (on top) to the power of the right
#: SymPy function name -> body code of the unary functions beyond Table 1.
BODY_UNARY: dict[str, int] = {"Abs": 201, "tanh": 202, "sinh": 203, "cosh": 204, "atan": 205, "asin": 206,
                              "acos": 207, "asinh": 208, "erf": 209, "sign": 210}
#: Rows of the table before the instructions: row ``3*slot + role`` holds ``(start, end)`` of one
#: body (slots 0-63 the unary codes, 64-127 the binary ones; roles 0 value, 1 d/da, 2 d/db).
TABLE_HEADER = 3 * (len(USER_UNARY_CODES) + len(USER_BINARY_CODES))


def table_slot(code: int) -> int:
    """The table slot of a user-defined operator's code."""
    return code - USER_UNARY_FIRST if code > 0 else len(USER_UNARY_CODES) - 1 - code


def _empty_table() -> np.ndarray:
    return np.zeros((TABLE_HEADER, 2))


#: The kernels' operator table: ``[TABLE_HEADER + instructions, 2]`` float64, each instruction
#: ``(code, literal)``. A one-element list holding the current array, replaced (never mutated) when
#: an operator is installed, so a kernel already running keeps the table it was given.
OPERATOR_TABLE: list[np.ndarray] = [_empty_table()]


def install_operator(name: str, code: int, bodies: tuple[list[tuple[int, float]], ...]) -> None:
    """Give the user-defined operator ``name`` the op ``code`` and its body programs (value,
    then one derivative per argument) in :data:`OPERATOR_TABLE`."""
    old = OPERATOR_TABLE[0]
    rows = [old]
    header = old[:TABLE_HEADER].copy()
    end = old.shape[0]
    for role, body in enumerate(bodies):
        header[3 * table_slot(code) + role] = (end, end + len(body))
        rows.append(np.array(body, dtype=np.float64).reshape(-1, 2))
        end += len(body)
    table = np.concatenate(rows)
    table[:TABLE_HEADER] = header
    OPERATOR_TABLE[0] = np.ascontiguousarray(table)
    CODES[name] = code
    ENCODING[name] = code << 32


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
