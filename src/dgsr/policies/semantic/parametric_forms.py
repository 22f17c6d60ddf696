"""Constants inside nonlinear parts, by one mechanism: chains ``op(a*u + b)`` fitted to the data.

The shapes science meets most often put fitted constants inside a function: a sigmoid
``a/(1 + exp(-b*(t - c)))``, a peak ``a*exp(-(x - m)**2/w)``, a Morse well
``a*(1 - exp(-b*(r - c)))**2``, an activation ``a*exp(-b/T)``, a shifted denominator
``a/(x + c)``. Each is one or two unary operators, each applied to an affine map of what is
below it. Growing them one mutation at a time passes through expressions that fit worse than
what the search already has, and a fixed grid of inner constants (``exp(2*x)``) misses the
law's own. So for the variables most related to ``y`` the library holds every chain
``op(a*x + b)`` and ``outer(c*inner(a*x + b) + d)`` of the unary operators that the nesting rule
allows, its constants fitted to ``y`` by Levenberg-Marquardt from starts that put each
operator's argument on a few ranges where its shape shows; the chains that explain ``y`` best
join the library, and the search refines their constants in place.

Nothing here names a law: the chains are all compositions of the operator table's unary
operators, and which of them enter a library is read off the data.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from dgsr.core.evaluate import evaluate_columns, evenly_spaced
from dgsr.core.expression import Expression
from dgsr.core.inner_fit import fit_inner_constants
from dgsr.core.linear_terms import fit_term_weights
from dgsr.core.operators import OPERATORS

T = TypeVar("T")

#: The unary operators of the chains: ``cos`` is ``sin`` with a phase, ``tan`` has poles
#: everywhere its argument spans more than a period.
CHAIN_OPERATORS = ("exp", "sin", "log", "sqrt", "inv", "sq")  # and POWER, below
#: Argument ranges on which each operator's shape shows, as (value at the operand's smallest
#: value, value at its largest): a start maps the data's range of the operand onto one of them,
#: so the order gives the direction (``exp`` rising and falling). The first ones are the starts
#: an outer operator takes.
_RANGES: dict[str, tuple[tuple[float, float], ...]] = {
    "exp": ((0.0, -2.0), (0.0, 2.0), (0.0, -6.0), (0.0, 6.0)),
    "sin": ((0.0, math.pi), (0.0, 2.0 * math.pi), (0.0, 4.0 * math.pi)),
    "log": ((0.1, 1.1), (1.0, 3.0), (1.1, 0.1)),
    "sqrt": ((0.05, 1.05), (1.0, 3.0), (1.05, 0.05)),
    "inv": ((0.2, 1.2), (-1.2, -0.2), (1.0, 3.0)),
    "sq": ((-1.0, 1.0), (0.0, 1.0), (-1.0, 0.0)),
}
#: Starts of the outer operator of a two-operator chain (its first ranges): one, but both
#: directions of ``exp`` (a rising and a falling activation law are far apart for the fit).
_OUTER_STARTS = {"exp": 2}
#: ``pow``: a power ``u**c`` of a positive argument, written ``exp(c*log(u))`` (one node under the
#: nesting rule, :func:`dgsr.search.mutations.validity_violation`); an inner operator only, its
#: exponent started at a root, an inverse and a square (Hill's ``x**n/(K**n + x**n)``, Weibull's
#: ``exp(-(t/l)**k)``).
POWER = "pow"
_POWER_STARTS = (0.5, -1.0, 2.0)
#: Levenberg-Marquardt steps per start, and for the best chains once more.
_STEPS = 30
_REFINE_STEPS = 100
#: Ranges of the inner operator of a two-operator chain (its first ones, and the raw variable).
_INNER_STARTS = 2
#: Rows the screening fits use (evenly spread over the fit rows).
_SCREEN_ROWS = 100
#: The chains whose sums of two (:func:`chain_pair`) the library tries: two exponentials, sines,
#: powers, poles or peaks of one variable (the sum of two squares or roots is one of them again).
PAIR_SHAPES = (("exp",), ("sin",), (POWER,), ("inv",), ("exp", "sq"))
#: A pair's second term also starts as its first with the first constant (a rate, a frequency,
#: an exponent, a width) times each of these: the other term's scale is rarely the first's.
_PAIR_RESCALES = (3.0, 1.0 / 3.0)
#: The chains of those shapes that screen best, each tried as a pair's first term.
_PAIR_FIRSTS = 4
#: The pairs that screen best, refined on all rows.
_PAIR_BASES = 2
#: A pair counts when it leaves at most this share of its first term's squared error alone.
_PAIR_GAIN = 0.5


def _affine(e: Expression, a: float, b: float) -> Expression:
    return Expression.combine("add", Expression.combine("mul", Expression.constant(a), e), Expression.constant(b))


def chain_shapes(allowed: Iterable[str]) -> list[tuple[str, ...]]:
    """Every chain of one or two :data:`CHAIN_OPERATORS` (outermost first) that ``allowed``
    operators build and the nesting rule admits (no transcendental operator below another)."""
    ops = [op for op in CHAIN_OPERATORS if op in set(allowed)]
    if not {"add", "mul"} <= set(allowed):
        return []
    shapes: list[tuple[str, ...]] = [(op,) for op in ops]
    for outer, inner in itertools.product(ops, ops):
        if OPERATORS[outer].transcendental and OPERATORS[inner].transcendental:
            continue
        shapes.append((outer, inner))
    if {"exp", "log"} <= set(allowed):
        shapes.append((POWER,))
        shapes.extend((outer, POWER) for outer in ops)
    return shapes


def _power(argument: Expression, exponent: float) -> Expression:
    return Expression.combine("exp", Expression.combine("mul", Expression.constant(exponent),
                                                        Expression.combine("log", argument)))


#: Operators whose argument needs only a shift ``x + b`` under a scaled output: a slope inside
#: ``sq``, ``inv``, ``sqrt`` and ``log`` is a factor (or a term) outside, which the weight of the
#: operand or the outer affine map already fits (a redundant constant slows the fit down).
_SHIFT_ONLY = frozenset({"sq", "inv", "sqrt", "log"})


def _argument(op: str, below: Expression, values: np.ndarray, target: tuple[float, float]
              ) -> Expression | None:
    """``op``'s argument over ``below`` (with ``values``) that maps the smallest value to
    ``target[0]`` and the largest to ``target[1]``: ``below + b`` for a rising target of a
    :data:`_SHIFT_ONLY` operator (up to a scale, which its weight fits), else ``a*below + b``."""
    lo, hi = float(np.min(values)), float(np.max(values))
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return None
    if op in _SHIFT_ONLY and target[1] > target[0]:
        scale = (hi - lo) / (target[1] - target[0])  # below + b spans scale*[target]
        return Expression.combine("add", below, Expression.constant(target[0] * scale - lo))
    a = (target[1] - target[0]) / (hi - lo)
    return _affine(below, a, target[0] - a * lo)


def chain_starts(shape: Sequence[str], variable: int | Expression, columns: np.ndarray) -> list[Expression]:
    """Starting points of the chain ``shape`` (outermost first) over variable ``variable`` of
    ``columns`` (or over an expression of them, such as a dimensionless group): each operator's
    argument is the map that puts the values below it on one of its :data:`_RANGES`."""
    inner = shape[-1]
    v = variable if isinstance(variable, Expression) else Expression.variable(int(variable))
    with np.errstate(all="ignore"):
        x = evaluate_columns(v, columns) if isinstance(variable, Expression) else columns[variable]
    if not np.all(np.isfinite(x)):
        return []
    ranges = _RANGES["inv"][:1] if inner == POWER else _RANGES[inner]  # a power's base: positive
    if len(shape) > 1:  # under an outer operator: the inner one's two main ranges
        ranges = ranges[:_INNER_STARTS]
    arguments = [_argument("inv" if inner == POWER else inner, v, x, target) for target in ranges]
    if (inner in _SHIFT_ONLY or inner == POWER) and bool(np.all(x > 0)):
        # The variable as measured, its zero where the law's is (1/T of an activation energy):
        # no shift, whose fit trades against the slope along a flat valley and drifts.
        arguments.append(v)
    inners: list[Expression] = []
    for argument in arguments:
        if argument is None:
            return []
        if inner == POWER:
            inners.extend(_power(argument, c) for c in _POWER_STARTS)
        else:
            inners.append(Expression.combine(inner, argument))
    starts: list[Expression] = []
    for expr in inners:
        if len(shape) == 1:
            starts.append(expr)
            continue
        with np.errstate(all="ignore"):
            values = evaluate_columns(expr, columns)
        if not np.all(np.isfinite(values)):
            continue
        for outer_target in _RANGES[shape[0]][:_OUTER_STARTS.get(shape[0], 1)]:
            outer_argument = _argument(shape[0], expr, values, outer_target)
            if outer_argument is not None:
                starts.append(Expression.combine(shape[0], outer_argument))
    return starts


def affine_loss(form: Expression, columns: np.ndarray, y: np.ndarray) -> float:
    """The mean squared error of ``y`` against ``a*form + b``, least squares; inf where not finite."""
    with np.errstate(all="ignore"):
        values = evaluate_columns(form, columns)
    fit = fit_term_weights(values[None, :], y) if np.all(np.isfinite(values)) else None
    return float(fit[2]) if fit is not None and math.isfinite(fit[2]) else math.inf


def fit_chain(starts: Sequence[Expression], columns: np.ndarray, y: np.ndarray,
              linear_values: np.ndarray | None, steps: int = _STEPS,
              pairs: bool = False) -> tuple[Expression | None, float]:
    """The start whose constants, fitted to ``y`` with a weight and an intercept (and weights for
    the rows of ``linear_values``, fitted jointly), leave the least squared error, and that
    error; ``(None, inf)`` when no start gives finite values. ``pairs``: each start is a sum
    ``add(first, second)`` whose two terms get a weight each."""
    best, best_loss = None, math.inf
    for start in starts:
        fitted = fit_inner_constants(start, columns, y, steps=steps).expression
        with np.errstate(all="ignore"):
            parts = _split(fitted) if pairs else [fitted]
            v = np.vstack([evaluate_columns(p, columns) for p in parts])
            if not np.all(np.isfinite(v)) or float(np.min(np.ptp(v, axis=1))) <= 0:
                continue
            design = v if linear_values is None else np.vstack([v, linear_values])
            fit = fit_term_weights(design, y)
        if fit is not None and math.isfinite(fit[2]) and fit[2] < best_loss:
            best, best_loss = fitted, float(fit[2])
    return best, best_loss


def best_chains(variables: Sequence[int | Expression], columns: np.ndarray, y: np.ndarray, allowed: Iterable[str],
                linear: Sequence[int], keep: int, memo: dict | None = None, pairs: bool = False) -> list[Expression]:
    """The ``keep`` chains over ``variables`` (indices, or expressions of the columns) that explain
    ``y`` best (with the ``linear`` columns beside them), best first, then each variable's best
    one-operator chain not among them, then (with ``pairs``) the two terms of each
    :func:`chain_pair` that explains ``y`` far better than any chain alone; ``memo`` (a dict kept
    for these rows) holds each chain's fit."""
    shapes = chain_shapes(allowed)
    linear_values = np.vstack([columns[i] for i in linear]) if linear else None
    # The screening fits run on a spread subset of the rows (a chain's shape shows on a hundred
    # rows; most of a fit's cost is per row), the refinement below on all of them.
    screen = evenly_spaced(columns.shape[1], _SCREEN_ROWS)
    screen_linear = None if linear_values is None else linear_values[:, screen]
    scored: list[tuple[float, int, Expression]] = []
    origins: list[tuple[tuple[str, ...], int | Expression]] = []  # (shape, variable) of each scored chain
    simplest: dict[Any, tuple[float, int, Expression]] = {}  # per variable, its best one-operator chain
    for i in variables:
        name = i.key() if isinstance(i, Expression) else i
        for shape in shapes:
            form, loss = _memoised(memo, ("chain", name, shape, tuple(linear)), _screened_chain,
                                   shape, i, columns, y, screen, screen_linear)
            if form is not None:
                origins.append((shape, i))
                scored.append((loss, len(scored), form))
                if len(shape) == 1 and loss < simplest.get(name, (math.inf,))[0]:
                    simplest[name] = (loss, len(scored) - 1, form)
    scored.sort(key=lambda s: (s[0], s[1]))
    # The best chains get more steps: a law's own constants often lie along a flat valley
    # (exp(a/(T + d)) for an activation, where d goes to 0 slowly), which 20 steps do not cross.
    refined: list[tuple[float, int, Expression]] = []
    for loss, order, form in scored[:3 * keep]:
        better, better_loss = _memoised(memo, ("refined", form.key()), fit_chain,
                                        [form], columns, y, linear_values, steps=_REFINE_STEPS)
        if better is not None:  # losses on all rows, comparable with each other
            refined.append((better_loss, order, better))
    refined.sort(key=lambda s: (s[0], s[1]))
    best = [form for _, _, form in refined[:keep]]
    # Each variable's best one-operator chain as well: in a product law (exp(-a*x)*cos(b*z + c))
    # the right factor explains y less well alone than a two-operator chain that bends to it.
    keys = {form.key() for form in best}
    best.extend(form for _, _, form in sorted(simplest.values(), key=lambda s: (s[0], s[1]))
                if form.key() not in keys)
    if not pairs:
        return best
    best.extend(_best_pairs(scored, origins, columns, y, linear, linear_values, screen, screen_linear, memo))
    return best


def log_linear_start(variable: int | Expression, columns: np.ndarray, y: np.ndarray) -> Expression | None:
    """``exp(a*x + b)`` with ``log|y| = a*x + b`` by least squares, where ``y`` keeps one sign:
    an exponential whose values span many decades (an activation's ``exp(-E/T)``) is a line in
    log space, and out of reach of a start that only maps ``x``'s range (None otherwise)."""
    with np.errstate(all="ignore"):
        x = evaluate_columns(variable, columns) if isinstance(variable, Expression) else columns[variable]
        if not (np.all(y > 0) or np.all(y < 0)) or not np.all(np.isfinite(x)) or float(np.ptp(x)) <= 0:
            return None
        # Least squares on x standardised, whatever its scale (1e-22 or 1e22).
        centre, spread = float(np.mean(x)), float(np.std(x))
        slope, b = np.linalg.lstsq(np.column_stack([(x - centre) / spread, np.ones_like(x)]),
                                   np.log(np.abs(y)), rcond=None)[0]
        a = float(slope) / spread
        b = float(b) - a * centre
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    v = variable if isinstance(variable, Expression) else Expression.variable(int(variable))
    return Expression.combine("exp", _affine(v, float(a), float(b)))


def _screened_chain(shape: Sequence[str], variable: int | Expression, columns: np.ndarray, y: np.ndarray,
                    screen: np.ndarray, screen_linear: np.ndarray | None) -> tuple[Expression | None, float]:
    """:func:`fit_chain` from the starts of ``shape`` over ``variable``, on the ``screen`` rows
    (an exponential also from its :func:`log_linear_start`)."""
    starts = chain_starts(shape, variable, columns)
    if tuple(shape) == ("exp",):
        start = log_linear_start(variable, columns[:, screen], y[screen])
        starts += [start] if start is not None else []
    return fit_chain(starts, columns[:, screen], y[screen], screen_linear)


def _screened_pair(first: Expression, shape: Sequence[str], variable: int | Expression, columns: np.ndarray, y: np.ndarray,
                   screen: np.ndarray, screen_linear: np.ndarray | None) -> tuple[Expression | None, float]:
    """:func:`chain_pair` of ``first`` (a chain of ``shape`` over ``variable``) on the ``screen`` rows."""
    return chain_pair(first, chain_starts(shape, variable, columns), columns[:, screen], y[screen], screen_linear)


def _memoised(memo: dict | None, key: tuple, compute: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``memo[key]``, which ``compute(*args, **kwargs)`` gives and ``memo`` keeps the first time
    (without a memo: computed)."""
    if memo is None:
        return compute(*args, **kwargs)
    if key not in memo:
        memo[key] = compute(*args, **kwargs)
    return memo[key]


def _best_pairs(scored: list[tuple[float, int, Expression]], origins: list[tuple[tuple[str, ...], int | Expression]],
                columns: np.ndarray, y: np.ndarray, linear: Sequence[int], linear_values: np.ndarray | None,
                screen: np.ndarray, screen_linear: np.ndarray | None, memo: dict | None) -> list[Expression]:
    """The terms of the :data:`_PAIR_BASES` :func:`chain_pair` sums that screen best, refined on
    all rows. Each pair starts from one of the :data:`_PAIR_FIRSTS` best screened chains of a
    :data:`PAIR_SHAPES` shape in ``scored`` and counts only where it leaves at most
    :data:`_PAIR_GAIN` of that chain's squared error: a second term that only fits noise is not
    worth the library's room."""
    pairs: list[tuple[float, int, Expression]] = []
    bases = [(loss, order, form) for loss, order, form in scored if origins[order][0] in PAIR_SHAPES][:_PAIR_FIRSTS]
    for first_loss, order, form in bases:
        shape, i = origins[order]
        pair, loss = _memoised(memo, ("pair", form.key(), tuple(linear)), _screened_pair,
                               form, shape, i, columns, y, screen, screen_linear)
        if pair is not None and loss <= _PAIR_GAIN * first_loss:
            pairs.append((loss, order, pair))
    out: list[Expression] = []
    for _, _, pair in sorted(pairs, key=lambda s: (s[0], s[1]))[:_PAIR_BASES]:
        refined, _ = _memoised(memo, ("refined pair", pair.key()), fit_chain,
                               [pair], columns, y, linear_values, steps=_REFINE_STEPS, pairs=True)
        if refined is not None:
            out.extend(_split(refined))
    return out


def chain_pair(first: Expression, starts: Sequence[Expression], columns: np.ndarray, y: np.ndarray,
               linear_values: np.ndarray | None) -> tuple[Expression | None, float]:
    """``add(first, second)`` with ``second`` from the ``starts`` of ``first``'s own shape and
    variable, fitted as ``w1*first + w2*second + b`` with all constants together, and its squared
    error; ``(None, inf)`` when no start gives finite values. A sum of two terms of one kind with
    constants of their own (two exponential decays, two frequencies, an attractive and a
    repulsive power, an anodic and a cathodic exponential) is not in a library of single terms
    fitted to ``y`` alone: each term's constants depend on what the other leaves. ``first``
    rescaled (:data:`_PAIR_RESCALES`) starts the second term too."""
    rescaled = [first.with_constants([first.constants[0] * f, *first.constants[1:]])
                for f in _PAIR_RESCALES if first.n_constants]
    return fit_chain([Expression.combine("add", first, start) for start in [*starts, *rescaled]], columns, y,
                     linear_values, pairs=True)


def _split(pair: Expression) -> list[Expression]:
    """The two terms of ``add(first, second)``."""
    first, second = pair.children(0)
    return [pair.subtree(first), pair.subtree(second)]
