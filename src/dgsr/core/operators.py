"""The one operator table (Table 1 of the DGSR-MCTS paper, plus arithmetic).

Each operator is defined once, in :data:`OPERATORS`: its numpy value, its partial derivatives,
its inverse for semantic backpropagation, its SymPy form and its node cost. The numpy backends
read it (evaluation, :mod:`dgsr.core.gradients`, :mod:`dgsr.policies.semantic.backprop`, SymPy
export, infix/LaTeX formatting, tokens); the compiled kernels (:mod:`dgsr.core.kernels.rows`,
:mod:`dgsr.core.kernels.forward`, :mod:`dgsr.policies.semantic.compiled_backprop`) cannot call these Python
functions, so they keep one hand-written row loop per op code, and tests check them against this
table (tests/core/test_operator_kernels.py, tests/policies/test_backprop_table.py).
Adding an operator is one entry here plus its compiled rows (docs/DESIGN.md, "The operator table").
A user's own operator (``"gauss(x) = exp(-x**2)"``) needs neither: :mod:`dgsr.core.custom_operators`
derives its entry from SymPy and :func:`register_operator` adds it to the lookups below.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy

Array = np.ndarray | float
#: ``d out / d a`` given the argument ``a`` and the value ``out = f(a)``.
UnaryDerivative = Callable[[Array, Array], Array]
#: ``(d out / d a, d out / d b)`` given ``a``, ``b`` and ``out = f(a, b)``.
BinaryDerivative = Callable[[Array, Array, Array], tuple[Array, Array]]
#: The argument values giving the ``desired`` outputs, on the branch chosen by the argument's
#: ``current`` values; NaN where no argument gives the desired value.
UnaryInverse = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: The value of child ``child`` (0 or 1) giving the ``desired`` outputs, given the ``other``
#: child's values.
BinaryInverse = Callable[[int, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Operator:
    """One operator of the expression language.

    ``derivative`` is a :data:`UnaryDerivative` or :data:`BinaryDerivative` by ``arity``;
    ``inverse`` a :data:`UnaryInverse` or :data:`BinaryInverse`, or None when backpropagation
    cannot see through the operator (its children then get no desired values). Both may warn on
    poles and domain errors: callers run them under ``np.errstate``. ``infix`` is set for the
    four arithmetic operators; ``transcendental`` marks the operators that may not appear below
    one another (CONTRACTS §1 nesting rule); ``complexity`` is the node's cost in a formula's size.
    """

    name: str
    arity: int
    numpy_fn: Callable[..., np.ndarray]
    sympy_fn: Callable[..., sympy.Expr]
    derivative: Callable[..., Array | tuple[Array, Array]]
    inverse: Callable[..., np.ndarray] | None
    infix: str | None = None
    transcendental: bool = False
    complexity: int = 1
    #: A user-defined operator's definition as the user wrote it (None: Table 1), and its body as
    #: a SymPy ``Lambda`` (:mod:`dgsr.core.custom_operators`).
    definition: str | None = None
    body: object = None


def _inv(a: np.ndarray) -> np.ndarray:
    return 1.0 / a


def _sq(a: np.ndarray) -> np.ndarray:
    return a * a


_TWO_PI = 2.0 * math.pi


def _in_unit(d: np.ndarray) -> np.ndarray:
    """``d`` where it is in [-1, 1] (the range of sin and cos), NaN elsewhere."""
    return np.where((d >= -1.0) & (d <= 1.0), d, np.nan)


def _nearest_branch(principal: np.ndarray, current: np.ndarray, mirror: float | None,
                    period: float) -> np.ndarray:
    """The solution ``principal + k*period`` (or ``mirror - principal + k*period``) nearest
    ``current`` (0 where ``current`` is not finite): the smallest change that reaches the desired
    value, so backpropagation does not jump to another period."""
    cur = np.where(np.isfinite(current), current, 0.0)
    best = principal + np.round((cur - principal) / period) * period
    if mirror is None:
        return best
    other = mirror - principal
    other = other + np.round((cur - other) / period) * period
    return np.where(np.abs(other - cur) < np.abs(best - cur), other, best)


def _signed_root(desired: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The square root of ``desired`` with the sign of ``current`` (the nearer of the two roots)."""
    root = np.sqrt(np.where(desired >= 0, desired, np.nan))
    return np.where(current < 0, -root, root)


# The entries: value, derivative, inverse, SymPy form. The inverses' exact arithmetic (and the
# 700 cap below exp's overflow at about 709.8) is what the compiled backpropagation reproduces.
OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator("add", 2, np.add, lambda a, b: a + b,
                 lambda a, b, out: (1.0, 1.0),
                 lambda child, d, other: d - other, infix="+"),
        Operator("sub", 2, np.subtract, lambda a, b: a - b,
                 lambda a, b, out: (1.0, -1.0),
                 lambda child, d, other: d + other if child == 0 else other - d, infix="-"),
        Operator("mul", 2, np.multiply, lambda a, b: a * b,
                 lambda a, b, out: (b, a),
                 lambda child, d, other: d / other, infix="*"),
        Operator("div", 2, np.divide, lambda a, b: a / b,
                 lambda a, b, out: (1.0 / b, -out / b),
                 lambda child, d, other: d * other if child == 0 else other / d, infix="/"),
        Operator("sin", 1, np.sin, sympy.sin,
                 lambda a, out: np.cos(a),
                 lambda d, cur: _nearest_branch(np.arcsin(_in_unit(d)), cur, math.pi, _TWO_PI),
                 transcendental=True),
        Operator("cos", 1, np.cos, sympy.cos,
                 lambda a, out: -np.sin(a),
                 lambda d, cur: _nearest_branch(np.arccos(_in_unit(d)), cur, 0.0, _TWO_PI),
                 transcendental=True),
        Operator("tan", 1, np.tan, sympy.tan,
                 lambda a, out: 1.0 + out * out,
                 lambda d, cur: _nearest_branch(np.arctan(d), cur, None, math.pi),
                 transcendental=True),
        Operator("exp", 1, np.exp, sympy.exp,
                 lambda a, out: out,
                 lambda d, cur: np.log(np.where(d > 0, d, np.nan)), transcendental=True),
        Operator("log", 1, np.log, sympy.log,
                 lambda a, out: 1.0 / a,
                 lambda d, cur: np.exp(np.where(d < 700, d, np.nan)), transcendental=True),
        Operator("sqrt", 1, np.sqrt, sympy.sqrt,
                 lambda a, out: 0.5 / out,
                 lambda d, cur: np.where(d >= 0, d * d, np.nan)),
        Operator("inv", 1, _inv, lambda a: 1 / a,
                 lambda a, out: -(out * out),
                 lambda d, cur: 1.0 / d),
        Operator("sq", 1, _sq, lambda a: a**2,
                 lambda a, out: 2.0 * a,
                 _signed_root),
    )
}

#: The Table 1 operators in table order (the neural policy's vocabulary); user-defined ones join
#: :data:`OPERATORS` later, never this.
TABLE_ONE: tuple[str, ...] = tuple(OPERATORS)
#: The Table 1 operators of each arity (user-defined ones are not among them: :func:`unary_names`).
BINARY: tuple[str, ...] = tuple(n for n, op in OPERATORS.items() if op.arity == 2)
UNARY: tuple[str, ...] = tuple(n for n, op in OPERATORS.items() if op.arity == 1)
#: Operator name -> its numpy function: the lookup every evaluation loop uses.
NUMPY_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {name: op.numpy_fn for name, op in OPERATORS.items()}
#: The operators that may not appear below one another (a set: user-defined ones join it).
TRANSCENDENTAL: set[str] = {n for n, op in OPERATORS.items() if op.transcendental}

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


class SymbolTable(dict):
    """Symbol -> value for the structural hot loops: the ``fixed`` entries (operators, the
    constant), and for a variable symbol ``of_column(its column)``, made the first time the symbol
    is met and kept (the table grows only with the variable names in use). Anything else is a
    KeyError."""

    def __init__(self, fixed: dict[str, int], of_column: Callable[[int], int],
                 of_operator: Callable[[str], int] | None = None):
        super().__init__(fixed)
        self._of_column = of_column
        self._of_operator = of_operator

    def __missing__(self, symbol: str) -> int:
        if is_variable(symbol):
            value = self[symbol] = self._of_column(variable_index(symbol))
        elif self._of_operator is not None and symbol in ARITY:  # a user-defined operator
            value = self[symbol] = self._of_operator(symbol)
        else:
            raise KeyError(symbol)
        return value


#: Operator name -> number of children (the lookup the structural hot loops use).
ARITY: dict[str, int] = {name: op.arity for name, op in OPERATORS.items()}


def register_operator(op: Operator) -> None:
    """Add a user-defined operator to the table and the lookups derived from it. Only
    :mod:`dgsr.core.custom_operators` calls this (it also gives the operator its op code)."""
    OPERATORS[op.name] = op
    ARITY[op.name] = op.arity
    NUMPY_FUNCTIONS[op.name] = op.numpy_fn
    if op.transcendental:
        TRANSCENDENTAL.add(op.name)


def unary_names() -> tuple[str, ...]:
    """Every unary operator known in this process: Table 1's, then the user-defined ones."""
    return tuple(n for n, op in OPERATORS.items() if op.arity == 1)


def binary_names() -> tuple[str, ...]:
    """Every binary operator known in this process: Table 1's, then the user-defined ones."""
    return tuple(n for n, op in OPERATORS.items() if op.arity == 2)


def arity(symbol: str) -> int:
    """Number of children of a prefix symbol (0 for variables and constants)."""
    return ARITY.get(symbol, 0)


#: PySR-style spellings accepted for the Table 1 operators (``"+"`` for ``add``, ``"square"`` for ``sq``).
OPERATOR_ALIASES: dict[str, str] = {
    "+": "add", "-": "sub", "*": "mul", "/": "div",
    "plus": "add", "minus": "sub", "mult": "mul", "times": "mul",
    "square": "sq", "pow2": "sq", "recip": "inv", "reciprocal": "inv",
}


def canonical_operator(name: object, arity_wanted: int | None, what: str, define: bool = False) -> str:
    """The Table 1 name of ``name`` (an alias such as ``"+"`` or ``"square"`` allowed), or of an
    operator defined in this process; ``what`` names the argument in the error. ``define`` (the
    operator lists): a definition (``"gauss(x) = exp(-x**2)"``) or a PySR name (``"tanh"``) defines
    its operator first. Raises TypeError / ValueError for an unknown name or one of the wrong arity
    (``arity_wanted``; None: any)."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must hold operator names (strings), got {name!r}")
    from dgsr.core.custom_operators import PYSR_OPERATORS, define_operator, definition_of

    low = name.strip().lower()  # Table 1 names in any case; a user-defined one as it was defined
    text = definition_of(name) if define and low not in OPERATOR_ALIASES else None
    if text is not None:  # "gauss(x) = exp(-x**2)", or PySR's name of one ("tanh", "cube", "max")
        op = define_operator(text, what)
    else:
        op = OPERATOR_ALIASES.get(low, low if low in OPERATORS else name.strip())
    if op not in OPERATORS:
        raise ValueError(
            f"{what}: {name!r} is not an operator of the expression language (Table 1 of the paper). "
            f"Binary: {', '.join(BINARY)} (or + - * /); unary: {', '.join(UNARY)} "
            f"(sq = x**2, also 'square'; inv = 1/x); PySR's {', '.join(PYSR_OPERATORS)}. Define any other "
            "as a SymPy expression, e.g. 'gauss(x) = exp(-x**2)' or 'hyp(x, y) = sqrt(x**2 + y**2)'.")
    if arity_wanted is not None and OPERATORS[op].arity != arity_wanted:
        kind = "binary" if arity_wanted == 2 else "unary"
        raise ValueError(f"{what}: {name!r} is not a {kind} operator")
    return op


def resolve_operators(operators: object = None, unary_operators: object = None,
                      binary_operators: object = None) -> tuple[str, ...] | None:
    """The allowed operator names (canonical, in table order) from the estimator's arguments.

    ``operators`` lists any Table 1 operators; ``unary_operators`` / ``binary_operators`` list one
    arity each, with PySR's defaults for the one left at None: no unary operator, and the four
    binary ones (so ``binary_operators=["+", "*"]`` alone means exactly ``+`` and ``*``, as in
    PySR). Giving ``operators`` together with either of the others is an error. Returns None
    when nothing is restricted (all of Table 1).

    Raises
    ------
    ValueError
        An unknown name, a name of the wrong arity, a string instead of a list, or both styles.
    """
    if operators is None and unary_operators is None and binary_operators is None:
        return None
    if operators is not None and (unary_operators is not None or binary_operators is not None):
        raise ValueError("give either operators=[...] or unary_operators/binary_operators, not both")

    def names(value: object, what: str, arity_wanted: int | None) -> set[str]:
        if isinstance(value, str) or not hasattr(value, "__iter__"):
            raise ValueError(f"{what} must be a list of operator names, got {value!r}")
        return {canonical_operator(v, arity_wanted, what, define=True) for v in value}  # type: ignore[attr-defined]

    if operators is not None:
        chosen = names(operators, "operators", None)
    else:
        chosen = set() if unary_operators is None else names(unary_operators, "unary_operators", 1)
        chosen |= set(BINARY) if binary_operators is None else names(binary_operators, "binary_operators", 2)
    if not chosen:
        raise ValueError("the operator list is empty: allow at least one operator")
    out = tuple(n for n in OPERATORS if n in chosen)
    return None if set(out) == set(UNARY + BINARY) else out


def mutation_uses_only(op: str, operand_symbols: tuple[str, ...] | None, allowed: frozenset[str]) -> bool:
    """Whether a mutation (``op``, reversed ``r``-ops included, and its operand's symbols) uses only
    operators in ``allowed``; leaves and the ``root`` mutation always pass."""
    base = op[1:] if op.startswith("r") and op[1:] in BINARY else op
    if base != "root" and base not in allowed:
        return False
    return operand_symbols is None or all(s in allowed or s not in OPERATORS for s in operand_symbols)
