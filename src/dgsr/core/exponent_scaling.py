"""Power-of-two scaling of the data for the search, and the exact map back to the user's units.

Squares of values near 1e155 overflow float64 and variances of values near 1e-160 underflow, so
the estimator searches on ``x_i / 2**e_i`` and ``y / 2**e_y`` with every column brought near 1
(docs/DESIGN.md, "Numeric range"). Powers of two make the scaling and its inverse exact: multiplying a
float by ``2**k`` only changes its exponent. The search itself never knows about it.

A found expression ``f`` on scaled data means ``y = 2**e_y * f(x_0 / 2**e_0, ...)`` in user units.
:meth:`Scaling.to_user` rewrites that with the powers of two folded into the expression's own
constants where this is exact (``c*x`` on scaled data becomes ``c'*x`` with ``c' = c*2**(e_y-e_0)``),
and otherwise keeps explicit factors, so the reported formula is always exactly the searched one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, arity, is_variable, variable_index, variable_symbol

#: Columns whose largest magnitude already lies in [2**-30, 2**30) are searched as given, so
#: ordinary data (and every result on it) is exactly what it was before scaling existed.
_MODERATE = (2.0**-30, 2.0**30)
#: A target whose standard deviation is below this many ulps of its largest value is constant:
#: its spread is rounding noise (a relative, not an absolute, test of the variance).
_CONSTANT_ULPS = 16.0


@dataclass(frozen=True)
class Scaling:
    """Exponents of the powers of two that divide each column of ``X`` and ``y`` for the search."""

    x_exponents: tuple[int, ...]
    y_exponent: int

    @property
    def is_identity(self) -> bool:
        return self.y_exponent == 0 and not any(self.x_exponents)

    def scale_X(self, X: np.ndarray) -> np.ndarray:
        """``X`` in the search's units (exact: only exponents change, bar underflow of tiny values)."""
        if not any(self.x_exponents):
            return np.asarray(X, dtype=np.float64)
        with np.errstate(all="ignore"):
            return np.ldexp(np.asarray(X, dtype=np.float64), -np.asarray(self.x_exponents, dtype=np.int32))

    def scale_y(self, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.ldexp(np.asarray(y, dtype=np.float64), -self.y_exponent)

    def unscale_y(self, values: np.ndarray) -> np.ndarray:
        """Predictions back in the user's units (inf where they leave the float range)."""
        with np.errstate(all="ignore"):
            return np.ldexp(np.asarray(values, dtype=np.float64), self.y_exponent)

    def unscale_loss(self, mse: float) -> float:
        """A squared error in the user's units (inf or 0 when it leaves the float range)."""
        with np.errstate(all="ignore"):
            return float(np.ldexp(mse, 2 * self.y_exponent))

    def to_user(self, expr: Expression) -> Expression:
        """The expression in the user's units: ``y = 2**e_y * expr(x / 2**e)``, exactly.

        Powers of two are folded into existing constants where the product is exact; where that
        is impossible (a constant would leave the float range) every variable is written as
        ``2**-e_i * x_i`` and the whole as ``2**e_y * (...)``, whose constants are all exact.
        """
        if self.is_identity or expr.is_empty:
            return expr
        try:
            folded = _Folder(self.x_exponents).fold(expr, self.y_exponent)
        except _Inexact:
            folded = None
        return folded if folded is not None else self._explicit(expr)

    def _explicit(self, expr: Expression) -> Expression:
        out = expr.with_variables({i: Expression(("mul", CONSTANT, variable_symbol(i)), (math.ldexp(1.0, -e),))
                                   for i, e in enumerate(self.x_exponents) if e})
        if self.y_exponent:
            out = Expression.combine("mul", Expression.constant(math.ldexp(1.0, self.y_exponent)), out)
        return out


def fit_scaling(X: np.ndarray, y: np.ndarray, names: Sequence[str]) -> Scaling:
    """The scaling for ``X`` [n_rows, n_features] and ``y``: each column's largest magnitude is
    brought into [1, 2) unless it is already moderate.

    Raises
    ------
    ValueError
        A column (or ``y``) whose nonzero values are all subnormal (below 2.2e-308 in magnitude):
        such numbers carry too few significant digits for any fit, and no scaling recovers them.
    """
    tops = np.maximum(_column_extreme(X, np.max), -_column_extreme(X, np.min)) if X.shape[0] else np.zeros(X.shape[1])
    x_exp = tuple(_exponent_of(float(tops[j]), f"column {names[j]!r} of X") for j in range(X.shape[1]))
    return Scaling(x_exp, _exponent(y, "the target y"))


def is_constant_target(y_scaled: np.ndarray) -> bool:
    """True when the spread of ``y`` is rounding noise relative to its magnitude."""
    top = float(np.max(np.abs(y_scaled)))
    if top == 0.0:
        return True
    return float(np.std(y_scaled)) <= _CONSTANT_ULPS * np.finfo(np.float64).eps * top


def _column_extreme(X: np.ndarray, reduce: Callable[..., np.ndarray], block: int = 256) -> np.ndarray:
    """``reduce(X, axis=0)`` (max or min of each column) without a temporary of the data's size.

    On a C-ordered array a reduction along the rows works 20 values at a time for 20 columns;
    ``block`` rows seen as one long row make it work on ``20 * block`` values at once (3x faster
    on ten million rows). A Fortran-ordered array reduces column by column, fast as it is."""
    n = (len(X) // block) * block
    if not X.flags.c_contiguous or n == 0:
        return reduce(X, axis=0)
    top = reduce(reduce(X[:n].reshape(-1, block * X.shape[1]), axis=0).reshape(block, X.shape[1]), axis=0)
    return top if n == len(X) else reduce(np.stack([top, reduce(X[n:], axis=0)]), axis=0)


def _exponent(values: np.ndarray, what: str) -> int:
    return _exponent_of(float(np.max(np.abs(values))) if values.size else 0.0, what)


def _exponent_of(top: float, what: str) -> int:
    """The power of two that brings ``top`` (a largest magnitude) into [1, 2), 0 where it is moderate."""
    if top == 0.0 or _MODERATE[0] <= top < _MODERATE[1]:
        return 0
    if top < np.finfo(np.float64).tiny:
        raise ValueError(
            f"{what} holds only values below {np.finfo(np.float64).tiny:.3g} in magnitude (largest "
            f"{top:.3g}): subnormal floats keep too few significant digits to fit. Multiply it by a "
            "large power of ten (e.g. 1e300) before fitting.")
    return math.frexp(top)[1] - 1  # top / 2**e lies in [1, 2)


class _Inexact(Exception):
    """A folded constant would not be exactly representable."""


class _Folder:
    """Rewrites a scaled expression in user units, pushing powers of two into constants.

    Each subtree is represented as ``2**k * h`` with ``h`` an expression of the user's variables;
    products, quotients and powers just add exponents, and a factor is materialised into a
    constant only where needed (at a sum of different exponents, below a function, at the root).
    """

    def __init__(self, x_exponents: Sequence[int]):
        self.x_exponents = x_exponents

    def fold(self, expr: Expression, y_exponent: int) -> Expression:
        h, k = self._walk(expr, 0)
        return self._materialise(h, k + y_exponent)

    def _walk(self, expr: Expression, pos: int) -> tuple[Expression, int]:
        s = expr.symbols[pos]
        if s == CONSTANT:
            return expr.subtree(pos), 0
        if is_variable(s):
            return expr.subtree(pos), -self.x_exponents[variable_index(s)]
        kids = [self._walk(expr, c) for c in expr.children(pos)]
        if arity(s) == 2:
            (a, ka), (b, kb) = kids
            if s == "mul":
                return Expression.combine(s, a, b), ka + kb
            if s == "div":
                return Expression.combine(s, a, b), ka - kb
            # add/sub: one exponent for both sides, preferring a side that absorbs the factor
            if ka == kb:
                return Expression.combine(s, a, b), ka
            for k in (ka, kb):
                fa, fb = self._fold_into(a, ka - k), self._fold_into(b, kb - k)
                if fa is not None and fb is not None:
                    return Expression.combine(s, fa, fb), k
            return Expression.combine(s, self._materialise(a, ka - kb), b), kb
        (a, ka), = kids
        if s == "sq":
            return Expression.combine(s, a), 2 * ka
        if s == "inv":
            return Expression.combine(s, a), -ka
        if s == "sqrt" and ka % 2 == 0:
            return Expression.combine(s, a), ka // 2
        return Expression.combine(s, self._materialise(a, ka)), 0

    def _materialise(self, h: Expression, k: int) -> Expression:
        """``2**k * h`` as one expression: folded into constants of ``h`` where possible, else a new
        ``mul`` node with an exact constant; raises _Inexact when no exact constant exists."""
        if k == 0:
            return h
        folded = self._fold_into(h, k)
        if folded is not None:
            return folded
        return Expression.combine("mul", Expression.constant(_times_power_of_two(1.0, k)), h)

    def _fold_into(self, h: Expression, k: int) -> Expression | None:
        """``2**k * h`` with the factor absorbed by constants of ``h`` that scale all of it (a factor
        of a product, a numerator or denominator, both sides of a sum); None when none can."""
        if k == 0:
            return h
        s = h.symbols[0]
        if s == CONSTANT:
            try:
                return Expression.constant(_times_power_of_two(h.constants[0], k))
            except _Inexact:
                return None
        if s in ("mul", "div", "add", "sub"):
            left, right = (h.subtree(c) for c in h.children(0))
            if s in ("add", "sub"):
                fl = self._fold_into(left, k)
                fr = self._fold_into(right, k) if fl is not None else None
                return Expression.combine(s, fl, fr) if fr is not None else None
            fl = self._fold_into(left, k)
            if fl is not None:
                return Expression.combine(s, fl, right)
            fr = self._fold_into(right, k if s == "mul" else -k)
            if fr is not None:
                return Expression.combine(s, left, fr)
        return None


def _times_power_of_two(value: float, k: int) -> float:
    """``value * 2**k`` when exactly representable, else raises _Inexact."""
    try:
        out = math.ldexp(value, k)
    except OverflowError:
        raise _Inexact from None
    if not math.isfinite(out) or math.ldexp(out, -k) != value:
        raise _Inexact
    return out
