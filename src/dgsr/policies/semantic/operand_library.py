"""A library of small candidate operands ``B``, evaluated once per trial on the scoring rows.

The semantic policy (:mod:`dgsr.policies.semantic.policy`) matches desired values against every library
operand at once with matrix products, so the library is a matrix ``[n_operands, n_rows]`` plus
the expressions it came from. Entries are distinct by their values on the rows (two operands
with the same values are one; the smaller is kept), finite on every row and not constant.

What goes in is built by :mod:`dgsr.policies.semantic.operand_forms` (the forms) and fitted
here (the parametric ones, :func:`build_library`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.inner_fit import fit_inner_constants
from dgsr.core.linear_terms import fit_term_weights
from dgsr.core.operators import BINARY, UNARY
from dgsr.policies.semantic import operand_forms as forms
from dgsr.policies.semantic.linearized_forms import factored_operands, linearized_operands
from dgsr.policies.semantic.parametric_forms import affine_loss, best_chains
from dgsr.policies.semantic.power_chains import power_chains as power_chain_forms
from dgsr.policies.semantic.rational_forms import rational_operands
from dgsr.policies.semantic.relevance import relevance

#: Levenberg-Marquardt steps that fit a parametric operand's constants to y when the library is built.
_PARAMETRIC_STEPS = 20
#: Operands whose values an :func:`operand_library` memo keeps before it starts again.
_MAX_MEMO = 2000



@dataclass(frozen=True)
class OperandLibrary:
    """Candidate operands and their values on the scoring rows.

    Attributes
    ----------
    expressions:
        The operands, smallest first within each family.
    values:
        ``[n_operands, n_rows]`` float64, finite.
    values_by_row, squares_by_row:
        ``values.T`` and ``(values ** 2).T``, contiguous ``[n_rows, n_operands]``: the matching's
        matrix products at every expansion read them (a contiguous right-hand matrix is about a
        quarter faster there than a transposed view).
    sizes:
        Node count of each operand.
    parametric:
        ``[n_operands]`` bool: whether the operand is a parametric form whose constants were
        fitted to ``y`` here.
    """

    expressions: tuple[Expression, ...]
    values: np.ndarray
    values_by_row: np.ndarray
    squares_by_row: np.ndarray
    sizes: np.ndarray
    parametric: np.ndarray

    def __len__(self) -> int:
        return len(self.expressions)


def _fitted(starts: list[Expression], columns: np.ndarray, y: np.ndarray,
            linear: list[int], terms: Sequence[Expression] = (), memo: FitMemo | None = None) -> Expression | None:
    """The start whose constants, fitted to ``y`` with a few Levenberg-Marquardt steps together
    with a weight for it, for each of the ``linear`` variables and for each of the ``terms`` (and an
    intercept), explain most of ``y``; None when no start gives finite values. The linear terms
    are fitted jointly rather than removed first: a residual left by a linear fit is no longer of
    the operand's form, and would pull a sine's frequency or a bump's centre away from the law's.
    ``terms``: the pair's product for a pair form (``x*y + sin((x - 1)*(y - 1))``: the product
    is the first-order part of the shifted product, and left in the residual it hides the sine)."""
    if memo is not None:
        key = (tuple(s.key() for s in starts), tuple(linear), tuple(t.key() for t in terms))
        if key not in memo.fits:
            memo.fits[key] = _fitted(starts, columns, y, linear, terms)
        return memo.fits[key]
    best, best_loss = None, math.inf
    with np.errstate(all="ignore"):
        finite = [(t, v) for t in terms if np.all(np.isfinite(v := evaluate_columns(t, columns)))]
    kept = [t for t, _ in finite]
    rows = [columns[i] for i in linear] + [v for _, v in finite]
    linear_values = np.vstack(rows) if rows else None
    for start in starts:
        model = start
        for extra in [*(Expression.variable(i) for i in linear), *kept]:
            model = Expression.combine("add", model, extra)
        fitted = fit_inner_constants(model, columns, y, steps=_PARAMETRIC_STEPS).expression
        form = start.with_constants(fitted.constants[:start.n_constants])  # the start's constants lead
        with np.errstate(all="ignore"):
            v = evaluate_columns(form, columns)
            design = v[None, :] if linear_values is None else np.vstack([v[None, :], linear_values])
            fit = fit_term_weights(design, y) if np.all(np.isfinite(v)) else None
        if fit is not None and fit[2] < best_loss:
            best, best_loss = form, fit[2]
    return best


class FitMemo:
    """The parametric operands fitted on one set of fit rows, kept across the trials of a search.

    A parametric fit depends only on its starts, the linear variables fitted beside it and the
    fit rows; when the fit rows do not depend on the trial (the policy spreads them evenly over
    the data) every trial would repeat the same fits, about a third of a second each time. The
    memo holds the fits of one set of rows: :meth:`for_rows` empties it when the rows change.
    """

    def __init__(self) -> None:
        self.rows: bytes = b""
        self.fits: dict[tuple, Any] = {}  # a fit, or a whole list of them

    def for_rows(self, columns: np.ndarray, y: np.ndarray) -> FitMemo:
        """This memo, emptied unless it holds fits on exactly these rows."""
        digest = hashlib.blake2b(np.ascontiguousarray(columns).tobytes(), digest_size=16)
        digest.update(np.ascontiguousarray(y).tobytes())
        rows = digest.digest() + repr(columns.shape).encode()
        if rows != self.rows:
            self.rows, self.fits = rows, {}
        return self


def _screened_parametric(pairs: list[int], fit_columns: np.ndarray, fit_y: np.ndarray, allowed_ops: frozenset[str],
                         linear: list[int], memo: FitMemo | None, max_parametric_variables: int,
                         max_chain_variables: int, max_chains: int, pair_forms: bool,
                         chain_pairs: bool, groups: Sequence[Expression] = ()) -> list[Expression | None]:
    """The parametric operands of :func:`build_library`, each form's starts screened on the fit
    rows; the chains over the most related variables and over ``groups``."""
    top = sorted(pairs[:max_parametric_variables])
    fits: list[Expression | None] = []
    if max_chains <= 0:  # the chains hold sin(c*x + d) and every other one-operator form
        for i in top:
            fits.extend(_fitted(starts, fit_columns, fit_y, linear, memo=memo)
                        for starts in forms.parametric_single_forms(i, fit_columns[i], allowed_ops))
    for a_i, i in enumerate(top if pair_forms else []):
        for j in top[a_i + 1:]:
            product = [Expression.combine("mul", Expression.variable(i), Expression.variable(j))] if "mul" in allowed_ops else []
            fits.extend(_fitted(starts, fit_columns, fit_y, linear, product, memo=memo)
                        for starts in forms.parametric_pair_forms(i, j, fit_columns[i], fit_columns[j], allowed_ops))
    # Bumps over the 3, 4 and 5 most related variables (the pair forms hold the 2-variable one).
    for k in range(3, min(len(pairs), max_parametric_variables) + 1 if pair_forms else 3):
        start = forms.parametric_bump(sorted(pairs[:k]), fit_columns, allowed_ops)
        fits.append(_fitted([start], fit_columns, fit_y, linear, memo=memo) if start is not None else None)
    # Constants inside nonlinear parts, by one mechanism: chains op(a*x + b) of the unary
    # operators over the most related variables (dgsr.policies.semantic.parametric_forms).
    if max_chains > 0:
        fits.extend(best_chains([*sorted(pairs[:max_chain_variables]), *groups], fit_columns, fit_y, allowed_ops, linear,
                                max_chains, memo=None if memo is None else memo.fits, pairs=chain_pairs))
    return fits


def build_library(columns: np.ndarray, y: np.ndarray, *, allowed: Iterable[str] | None = None,
                  max_rich_variables: int = 12, max_pair_variables: int = 6,
                  max_size: int = 6, fit_parametric: bool = False,
                  max_parametric_variables: int = 5,
                  max_chain_variables: int = 3, max_chains: int = 4, pair_forms: bool = True,
                  chain_pairs: bool = False,
                  extra_operands: Iterable[Expression] = (),
                  fit_rows: tuple[np.ndarray, np.ndarray] | None = None,
                  fit_memo: FitMemo | None = None,
                  seeded: Sequence[Expression] | None = None,
                  chain_arguments: Sequence[Expression] = (), ratio_chains: bool = False,
                  chain_prefactors: Sequence[Expression] = (), rational: bool = False,
                  power_chains: bool = False, linearized: bool = False, linearized_ratios: bool = False,
                  linearized_factors: bool = False) -> OperandLibrary:
    """The operand library for data ``columns`` ``[n_features, n_rows]`` and target ``y``.

    ``allowed`` restricts the operators used (default: all of Table 1). Operands larger than
    ``max_size`` nodes are left out, except the parametric pair forms that ``fit_parametric``
    adds for the ``max_parametric_variables`` variables most related to ``y``: their constants are
    fitted to ``y`` here, a guess that the search's inner-constant fits refine in place, and
    ``extra_operands`` (the policy's power laws, :mod:`dgsr.policies.semantic.power_law`).
    ``max_chains`` chains ``op(a*x + b)`` over the ``max_chain_variables`` most related variables
    (:mod:`dgsr.policies.semantic.parametric_forms`) join them, the ones that explain ``y`` best
    (with none, the single-variable sines of before); ``pair_forms``: also the two-variable forms
    and the bumps over 3-5 variables; ``chain_pairs``: also the terms of the sums of two chains
    that explain ``y`` far better than one (:func:`~dgsr.policies.semantic.parametric_forms.chain_pair`).
    ``fit_rows`` = ``(columns, y)`` of other rows to fit the parametric constants on (more rows
    than the scoring ones: a sine of a shifted product fitted on 100 rows lands in a wrong local
    optimum far more often than on 300). ``fit_memo``: fits kept from earlier calls on the same
    fit rows (:class:`FitMemo`; the result is the same with or without it). ``seeded``: the
    parametric operands of another library on other rows (the search on all rows, for a fold
    search's library): each is refitted here from its own constants, in place of screening the
    starts of every form and chain again. ``chain_arguments``: expressions of the variables (the
    dimensionless groups of a fit with units) the chains also take as their argument, the
    ``max_chain_variables`` most related to ``y``; ``ratio_chains``: without such expressions, the
    ratios and products of the ``max_chain_variables`` variables most related to ``y`` in their
    place (a law's logarithm or wave often takes one: ``log(V2/V1)``, ``sin(k*x/L)``).
    ``chain_prefactors``: power laws that ``y`` is a curve of the ``chain_arguments`` times (a
    single index's, :mod:`~dgsr.policies.semantic.single_index`): for each ``P``, the chains over
    those arguments are also fitted to ``y/P``, and ``P`` times each joins the operands
    (``hbar*omega/(exp(hbar*omega/(kb*T)) - 1)``, which no chain fitted to ``y`` takes whole).
    ``rational``: also the ratios of small polynomials of the ``max_chain_variables`` most related
    variables that explain ``y`` best (:mod:`~dgsr.policies.semantic.rational_forms`).
    ``power_chains``: also a power of the most related variable (and of the most related of the
    ``chain_arguments``) times a chain over it, where that explains ``y`` better than the chains
    over it (:mod:`~dgsr.policies.semantic.power_chains`): ``x**3/(exp(b*x) - 1)``.
    ``linearized``: also the powers of sums of a few products of simple functions of the
    ``max_chain_variables`` most related variables that explain ``y`` best
    (:mod:`~dgsr.policies.semantic.linearized_forms`): ``sqrt(a**2 + b**2 - 2*a*b*cos(t))``;
    with ``linearized_ratios``, also ratios of such sums: ``(1 - a**2)/(1 + a*cos(t))``; with
    ``linearized_factors``, also such forms of what ``y`` leaves once its power factors are
    divided out, times them: ``a**2*b**2/(1 - cos(t))**2``.
    """
    allowed_ops = frozenset(allowed) if allowed is not None else frozenset(UNARY + BINARY)
    n_features = columns.shape[0]
    order = np.argsort(-relevance(columns, y), kind="stable") if n_features > 1 else np.arange(n_features)
    rich = [int(i) for i in order[:max_rich_variables]]
    pairs = rich[:max_pair_variables]
    candidates: list[Expression] = [Expression.variable(i) for i in range(n_features)]
    for i in rich:
        candidates.extend(forms.single_variable_forms(i, columns[i], allowed_ops))
    roots: list[Expression] = []  # pair forms one node over max_size
    for a_i, i in enumerate(pairs):
        for j in pairs[a_i + 1:]:
            candidates.extend(forms.pair_forms(i, j, allowed_ops))
            if fit_parametric:  # a constant inside a nonlinear part, as the parametric forms
                roots.extend(forms.pair_root_forms(i, j, columns[i], columns[j], allowed_ops))
    parametric: list[Expression] = []
    fit_columns, fit_y = (columns, y) if fit_rows is None else fit_rows
    if fit_parametric and fit_columns.shape[1] >= 8 and float(np.var(fit_y)) > 0:
        # Fitted to y together with a linear model of the most relevant columns (see _fitted).
        # Variables in index order within each fit: the relevance order varies between trials
        # (it is read off the trial's rows), and a fit that does not depend on it is the same
        # fit in every trial, which fit_memo then computes once.
        linear = sorted(rich) if fit_columns.shape[1] > len(rich) + 2 else []
        memo = fit_memo.for_rows(fit_columns, fit_y) if fit_memo is not None else None
        if seeded is not None:
            fits = [_fitted([form], fit_columns, fit_y, linear, memo=memo) for form in seeded]
        else:
            # Each form's fit is memoised; so is the whole list, which depends on the variables
            # ranked first only through the sets of the first few (_screened_parametric).
            ranked = tuple(tuple(sorted(pairs[:k])) for k in
                           (max_chain_variables, *range(3, min(len(pairs), max_parametric_variables) + 1)))
            arguments = chain_arguments or (forms.ratios_and_products(pairs[:max_chain_variables], allowed_ops) if ratio_chains
                                            else [])
            groups = _related(arguments, fit_columns, fit_y, max_chain_variables) if max_chains > 0 else []
            key = ("screened", tuple(sorted(pairs[:max_parametric_variables])), ranked, tuple(linear), allowed_ops,
                   max_chains, pair_forms, chain_pairs, tuple(g.key() for g in groups),
                   tuple(p.key() for p in chain_prefactors), rational, power_chains, linearized, linearized_ratios,
                   linearized_factors, tuple(sorted(rich)) if linearized_factors else ())
            fits = None if memo is None else memo.fits.get(key)
            if fits is None:
                fits = _screened_parametric(pairs, fit_columns, fit_y, allowed_ops, linear, memo,
                                            max_parametric_variables, max_chain_variables, max_chains,
                                            pair_forms, chain_pairs, groups)
                if groups:
                    fits.extend(_prefactor_chains(chain_prefactors, groups, fit_columns, fit_y, allowed_ops, max_chains))
                if power_chains and max_chains > 0:
                    for argument in [*pairs[:1], *groups[:1]]:
                        fits.extend(power_chain_forms(argument, fit_columns, fit_y, allowed_ops))
                if rational:  # refined by the same fit as every parametric form, the linear terms beside
                    fits.extend(_fitted([r], fit_columns, fit_y, linear, memo=memo) for r in
                                rational_operands(fit_columns, fit_y, sorted(pairs[:max_chain_variables]), allowed_ops))
                if linearized:
                    fits.extend(_fitted([f], fit_columns, fit_y, linear, memo=memo) for f in
                                linearized_operands(fit_columns, fit_y, sorted(pairs[:max_chain_variables]), allowed_ops,
                                                    ratio_terms=linearized_ratios))
                if linearized and linearized_factors:
                    fits.extend(_fitted([f], fit_columns, fit_y, linear, memo=memo) for f in
                                factored_operands(fit_columns, fit_y, sorted(rich), allowed_ops, max_chain_variables,
                                                  ratio_terms=linearized_ratios))
                if memo is not None:
                    memo.fits[key] = fits
        parametric = [form for form in fits if form is not None]

    extra = [e for e in extra_operands if all(s in allowed_ops for s in e.symbols if s in UNARY or s in BINARY)]
    # (operand, parametric, exempt from max_size)
    ordered = ([(e, False, False) for e in sorted(candidates, key=lambda e: e.size)]
               + [(e, False, True) for e in [*roots, *extra]] + [(e, True, True) for e in parametric])
    return _assemble(ordered, columns, max_size)


def _prefactor_chains(prefactors: Sequence[Expression], arguments: Sequence[Expression], columns: np.ndarray,
                      y: np.ndarray, allowed: frozenset[str], keep: int) -> list[Expression]:
    """``P*chain`` for each power law ``P`` of ``prefactors`` and each of the ``keep`` chains over
    ``arguments`` that explain ``y/P`` best (see :func:`build_library`). Two power laws can be
    as simple (the index's ties); where the best chain over one leaves less than half the share of
    its target unexplained that the other's does, only the first's chains are kept: the second's
    are approximations, and they lure the search (``y = a/(z**2 - x**2)`` with the index ``x/z``:
    over ``a/z**2`` it is the chain ``1/(1 - u**2)``, over ``a/(x*z)`` no chain is exact)."""
    if "mul" not in allowed:
        return []
    fitted: list[tuple[float, list[Expression]]] = []
    for prefactor in prefactors:
        with np.errstate(all="ignore"):
            scale = evaluate_columns(prefactor, columns)
            target = y / scale
        if not (np.all(np.isfinite(target)) and np.all(scale != 0)) or np.ptp(target) <= 0:
            continue
        chains = best_chains(arguments, columns, target, allowed, [], keep)
        share = min((affine_loss(c, columns, target) for c in chains), default=math.inf) / float(np.var(target))
        fitted.append((share, [Expression.combine("mul", prefactor, chain) for chain in chains]))
    best = min((share for share, _ in fitted), default=math.inf)
    return [form for share, forms in fitted if share <= 2.0 * best for form in forms]


def _related(arguments: Sequence[Expression], columns: np.ndarray, y: np.ndarray, keep: int) -> list[Expression]:
    """The ``keep`` of ``arguments`` most related to ``y`` on ``columns`` (finite everywhere)."""
    if not arguments:
        return []
    with np.errstate(all="ignore"):
        values = [evaluate_columns(a, columns) for a in arguments]
    usable = [(a, v) for a, v in zip(arguments, values) if np.all(np.isfinite(v)) and np.ptp(v) > 0]
    if not usable:
        return []
    scores = relevance(np.vstack([v for _, v in usable]), y)
    return [usable[int(i)][0] for i in np.argsort(-scores, kind="stable")[:keep]]


def _values(expr: Expression, columns: np.ndarray, memo: dict | None) -> np.ndarray:
    """``expr`` on ``columns``, read from ``memo`` (operand key -> values) or evaluated and kept there."""
    v = None if memo is None else memo.get(expr.key())
    if v is None:
        v = evaluate_columns(expr, columns)
        if memo is not None:
            if len(memo) >= _MAX_MEMO:
                memo.clear()
            memo[expr.key()] = v
    return v


def _assemble(ordered: Iterable[tuple[Expression, bool, bool]], columns: np.ndarray,
              max_size: int, memo: dict | None = None) -> OperandLibrary:
    """The library of ``(operand, parametric, exempt from max_size)`` entries: each evaluated on
    ``columns`` (or read from ``memo``, operand key -> its values on these ``columns``), kept when
    finite, not constant and distinct by values from those before it."""
    n_rows = columns.shape[1]
    entries = [(expr, is_parametric) for expr, is_parametric, any_size in ordered if any_size or expr.size <= max_size]
    every = np.empty((len(entries), n_rows))
    for k, (expr, _) in enumerate(entries):
        every[k] = _values(expr, columns, memo)
    with np.errstate(all="ignore"):
        spread = every.max(axis=1) - every.min(axis=1)
        scale = np.abs(every).max(axis=1)
        usable = (np.isfinite(every).all(axis=1) & (spread > 1e-12 * np.maximum(scale, 1e-300))
                  & np.isfinite(spread))
        # Distinct by values: relative rounding keeps float noise from splitting equal operands.
        rounded = np.round(every / scale[:, None], 9)
    kept: list[int] = []
    seen: set[bytes] = set()
    for k in np.flatnonzero(usable):
        key = rounded[k].tobytes()
        if key not in seen:
            seen.add(key)
            kept.append(int(k))
    exprs = [entries[k][0] for k in kept]
    flags = [entries[k][1] for k in kept]
    values = every[kept]
    with np.errstate(all="ignore"):
        centered = values - values.mean(axis=1, keepdims=True)
        norms2 = np.einsum("ij,ij->i", centered, centered)
        squares = values * values
        # An operand whose squares overflow cannot be matched (its sums are inf): leave it out.
        keep = (norms2 > 0) & np.isfinite(norms2) & np.isfinite(squares.sum(axis=1))
    parametric_flags = np.array(flags, dtype=bool)
    if not keep.all():
        exprs = [e for e, k in zip(exprs, keep) if k]
        values, squares, parametric_flags = values[keep], squares[keep], parametric_flags[keep]
    sizes = np.array([e.size for e in exprs], dtype=np.float64)
    return OperandLibrary(tuple(exprs), values, np.ascontiguousarray(values.T), np.ascontiguousarray(squares.T),
                          sizes, parametric_flags)


def operand_library(expressions: Iterable[Expression], columns: np.ndarray,
                    memo: dict | None = None) -> OperandLibrary | None:
    """A library of just ``expressions`` (those finite and not constant on ``columns``; the first
    of equal ones), or None when none is: the semantic policy's per-expansion operands. ``memo``
    (operand key -> values, kept by the caller for one ``columns``) spares evaluating an operand
    that an earlier expansion evaluated."""
    library = _assemble(((e, False, True) for e in expressions), columns, max_size=0, memo=memo)
    return library if len(library) else None
