"""Chains fitted to a node's target: the constant inside a nonlinear *factor*.

The library's chains ``op(a*x + b)`` are fitted to ``y``. In a law such as
``x/(exp(x/(2*pi)) - 1)`` the chain sits below a factor: at ``div(x, B)`` the operand must be
``exp(0.159*x)``, but the exponential that explains ``y`` best has another rate, and a
constant fit started from it does not cross to the law's. Here the chains are fitted to the
target that semantic backpropagation gives a node instead, where that target is a function of
one variable (its values change little between neighbouring rows in that variable's order).

Each chain has one shape constant once its outer scale and offset are left to the match
(``exp(a*x)``, ``log(x + c)``, ``sqrt(x + c)``, ``1/(x + c)``, ``(x - c)**2``; for ``sin(a*x + b)``
the phase is solved in closed form for each ``a``). That constant is found on a grid and
refined on finer grids around the best, each value scored by the weighted least-squares fit of the
target on the chain's values (variable projection): no Levenberg-Marquardt, so an expansion
can afford it. The search's own constant fit then refines the child in place.

Nothing here names a law: the shapes are the operator table's unary operators, and which chain
an expansion gets is read off the node's target.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from dgsr.core.expression import Expression

__all__ = ["ChainMemo", "expansion_chains", "one_variable_shares", "target_chain_operands"]

#: Rows a target needs (with weight) before it is read as a function of one variable.
_MIN_ROWS = 20
#: Smoothness (:func:`one_variable_shares`) from which a target counts as a function of one variable.
ONE_VARIABLE = 0.9
#: (target, variable) pairs whose chains one expansion takes at most.
MAX_FITS = 3
#: New fits per expansion of a trial, on average, after the first few (a fit costs about a
#: third of an expansion, 1 ms against 3, and most expansions have qualifying targets).
FIT_SHARE = 0.5
FIRST_FITS = 10
#: Fits a trial keeps (then they are fitted anew).
_MAX_KEPT = 5000
#: A chain joins the expansion's operands when it explains at least this share of the target.
_MIN_SHARE = 0.9
#: Grid points per shape constant; then rounds of a finer grid of _FINE points around the best.
_GRID = 40
_REFINE = 4
_FINE = 9
#: Exponential rates and sine frequencies, as the argument's span over the variable's range.
_RATES = np.geomspace(0.05, 12.0, _GRID // 2)
_CYCLES = np.geomspace(0.1, 6.0, _GRID // 2)
#: Shifts of ``log``, ``sqrt`` and ``1/x``, as a share of the range beyond the variable's edge.
_SHIFTS = np.geomspace(1e-3, 30.0, _GRID // 2)
_CENTRES = np.linspace(-1.0, 2.0, _GRID)
#: The chain operators, in the order ties are broken.
SHAPES = ("exp", "inv", "log", "sqrt", "sq", "sin")


def one_variable_shares(columns: np.ndarray, variables: Iterable[int], targets: np.ndarray,
                        weights: np.ndarray, orders: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """``[targets, variables]``: how nearly each target is a smooth function of each variable, as
    ``1 - sum(d**2) / (2*sum((t - mean)**2))`` over the rows with weight, with ``d`` the steps
    between neighbours in the variable's order (von Neumann's ratio: about 0 for noise, near 1
    for a smooth function); 0 where it cannot be told. ``orders``: each variable's row order,
    kept by the caller for these ``columns`` (filled here)."""
    variables = list(variables)
    out = np.zeros((len(targets), len(variables)))
    if len(variables) == 0 or targets.shape[1] < _MIN_ROWS:
        return out
    usable = (weights > 0) & np.isfinite(targets)
    n = usable.sum(axis=1)
    with np.errstate(all="ignore"):
        t = np.where(usable, targets, 0.0)
        mean = t.sum(axis=1) / n
        total = (np.where(usable, t - mean[:, None], 0.0) ** 2).sum(axis=1)
        for k, v in enumerate(variables):
            order = orders.get(v) if orders is not None else None
            if order is None:
                order = np.argsort(columns[v], kind="stable")
                if orders is not None:
                    orders[v] = order
            ordered, kept = t[:, order], usable[:, order]
            # Only steps between neighbours that both have weight count (a row without one
            # drops its two steps, which can only make the target look less smooth).
            steps = np.where(kept[:, 1:] & kept[:, :-1], np.diff(ordered, axis=1), 0.0)
            share = 1.0 - (steps ** 2).sum(axis=1) / (2.0 * total)
            out[:, k] = np.where(n >= _MIN_ROWS, share, 0.0)
    return np.where(np.isfinite(out), np.clip(out, 0.0, 1.0), 0.0)


def _explained(values: np.ndarray, target: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Share of ``target``'s weighted variance explained by ``a*v + b`` for each row ``v`` of
    ``values`` (``-inf`` where a row is not finite or constant)."""
    with np.errstate(all="ignore"):
        sw = w.sum()
        mt = (w * target).sum() / sw
        tc = target - mt
        mv = (values * w).sum(axis=1, keepdims=True) / sw
        vc = values - mv
        cov = (vc * (w * tc)).sum(axis=1)
        var_v = (vc * vc * w).sum(axis=1)
        share = cov * cov / (var_v * (w * tc * tc).sum())
        ok = np.isfinite(share) & (var_v > 0)
    return np.where(ok, share, -np.inf)


def _sine_explained(rates: np.ndarray, x: np.ndarray, target: np.ndarray, w: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For each frequency ``a``, the share of the target that ``p*sin(a*x) + q*cos(a*x) + c``
    explains (weighted least squares, solved for all frequencies at once), and the phase ``b``
    of that fit written as ``sin(a*x + b)``."""
    with np.errstate(all="ignore"):
        angle = rates[:, None] * x
        sw = w.sum()
        sines, cosines = np.sin(angle), np.cos(angle)
        sines -= (sines * w).sum(axis=1, keepdims=True) / sw
        cosines -= (cosines * w).sum(axis=1, keepdims=True) / sw
        tc = target - (w * target).sum() / sw
        ss, cc, sc = ((a * b * w).sum(axis=1) for a, b in ((sines, sines), (cosines, cosines), (sines, cosines)))
        st, ct = (sines * (w * tc)).sum(axis=1), (cosines * (w * tc)).sum(axis=1)
        det = ss * cc - sc * sc
        p, q = (cc * st - sc * ct) / det, (ss * ct - sc * st) / det
        share = (p * st + q * ct) / (w * tc * tc).sum()
        ok = np.isfinite(share) & (det > 1e-12 * ss * cc)  # ss * cc overflows on huge targets
        phase = np.where(ok, np.arctan2(q, p), 0.0)
    return np.where(ok, share, -np.inf), phase


def _shape_values(shape: str, x: np.ndarray, constants: np.ndarray) -> np.ndarray:
    """``[constants, rows]``: the chain of ``shape`` over ``x`` for each shape constant."""
    c = constants[:, None]
    with np.errstate(all="ignore"):
        if shape == "exp":
            return np.exp(c * (x - x.min()))  # exp(a*x) up to a factor: the match's scale
        if shape == "inv":
            return 1.0 / (x + c)
        if shape == "log":
            return np.log(x + c)
        if shape == "sqrt":
            return np.sqrt(x + c)
        return (x - c) ** 2  # sq


def _grid(shape: str, x: np.ndarray) -> np.ndarray:
    """The shape constants tried for ``x``: rates over its span, shifts beyond its edges."""
    lo, hi = float(x.min()), float(x.max())
    width = hi - lo
    if shape == "exp":
        return np.concatenate([-_RATES[::-1], _RATES]) / width
    if shape == "sin":
        return 2.0 * math.pi * _CYCLES / width
    if shape == "sq":
        return lo + width * _CENTRES
    below = -lo + width * _SHIFTS  # x + c > 0 on the data
    if shape == "inv":
        return np.concatenate([below, -hi - width * _SHIFTS])  # a pole on either side
    return below


def _best_constants(shapes: list[str], x: np.ndarray, target: np.ndarray, w: np.ndarray
                    ) -> dict[str, tuple[float, float, float]]:
    """Per shape, ``(share, constant, phase)`` of its best chain: the grid's best point, then
    finer grids between the best point's neighbours (a rate of 0, a constant, is never tried).
    All shapes but the sine are scored together, one matrix per round."""
    grids = {shape: _grid(shape, x) for shape in shapes}
    best: dict[str, tuple[float, float, float]] = {}
    for _ in range(_REFINE):
        plain = [shape for shape in grids if shape != "sin"]
        scored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if plain:
            values = np.vstack([_shape_values(shape, x, grids[shape]) for shape in plain])
            shares = np.split(_explained(values, target, w), np.cumsum([len(grids[s]) for s in plain])[:-1])
            scored = {shape: (share, np.zeros(len(share))) for shape, share in zip(plain, shares)}
        if "sin" in grids:
            scored["sin"] = _sine_explained(grids["sin"], x, target, w)
        for shape, (shares, phases) in scored.items():
            grid, i = grids.pop(shape), int(np.argmax(shares))
            if not math.isfinite(shares[i]):
                continue
            value = float(grid[i])
            best[shape] = (float(shares[i]), value, float(phases[i]))
            lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
            if lo * hi <= 0 < abs(value) and shape in ("exp", "sin"):
                lo, hi = (value / 2.0, value) if lo * value <= 0 else (value, value * 2.0)
            grids[shape] = np.linspace(lo, hi, _FINE)
    return best


def _chain(shape: str, variable: int, constant: float, phase: float, x: np.ndarray) -> Expression:
    """The chain as an operand expression over ``variable``."""
    v = Expression.variable(variable)
    c = Expression.constant

    def affine(a: float, b: float) -> Expression:
        scaled = Expression.combine("mul", c(a), v)
        return scaled if b == 0.0 else Expression.combine("add", scaled, c(b))

    if shape == "exp":
        # exp(a*x) overflows where a*x is large on the data: shift the argument there.
        shift = -constant * float(x.min()) if abs(constant) * float(np.max(np.abs(x))) > 30.0 else 0.0
        return Expression.combine("exp", affine(constant, shift))
    if shape == "sin":
        return Expression.combine("sin", affine(constant, phase))
    if shape == "sq":
        return Expression.combine("sq", Expression.combine("add", v, c(-constant)))
    return Expression.combine(shape, Expression.combine("add", v, c(constant)))


def target_chain_operands(columns: np.ndarray, target: np.ndarray, weights: np.ndarray, variable: int,
                          allowed: frozenset[str]) -> list[Expression]:
    """The chains over ``variable`` of each allowed shape (:data:`SHAPES`) that explain at least
    90% of ``target`` (weighted, up to a scale and an offset), best first."""
    usable = weights > 0
    x, t, w = columns[variable][usable], target[usable], weights[usable]
    if len(x) < _MIN_ROWS or not (np.all(np.isfinite(x)) and np.all(np.isfinite(t))) or np.ptp(x) <= 0:
        return []
    shapes = [shape for shape in SHAPES
              if shape in allowed and (shape in ("exp", "sin") or "add" in allowed)]
    found: list[tuple[float, int, Expression]] = []
    for shape, (share, constant, phase) in _best_constants(shapes, x, t, w).items():
        if share >= _MIN_SHARE and math.isfinite(constant):
            found.append((-share, SHAPES.index(shape), _chain(shape, variable, constant, phase, columns[variable])))
    return [expr for _, _, expr in sorted(found, key=lambda f: (f[0], f[1]))]


@dataclass
class ChainMemo:
    """One trial's per-expansion chains: those fitted per (variable, target), and the counts
    that bound new fits to :data:`FIT_SHARE` per expansion (a count, not a clock: a fit with a
    fixed evaluation budget stays reproducible)."""

    found: dict = field(default_factory=dict)
    orders: dict = field(default_factory=dict)
    expansions: int = 0
    fits: int = 0


def expansion_chains(columns: np.ndarray, targets: np.ndarray, weights: np.ndarray, factor: np.ndarray,
                     variables: list[int], allowed: frozenset[str], memo: ChainMemo) -> list[Expression]:
    """The chains of one expansion: for up to :data:`MAX_FITS` (target, variable) pairs where a
    target of a factor (``factor``: a ``mul``, ``div`` or ``rdiv`` mutation's operand) is most
    nearly a function of one of ``variables`` (at least :data:`ONE_VARIABLE`), the chains
    :func:`target_chain_operands` fits, or ``memo`` kept. A chain as a term needs none of this:
    the library's chains are fitted to ``y`` beside linear terms."""
    memo.expansions += 1
    at = np.flatnonzero(factor)
    if at.size == 0 or not variables:
        return []
    targets, weights = targets[at], weights[at]
    shares = one_variable_shares(columns, variables, targets, weights, memo.orders)
    order = np.argsort(-shares, axis=None, kind="stable")
    out: list[Expression] = []
    seen: set[tuple[int, bytes]] = set()
    for flat in order.tolist():
        t, k = divmod(flat, len(variables))
        if shares[t, k] < ONE_VARIABLE or len(seen) >= MAX_FITS:
            break
        key = (variables[k], targets[t].tobytes() + weights[t].tobytes())
        if key in seen:
            continue
        seen.add(key)
        if key not in memo.found:
            if memo.fits >= FIRST_FITS + FIT_SHARE * memo.expansions:
                continue
            if len(memo.found) >= _MAX_KEPT:
                memo.found.clear()
            memo.fits += 1
            memo.found[key] = target_chain_operands(columns, targets[t], weights[t], variables[k], allowed)
        out.extend(memo.found[key])
    return out
