"""A power of a chain's own argument times the chain: ``x**3/(exp(b*x) - 1)``, ``x*exp(-b*x)``.

A chain (:mod:`~dgsr.policies.semantic.parametric_forms`) is ``a*f(g(b*u + c)) + d`` for one
argument ``u``: a variable, or a dimensionless group of a fit with units. Many laws of one
argument are a power of it times such a chain: Planck's spectrum ``x**3/(exp(x) - 1)``, a
gamma-shaped response ``t*exp(-k*t)``, Rayleigh's ``x*exp(-x**2)``, a squared sinc
``sin(x)**2/x**2``. No chain fitted to ``y`` takes them whole, and the search, which would have
to put ``u**k`` beside a chain fitted to ``y`` rather than to ``y/u**k``, rarely builds them.

:func:`power_chains` fits the chains over ``u`` to ``y/u**k`` for a few small integer powers
``k``, refits ``u**k*chain`` to ``y`` and keeps it where it explains ``y`` better than the best
chain over ``u`` alone. Dividing by ``u**k`` multiplies a row's noise by ``1/|u**k|``, so the
chains are screened without the quarter of the rows where ``|u**k|`` is smallest: at 1% noise,
``t**2*exp(-0.8*t)`` on ``t`` from 0.1 is otherwise lost to the first rows' noise. Nothing here
names a law: the powers are the integers from -2 to 3, tried on every fit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.inner_fit import fit_inner_constants
from dgsr.policies.semantic.parametric_forms import affine_loss, best_chains

__all__ = ["POWERS", "power_chains"]

#: The powers of the argument tried: a prefactor beyond a cube, or a half power, is rare in a
#: law of one argument, and each power costs one more screening of the chains.
POWERS = (1, 2, 3, -1, -2)
#: The share of the rows, those with the smallest ``|u**k|``, left out of the chains' screening.
_NOISIEST = 0.25
#: Levenberg-Marquardt steps of the refit of ``u**k*chain`` to ``y``.
_REFIT_STEPS = 20


def _power(argument: Expression, k: int) -> Expression:
    """``argument**k`` written with ``mul``, ``sq`` and ``inv``."""
    base = {1: argument, 2: Expression.combine("sq", argument),
            3: Expression.combine("mul", argument, Expression.combine("sq", argument))}[abs(k)]
    return base if k > 0 else Expression.combine("inv", base)


def power_chains(argument: int | Expression, columns: np.ndarray, y: np.ndarray, allowed: Iterable[str],
                 keep: int = 1) -> list[Expression]:
    """``u**k*chain``, refitted to ``y``, for each power ``k`` of :data:`POWERS` and each of the
    ``keep`` chains over the argument ``u`` (a variable's index, or an expression of the columns)
    that explain ``y/u**k`` best, and its best one-operator chain (at noise, a two-operator chain
    bends to the noise and outscores the law's one): those that explain ``y`` better than the best
    chain over ``u`` fitted to ``y``, best first."""
    allowed = frozenset(allowed)
    if not {"mul", "sq", "inv"} <= allowed or len(y) < 8 or not np.all(np.isfinite(y)) or np.ptp(y) <= 0:
        return []
    u = Expression.variable(argument) if isinstance(argument, int) else argument
    with np.errstate(all="ignore"):
        values = evaluate_columns(u, columns)
    if not np.all(np.isfinite(values)) or np.any(values == 0.0):
        return []
    plain = best_chains([argument], columns, y, allowed, [], 1)
    bar = min((affine_loss(c, columns, y) for c in plain[:1]), default=math.inf)
    found: list[tuple[float, Expression]] = []
    for k in POWERS:
        with np.errstate(all="ignore"):
            power = values ** k
            target = y / power
        if not (np.all(np.isfinite(target)) and np.all(np.isfinite(power))) or np.ptp(target) <= 0:
            continue
        rows = np.abs(power) >= np.quantile(np.abs(power), _NOISIEST)
        for chain in best_chains([argument], columns[:, rows], target[rows], allowed, [], keep):
            start = Expression.combine("mul", _power(u, k), chain)
            form = fit_inner_constants(start, columns, y, steps=_REFIT_STEPS).expression
            loss = affine_loss(form, columns, y)
            if loss < bar:
                found.append((loss, form))
    found.sort(key=lambda t: t[0])
    return [form for _, form in found]
