"""Forward-mode derivatives of prefix expressions with respect to their constants, in numpy.

Each node carries its value ``[b]`` and the Jacobian of that value with respect to the constants
*of its own subtree* ``[k, b]``. Because a subtree is a contiguous slice of the prefix sequence,
its constants are a contiguous slice of ``Expression.constants``, so a binary node's Jacobian is
the two children's Jacobians (each scaled by its partial derivative) stacked, left over right,
and no zero rows are ever carried. A constant leaf has the Jacobian ``[[1]]`` (broadcast over
rows); a subtree without constants has none.

The partial derivatives are the operator table's (``Operator.derivative`` in
:mod:`dgsr.core.operators`). Used by :mod:`dgsr.core.constants` for BFGS gradients and
Levenberg-Marquardt Jacobians, and by :mod:`dgsr.core.inner_fit` without the compiled kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, OPERATORS, Array, BinaryDerivative, UnaryDerivative

# Read-only views of the table's derivatives, under the names other modules import: the
# definitions live in dgsr.core.operators only.
#: Unary partials ``d out / d a`` given the argument ``a`` and the value ``out = f(a)``.
UNARY_DERIVATIVES: MappingProxyType[str, UnaryDerivative] = MappingProxyType(
    {name: op.derivative for name, op in OPERATORS.items() if op.arity == 1})
#: Binary partials ``(d out / d a, d out / d b)`` given ``a``, ``b`` and ``out = f(a, b)``.
BINARY_DERIVATIVES: MappingProxyType[str, BinaryDerivative] = MappingProxyType(
    {name: op.derivative for name, op in OPERATORS.items() if op.arity == 2})
#: Every operator's partial derivatives, keyed by operator name.
DERIVATIVES: MappingProxyType[str, UnaryDerivative | BinaryDerivative] = MappingProxyType(
    {name: op.derivative for name, op in OPERATORS.items()})

_CONST, _VAR, _UNARY, _BINARY = range(4)
_UNIT = np.ones((1, 1))
_UNIT.flags.writeable = False


@dataclass(frozen=True)
class Program:
    """An expression compiled once into evaluation steps (reverse prefix order).

    Fitting evaluates one structure hundreds of times with different constants; compiling
    removes the per-symbol dictionary lookups and string tests from that loop.
    """

    steps: tuple[tuple, ...]
    n_constants: int


def compile_expression(expr: Expression) -> Program:
    """Compile ``expr`` (non-empty) into a :class:`Program`."""
    if expr.is_empty:
        raise ValueError("cannot compile the empty expression")
    steps = []
    ci = expr.n_constants
    for s in reversed(expr.symbols):
        if s == CONSTANT:
            ci -= 1
            steps.append((_CONST, ci, None))
        elif s in OPERATORS:
            op = OPERATORS[s]
            kind = _UNARY if op.arity == 1 else _BINARY
            steps.append((kind, op.numpy_fn, op.derivative))
        else:
            steps.append((_VAR, int(s[1:]), None))
    return Program(tuple(steps), expr.n_constants)


def _scaled(partial: Array, jac: np.ndarray) -> np.ndarray:
    if isinstance(partial, float):
        return jac if partial == 1.0 else partial * jac
    return partial * jac


def run_program(
    program: Program, theta: np.ndarray, columns: np.ndarray, *, jacobian: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """Values ``[n_rows]`` and, if asked, the Jacobian ``[n_constants, n_rows]`` at ``theta``.

    Non-finite values propagate (numpy warnings are silenced here); callers decide what a
    non-finite value or derivative means. ``columns`` is ``[n_features, n_rows]``.
    """
    n_rows = columns.shape[1]
    vals: list = []
    jacs: list = []
    with np.errstate(all="ignore"):
        for kind, arg, deriv in program.steps:
            if kind == _CONST:
                vals.append(theta[arg])
                jacs.append(_UNIT if jacobian else None)
            elif kind == _VAR:
                vals.append(columns[arg])
                jacs.append(None)
            elif kind == _UNARY:
                a = vals[-1]
                out = arg(a)
                vals[-1] = out
                ja = jacs[-1]
                if ja is not None:
                    jacs[-1] = deriv(a, out) * ja
            else:
                a, ja = vals.pop(), jacs.pop()
                b, jb = vals[-1], jacs[-1]
                out = arg(a, b)
                vals[-1] = out
                if ja is not None or jb is not None:
                    da, db = deriv(a, b, out)
                    if jb is None:
                        jacs[-1] = _scaled(da, ja)
                    elif ja is None:
                        jacs[-1] = _scaled(db, jb)
                    else:
                        ja, jb = _scaled(da, ja), _scaled(db, jb)
                        ka = ja.shape[0]
                        # Either side may be row-constant ([k, 1]); assignment broadcasts it.
                        stacked = np.empty((ka + jb.shape[0], max(ja.shape[1], jb.shape[1])))
                        stacked[:ka] = ja
                        stacked[ka:] = jb
                        jacs[-1] = stacked
    value = vals[0]
    if np.ndim(value) == 0:
        value = np.full(n_rows, value, dtype=np.float64)
    if not jacobian:
        return value, None
    jac = jacs[0]
    if jac is None:
        return value, np.zeros((0, n_rows))
    if jac.shape[1] != n_rows:
        jac = np.broadcast_to(jac, (jac.shape[0], n_rows))
    return value, jac


def value_and_jacobian(expr: Expression, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values ``[n_rows]`` of ``expr`` and their Jacobian ``[n_constants, n_rows]``.

    ``columns`` is data as from :func:`dgsr.core.evaluate.as_columns`; entries may be non-finite
    where the expression or its derivative is undefined.
    """
    theta = np.asarray(expr.constants, dtype=np.float64)
    value, jac = run_program(compile_expression(expr), theta, columns)
    assert jac is not None
    return value, jac
