"""Powers of ``y`` that are sums of a few products of simple functions: linearising transforms.

Scientists linearise. Lineweaver and Burk plot ``1/v`` against ``1/s``; the law of cosines is
``c**2 = a**2 + b**2 - 2*a*b*cos(g)``; a relativistic energy is ``E**2 = p**2*c**2 + m**2*c**4``;
Compton's scattered energy is ``1/E' = 1/E + (1 - cos(t))/(m*c**2)``. Each law is
``y = (c0 + sum_k c_k*f_k)**(1/p)`` for a small power ``p``, where every ``f_k`` is a product of
at most two simple functions of the variables (the variable, its square, root, reciprocal, sine
or cosine). No chain of one variable holds it, and the additive proposals combine library
operands, which hold few such products. Here, for each ``p``, ``|y|**p`` is fitted by the best
single products, pairs and triples of products (:func:`_selections`), each solved by least
squares on the even rows, taken back to ``y`` and scored on the odd rows by an information
criterion that charges each coefficient. The best few that leave less than a tenth of a percent
of ``y``'s variance there, and whose error on the fit's own rows is not a smooth function of the
variables (an approximation's is; noise is not), become operands, and the search's constant fits
refine them. A ratio of two such sums, ``y = (c0 + sum a_k*f_k)/(1 + sum b_j*g_j)`` (the orbit
``p/(1 + e*cos(t))``, Langmuir-Hinshelwood rates), is linear in its coefficients once multiplied
out (Levy 1959), so each product also enters as ``-y*g`` where ``div`` is allowed. Nothing here
names a law.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy.spatial import cKDTree

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.policies.semantic.power_law import MAX_EXPONENT, monomial
from dgsr.policies.semantic.relevance import relevance

#: The powers ``p`` for which ``y**p`` is fitted as a sum (1: ``y`` itself).
POWERS = (1.0, -1.0, 2.0, -2.0, 0.5, -0.5)
#: The forms kept: the best by the criterion, and the next ones within this many nats of it.
KEEP, _CLOSE = 2, 2.0
_MIN_ROWS = 20
#: A form must leave less than this share of ``y``'s variance on the held-out rows.
_MAX_SHARE = 1e-3
#: Errors below this share of the variance are all rounding: there the charge per coefficient decides.
_FLOOR = 1e-12
#: Single products tried alone, pairs tried alone, and pairs each tried with a third product.
_SINGLES, _PAIRS, _PAIRS_EXTENDED = 3, 4, 24
#: A product whose part outside the others' span has less than this share of its variance adds nothing.
_COLLINEAR = 1e-8
#: A form whose in-sample residual correlates above this with its nearest neighbour's (rows near in
#: the variables) leaves structure it cannot fit: an approximation, not the law (noise is white).
_NEIGHBOUR_CORRELATION = 0.5
#: A ratio whose denominator's other terms reach this many times its constant is a product's.
_DEGENERATE = 1e3
#: The rows (at most) on which the neighbours are found, once per call.
_NEIGHBOUR_ROWS = 2000
#: A power factor ``x**e`` of ``y``: the part of ``log|y|`` that an additive fit gives ``x`` leaves at
#: most this share of its spread outside ``e*log|x|``, and ``e`` is this near a nonzero multiple of a half.
_FACTOR_SHAPE, _FACTOR_EXPONENT = 0.05, 0.1
#: Variables (most related first) that the additive fit of ``log|y|`` takes at most.
_FACTOR_VARIABLES = 8
#: The unary operator that takes ``z = y**p`` back to ``y``, per ``p`` (none for 1).
_BACK = {-1.0: ("inv",), 2.0: ("sqrt",), -2.0: ("sqrt", "inv"), 0.5: ("sq",), -0.5: ("sq", "inv")}


def _simple_functions(columns: np.ndarray, variables: Sequence[int], allowed: frozenset[str]) -> list[Expression]:
    """Per variable: the variable, its square, root (a positive variable), reciprocal and
    reciprocal's square (a variable of one sign), sine, cosine and their squares, those the
    operators allow. The squares are functions of their own so that a product holds one beside
    another function (``cos(t)/g**2``, ``a*cos(t)**2``)."""
    out = []
    for i in variables:
        v, x = columns[i], Expression.variable(i)
        out.append(x)
        if "sq" in allowed:
            out.append(Expression.combine("sq", x))
        if "sqrt" in allowed and np.all(v > 0):
            out.append(Expression.combine("sqrt", x))
        if "inv" in allowed and (np.all(v > 0) or np.all(v < 0)):
            out.append(Expression.combine("inv", x))
            if "sq" in allowed:
                out.append(Expression.combine("sq", Expression.combine("inv", x)))
        for op in ("cos", "sin"):
            if op in allowed:
                out.append(Expression.combine(op, x))
                if "sq" in allowed:
                    out.append(Expression.combine("sq", Expression.combine(op, x)))
    return out


def _products(columns: np.ndarray, variables: Sequence[int], allowed: frozenset[str]
              ) -> tuple[list[Expression], np.ndarray]:
    """The simple functions, their squares (where ``sq`` is allowed) and every product of two of
    them, with their values ``[n_products, n_rows]`` (the finite ones only)."""
    simple = _simple_functions(columns, variables, allowed)
    with np.errstate(all="ignore"):
        values = [evaluate_columns(f, columns) for f in simple]
    exprs, rows = list(simple), list(values)
    for a, b in itertools.combinations_with_replacement(range(len(simple)), 2):
        if a == b and "sq" not in allowed:
            continue
        exprs.append(Expression.combine("sq", simple[a]) if a == b else Expression.combine("mul", simple[a], simple[b]))
        with np.errstate(all="ignore"):
            rows.append(values[a] * values[b])
    table = np.vstack(rows)
    finite = np.all(np.isfinite(table), axis=1)
    return [e for e, k in zip(exprs, finite) if k], table[finite]


def _sum_expression(exprs: Sequence[Expression], coefficients: np.ndarray) -> Expression:
    """``c0 + c1*f1 + ...`` with the fitted coefficients as the expression's constants."""
    out = Expression.constant(float(coefficients[0]))
    for f, c in zip(exprs, coefficients[1:]):
        out = Expression.combine("add", out, Expression.combine("mul", Expression.constant(float(c)), f))
    return out


def linearized_operands(columns: np.ndarray, y: np.ndarray, variables: Sequence[int],
                        allowed: frozenset[str], size_penalty: float = 0.03, ratio_terms: bool = True,
                        scale: np.ndarray | None = None) -> list[Expression]:
    """Up to :data:`KEEP` forms ``(c0 + sum_k c_k*f_k)**(1/p)`` over ``variables`` (indices into
    ``columns`` ``[n_features, n_rows]``) that explain held-out rows of ``y`` best (see the
    module's docstring); [] where none leaves less than :data:`_MAX_SHARE` of ``y``'s variance,
    or ``add`` and ``mul`` are not allowed. ``scale``: where ``y`` is another target divided by
    a factor, the factor's values; each row's error then counts as the factor times it."""
    if not {"add", "mul"} <= allowed or not variables or columns.shape[1] < _MIN_ROWS:
        return []
    y = np.asarray(y, dtype=np.float64)
    scale = np.ones(len(y)) if scale is None else np.abs(np.asarray(scale, dtype=np.float64))
    with np.errstate(all="ignore"):
        variance = float(np.var(scale * y))
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(scale)) and math.isfinite(variance) and variance > 0):
        return []
    exprs, values = _products(columns, sorted(variables), allowed)
    if not exprs:
        return []
    sizes = np.array([e.size for e in exprs], dtype=np.float64)
    fit, test = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    neighbours = _nearest_neighbours(columns[sorted(variables)][:, fit])
    sign = 1.0 if np.all(y > 0) else -1.0 if np.all(y < 0) else 0.0
    ratios = ratio_terms and "div" in allowed
    scored: list[tuple[float, np.ndarray, Expression]] = []
    for p in POWERS:
        if p != 1.0 and (sign == 0.0 or not all(op in allowed for op in _BACK[p])):
            continue  # a power of a y that changes sign has no one inverse
        with np.errstate(all="ignore"):
            z = y if p == 1.0 else (sign * y) ** p
            if not np.all(np.isfinite(z)) or float(np.var(z[fit])) <= 0:
                continue
            # An error dy in y is p*y**(p-1)*dy in z: weighing each row by |y|**(1-p) gives
            # every row the weight it has in y (as Sanathanan and Koerner weigh a ratio's rows).
            weights = scale * np.abs(y) ** (1.0 - p)
            weights = weights / np.mean(weights)
        if not (np.all(np.isfinite(weights)) and np.all(weights > 0)):
            continue
        selections = _selections(values[:, fit], sizes, z[fit], weights[fit], size_penalty)
        pool = values
        if ratios and p == 1.0:
            # Each product g also enters as -y*g, a term of a denominator: y*(1 + sum b_j*g_j) =
            # c0 + sum a_k*f_k is linear in its coefficients (Levy's linearisation). Selected apart:
            # the -y*g columns carry y's noise, and would crowd the sums out of the selection.
            # Each g is centred: z*mean(g) is z itself, and would let any near-constant g "explain" it.
            centres = np.mean(values[:, fit], axis=1, keepdims=True)
            pool = np.vstack([values, -z * (values - centres)])
            selections += [c for c in _selections(pool[:, fit], np.concatenate([sizes, sizes + 1]), z[fit],
                                                  weights[fit], size_penalty) if max(c) >= len(exprs)]
        for chosen in selections:
            found = _scored(exprs, chosen, pool, z, weights, y, scale, p, sign, fit, test, variance, neighbours,
                            centres if pool is not values else None)
            if found is not None:
                scored.append(found)
    scored.sort(key=lambda s: s[0])
    out: list[tuple[float, np.ndarray, Expression]] = []
    for score, y_hat, e in scored:
        if len(out) == KEEP or score > scored[0][0] + _CLOSE:
            break
        if all(not np.allclose(y_hat, o[1], rtol=1e-9, atol=0.0) for o in out):  # the same form by another path
            out.append((score, y_hat, e))
    return [e for _, _, e in out]


def _selections(values: np.ndarray, sizes: np.ndarray, z: np.ndarray, weights: np.ndarray,
                size_penalty: float) -> list[list[int]]:
    """The term sets tried for ``z``: the :data:`_SINGLES` products that explain most of it alone,
    the :data:`_PAIRS` best pairs of products (all pairs are solved at once from their inner
    products: forward selection is myopic, and the best single product of a two-term law is
    rarely one of its terms), and each of the :data:`_PAIRS_EXTENDED` best pairs with the third
    product that adds most.
    Each is scored by ``-log10`` of the share of ``z``'s variance it leaves in weighted least
    squares (row weights ``weights``), less ``size_penalty`` per node."""
    with np.errstate(all="ignore"):
        w2 = weights * weights / float(np.sum(weights * weights))
        centred = (values - (values @ w2)[:, None]) * weights  # weighted, about the weighted means
        zc = (z - float(z @ w2)) * weights
        total = float(zc @ zc)
        # Unit columns: the products' scales differ by many decades (1/x**4 beside cos(x)).
        norms = np.sqrt(np.einsum("ij,ij->i", centred, centred))
        usable = np.isfinite(norms) & (norms > 0)
        unit = np.where(usable[:, None], centred / np.where(usable, norms, 1.0)[:, None], 0.0)
        gram = unit @ unit.T
        along = unit @ zc

        def score(explained: np.ndarray, size: np.ndarray) -> np.ndarray:
            left = np.clip(1.0 - explained / total, 1e-12, 1.0)
            return np.where(np.isfinite(left), -np.log10(left) - size_penalty * size, -np.inf)

        alone = score(np.where(usable, along * along, np.nan), sizes)
        # Two terms i, j: the explained sum of squares b' G^-1 b of the 2x2 system, for every pair.
        det = 1.0 - gram * gram
        explained = (along[:, None] ** 2 - 2 * gram * along[:, None] * along[None, :] + along[None, :] ** 2) / det
        well_posed = (det > _COLLINEAR) & usable[:, None] & usable[None, :]
        both = score(np.where(well_posed, explained, np.nan), sizes[:, None] + sizes[None, :] + 1)
        both[np.tril_indices(len(norms))] = -np.inf
    singles = [[int(i)] for i in np.argsort(-alone, kind="stable")[:_SINGLES] if np.isfinite(alone[i])]
    flat = np.argsort(-both, axis=None, kind="stable")[:_PAIRS_EXTENDED]
    pairs = [[int(k // len(norms)), int(k % len(norms))] for k in flat if np.isfinite(both.flat[k])]
    return singles + pairs[:_PAIRS] + [t for t in (_with_third(unit, zc, pair) for pair in pairs) if t is not None]


def _with_third(unit: np.ndarray, zc: np.ndarray, pair: list[int]) -> list[int] | None:
    """``pair`` and the product whose part outside the pair's span explains most of what the pair
    leaves of ``zc`` (None where none adds anything); ``unit``: the products' centred values,
    each of norm 1 (or 0 where unusable)."""
    with np.errstate(all="ignore"):
        basis, _ = np.linalg.qr(unit[pair].T)  # [n_rows, 2], orthonormal
        residual = zc - basis @ (basis.T @ zc)
        outside = unit - (unit @ basis) @ basis.T
        norms = np.einsum("ij,ij->i", outside, outside)
        gain = np.where(norms > _COLLINEAR, (outside @ residual) ** 2 / norms, -1.0)
    gain = np.where(np.isfinite(gain), gain, -1.0)
    gain[pair] = -1.0
    k = int(np.argmax(gain))
    return [*pair, k] if gain[k] > 0 else None


def _scored(exprs: list[Expression], chosen: list[int], values: np.ndarray, z: np.ndarray, weights: np.ndarray,
            y: np.ndarray, scale: np.ndarray, p: float, sign: float, fit: np.ndarray, test: np.ndarray, variance: float,
            neighbours: tuple[np.ndarray, np.ndarray] | None = None, centres: np.ndarray | None = None
            ) -> tuple[float, np.ndarray, Expression] | None:
    """The held-out criterion of ``z ~ c0 + sum c_k*f_k`` (solved on the ``fit`` rows by least
    squares weighted by ``weights``) taken back to ``y``, on the ``test`` rows, its values and its
    expression; None where the sum leaves ``z``'s sign on some row (no power of it is ``y``'s), the
    fit is poor, or what it leaves on the ``fit`` rows is structure (:func:`_leaves_structure`;
    ``neighbours`` from :func:`_nearest_neighbours`)."""
    n_products = len(exprs)
    top, bottom = [i for i in chosen if i < n_products], [i - n_products for i in chosen if i >= n_products]
    design = np.vstack([np.ones(len(y)), values[top], values[[n_products + j for j in bottom]]])
    with np.errstate(all="ignore"):
        row_weights, denominator, constant = weights, 1.0, 1.0
        for _ in range(2 if bottom else 1):
            coefficients = _weighted_solve(design[:, fit], z[fit], row_weights[fit])
            if coefficients is None:
                return None
            if bottom:
                # The denominator 1 + sum b*(g - mean g) is constant + sum b*g. A pole on the data is
                # left out, and so is a constant that does not count (a product in disguise, the
                # sums' to find). The linearised rows carry the denominator as a weight: one
                # Sanathanan-Koerner step divides it out.
                b = coefficients[1 + len(top):]
                constant = 1.0 - float(b @ centres[bottom, 0])
                denominator = constant + b @ values[bottom]
                if not (np.all(np.isfinite(denominator)) and (np.all(denominator > 0) or np.all(denominator < 0))
                        and abs(constant) * _DEGENERATE > float(np.max(np.abs(denominator - constant)))):
                    return None
                row_weights = weights / np.abs(denominator)
        z_hat = (coefficients[:1 + len(top)] @ design[:1 + len(top)]) / denominator
        if p != 1.0 and not np.all(z_hat > 0):
            return None
        y_hat = z_hat if p == 1.0 else sign * z_hat ** (1.0 / p)
        mse = float(np.mean((scale[test] * (y[test] - y_hat[test])) ** 2))
    if not math.isfinite(mse) or mse > _MAX_SHARE * variance or not np.all(np.isfinite(coefficients)):
        return None
    if neighbours is not None:
        with np.errstate(all="ignore"):
            residual = (z[fit] - coefficients @ design[:, fit]) * weights[fit]
        if _leaves_structure(residual, (z[fit] - float(np.mean(z[fit]))) * weights[fit], neighbours):
            return None
    score = len(test) * math.log(max(mse / variance, _FLOOR)) + len(coefficients) * math.log(len(test))
    if bottom:  # written with the denominator's constant 1 (centring moved it)
        form = Expression.combine("div", _sum_expression([exprs[i] for i in top], coefficients[:1 + len(top)] / constant),
                                  _sum_expression([exprs[j] for j in bottom], np.concatenate([[1.0], b / constant])))
    else:
        form = _sum_expression([exprs[i] for i in top], coefficients)
    for op in _BACK.get(p, ()):
        form = Expression.combine(op, form)
    return score, y_hat, form


def _weighted_solve(design: np.ndarray, z: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    """Least squares of ``z`` on the rows of ``design`` ``[n_terms, n_rows]`` weighted by
    ``weights``, on columns of one scale; None where the solve fails."""
    scale = np.max(np.abs(design), axis=1)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    try:
        coefficients = np.linalg.lstsq((design / scale[:, None] * weights).T, z * weights, rcond=None)[0] / scale
    except np.linalg.LinAlgError:
        return None
    return coefficients if np.all(np.isfinite(coefficients)) else None


def _nearest_neighbours(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows (at most :data:`_NEIGHBOUR_ROWS`, evenly spaced) of ``points`` ``[n_variables,
    n_rows]`` and each one's nearest other row among them, in the variables scaled to unit
    spread; None where there are too few rows or no variable varies."""
    n = points.shape[1]
    if n < _MIN_ROWS:
        return None
    rows = np.unique(np.linspace(0, n - 1, min(n, _NEIGHBOUR_ROWS)).astype(np.int64))
    with np.errstate(all="ignore"):
        sample = points[:, rows]
        spread = np.std(sample, axis=1)
        varying = np.isfinite(spread) & (spread > 0)
        if not np.any(varying) or not np.all(np.isfinite(sample[varying])):
            return None
        scaled = (sample[varying] / spread[varying, None]).T
    _, nearest = cKDTree(scaled).query(scaled, k=2)
    return rows, nearest[:, 1]


def _leaves_structure(residual: np.ndarray, centred: np.ndarray, neighbours: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether a fit's in-sample ``residual`` is mostly a function of the variables: above
    rounding (:data:`_FLOOR` of ``centred``'s sum of squares), and correlated above
    :data:`_NEIGHBOUR_CORRELATION` between neighbouring rows. Noise is not, and a law's fit leaves
    only noise; the part of a wrong coefficient that the fit's own rows see is in its span, so the
    in-sample residual holds none of it."""
    rows, nearest = neighbours
    with np.errstate(all="ignore"):
        r = residual[rows] - float(np.mean(residual[rows]))
        total = float(r @ r)
        if not math.isfinite(total) or total <= _FLOOR * float(centred[rows] @ centred[rows]):
            return False
        return float(r @ r[nearest]) / total > _NEIGHBOUR_CORRELATION


def power_factors(columns: np.ndarray, y: np.ndarray, variables: Sequence[int]) -> dict[int, float]:
    """The variables among ``variables`` (most related first) that enter ``y`` only as a power
    ``x**e``, ``e`` a nonzero multiple of a half: ``{variable: e}``.

    ``log|y|`` is fitted as a sum of one function per variable (its logarithm and a cubic in it),
    rows near zeros of ``y`` weighing less, so each variable's part is measured with the others' held apart,
    however nonlinear they are;
    a variable is a factor where its part is ``e*log|x|`` (:data:`_FACTOR_SHAPE`) with ``e`` near a
    half-integer (:data:`_FACTOR_EXPONENT`). ``(a*b)**2/sin(t/2)**4`` has the factors ``a**2``
    and ``b**2``; ``t`` is not one. A column whose logarithm is another's (its reciprocal) is
    left out."""
    magnitude = np.abs(np.asarray(y, dtype=np.float64))
    if not (np.all(np.isfinite(magnitude)) and np.any(magnitude > 0)):
        return {}
    with np.errstate(all="ignore"):
        target = np.log(np.where(magnitude > 0, magnitude, 1.0))
        # An error dy in y is dy/|y| in log|y|: rows below the median of |y| weigh less (near a
        # zero of y, noise even flips its sign), and the rest alike (weighing every row by |y|
        # would leave a power law's few largest rows; the root is a middle way that measured best).
        weights = np.sqrt(np.minimum(magnitude / float(np.median(magnitude)), 1.0))
        kept: list[int] = []
        logs: list[np.ndarray] = []
        for j in variables:
            v = columns[j]
            if len(kept) == _FACTOR_VARIABLES or not (np.all(v > 0) or np.all(v < 0)):
                continue
            log_v = np.log(np.abs(v))
            spread = float(np.std(log_v))
            if not (np.all(np.isfinite(log_v)) and spread > 0):
                continue
            centred = (log_v - np.mean(log_v)) / spread
            if any(abs(float(centred @ o)) / len(o) > 1 - 1e-9 for o in logs):
                continue  # a reciprocal or a multiple of a kept column
            kept.append(j)
            logs.append(centred)
        if not kept or len(y) < 10 * (1 + 4 * len(kept)):
            return {}
        parts = []
        for j, log_v in zip(kept, logs):
            v = columns[j]
            z = (v - np.mean(v)) / np.std(v)
            parts.append(np.vstack([log_v, z, z * z, z * z * z]))
        design = np.vstack([np.ones(len(y)), *parts])
        coefficients = _weighted_solve(design, target, weights)
    if coefficients is None:
        return {}
    out: dict[int, float] = {}
    for k, (j, block) in enumerate(zip(kept, parts)):
        with np.errstate(all="ignore"):
            part = coefficients[1 + 4 * k: 5 + 4 * k] @ block
            log_v = np.log(np.abs(columns[j]))
            slope = float(np.cov(part, log_v, bias=True)[0, 1] / np.var(log_v))
            outside = float(np.std(part - slope * log_v) / np.std(part))
        snapped = round(2 * slope) / 2
        if (math.isfinite(outside) and outside < _FACTOR_SHAPE and snapped != 0
                and abs(slope - snapped) < _FACTOR_EXPONENT and abs(snapped) <= MAX_EXPONENT):
            out[j] = snapped
    return out


def factored_operands(columns: np.ndarray, y: np.ndarray, variables: Sequence[int], allowed: frozenset[str],
                      n_variables: int = 3, ratio_terms: bool = True) -> list[Expression]:
    """Linearised forms of what ``y`` leaves once its power factors are divided out, times those
    factors: ``a**2*b**2*(c0 + c1*cos(t))**-2`` where the sum of products alone cannot hold
    ``a**2*b**2``. The factors are sought among ``variables`` (the :data:`_FACTOR_VARIABLES`
    most related to ``y``), and the forms take the ``n_variables`` most related to the rest. []
    where there is no factor, or the operators to write one are not allowed."""
    if not {"mul", "div", "inv", "sq", "sqrt"} <= allowed or not variables or columns.shape[1] < _MIN_ROWS:
        return []
    variables = [int(j) for j in np.asarray(variables)[np.argsort(-relevance(columns[list(variables)], y), kind="stable")]]
    factors = power_factors(columns, y, variables)
    factor = monomial(factors)
    if factor is None:
        return []
    with np.errstate(all="ignore"):
        rest = y / np.prod([np.abs(columns[j]) ** e for j, e in factors.items()], axis=0)
    others = [j for j in variables if j not in factors and not _log_multiple(columns, j, factors)]
    if not others or not np.all(np.isfinite(rest)):
        return []
    related = relevance(columns[others], rest)
    chosen: list[int] = []
    for k in np.argsort(-related, kind="stable"):
        # Of a variable and its reciprocal (the reduced search's columns hold both), the first:
        # the reciprocal's functions are mostly the variable's, and a slot costs a third of the time.
        j = min(i for i in others if i == others[k] or _log_multiple(columns, i, [others[k]]))
        if len(chosen) < n_variables and j not in chosen:
            chosen.append(j)
    return [Expression.combine("mul", form, factor)
            for form in linearized_operands(columns, rest, chosen, allowed, ratio_terms=ratio_terms, scale=y / rest)]


def _log_multiple(columns: np.ndarray, j: int, among: Sequence[int]) -> bool:
    """Whether ``log|x_j|`` is a multiple of some ``log|x_k|``, ``k`` in ``among`` (``x_j`` is a
    power of ``x_k``, such as its reciprocal)."""
    with np.errstate(all="ignore"):
        log_j = np.log(np.abs(columns[j]))
        for k in among:
            log_k = np.log(np.abs(columns[k]))
            r = np.corrcoef(log_j, log_k)[0, 1]
            if math.isfinite(r) and abs(r) > 1 - 1e-9:
                return True
    return False
