"""Ratios of two small polynomials read off the data by linear least squares.

Kinetics and isotherms are rational in their variables: Michaelis-Menten ``V*s/(K + s)``,
substrate inhibition ``V*s/(K + s + s**2/Ki)``, inhibited rates ``V*s/(K + s*(1 + i/Ki))``, the
BET isotherm ``c*x/((1 - x)*(1 + b*x))``. Their constants sit in the denominator, where no chain
``op(a*u + b)`` of one variable holds them together. Written as ``y*Q(x) = P(x)`` with ``Q``'s
constant term 1, a ratio ``P/Q`` is linear in its coefficients (Levy 1959's linearisation), so
every pair of small term sets (a numerator of at most two terms and a denominator of at most
three, over the constant, the variables, their squares and their pairwise products) is one
small least-squares solve on the even rows. The best of those by an information criterion that
charges each coefficient are scored as ratios on the odd rows; the few that explain them best
become operands, and the search's constant fits refine them. A denominator that changes sign on the
data (a pole inside its range) is left out. Nothing here names a law.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from dgsr.core.expression import Expression

#: At most this many terms in the numerator, and in the denominator.
MAX_NUMERATOR, MAX_DENOMINATOR = 2, 4
#: The ratios kept: the best by the criterion, and the next ones as good within this many nats.
KEEP, _CLOSE = 2, 2.0
_MIN_ROWS = 20
#: A ratio must leave less than this share of y's variance on the held-out rows.
_MAX_SHARE = 0.1
#: Errors below this share of the variance are all rounding: there the charge per coefficient decides.
_FLOOR = 1e-12
#: The structures, best by their fit-row criterion, that are refined and scored on held-out rows.
_SCREENED = 40
_REWEIGHTS = 3

Term = tuple[int, ...]  # the variables multiplied: () the constant, (i,) x_i, (i, i) x_i**2, (i, j) x_i*x_j


def _terms(variables: Sequence[int]) -> list[Term]:
    """The constant, each variable, and each product of two (squares included)."""
    return [(), *((i,) for i in variables), *itertools.combinations_with_replacement(variables, 2)]


def _values(term: Term, columns: np.ndarray) -> np.ndarray:
    out = np.ones(columns.shape[1])
    for i in term:
        out = out * columns[i]
    return out


def _expression(term: Term, coefficient: float) -> Expression:
    factors = [Expression.variable(i) for i in term]
    if len(term) == 2 and term[0] == term[1]:
        factors = [Expression.combine("sq", factors[0])]
    out = Expression.constant(coefficient)
    for f in factors:
        out = Expression.combine("mul", out, f)
    return out


def _polynomial(terms: Sequence[Term], coefficients: Sequence[float]) -> Expression:
    parts = [_expression(t, float(c)) for t, c in zip(terms, coefficients)]
    out = parts[0]
    for p in parts[1:]:
        out = Expression.combine("add", out, p)
    return out


def _structures(n_terms: int, n_top: int, n_bottom: int) -> np.ndarray:
    """Every numerator of ``n_top`` terms beside every denominator of ``n_bottom`` (columns
    ``n_terms + j`` of the design), one row each."""
    return np.array([[*top, *(n_terms + j for j in bottom)]
                     for top in itertools.combinations(range(n_terms), n_top)
                     for bottom in itertools.combinations(range(n_terms), n_bottom)])


def rational_operands(columns: np.ndarray, y: np.ndarray, variables: Sequence[int],
                      allowed: frozenset[str]) -> list[Expression]:
    """Up to :data:`KEEP` ratios ``P/Q`` over ``variables`` (indices into ``columns``
    ``[n_features, n_rows]``) that explain held-out rows of ``y`` best (see the module's
    docstring); [] where none leaves less than a tenth of ``y``'s variance, or the operators
    (``add``, ``mul``, ``div``, ``sq``) are not allowed."""
    if not {"add", "mul", "div", "sq"} <= allowed or not variables or columns.shape[1] < _MIN_ROWS:
        return []
    y = np.asarray(y, dtype=np.float64)
    variance = float(np.var(y))
    if not (np.all(np.isfinite(y)) and math.isfinite(variance) and variance > 0):
        return []
    terms = _terms(sorted(variables))
    with np.errstate(all="ignore"):
        values = np.vstack([_values(t, columns) for t in terms])  # [n_terms, n_rows]
    kept = np.all(np.isfinite(values), axis=1)
    terms, values = [t for t, k in zip(terms, kept) if k], values[kept]
    fit, test = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    # P - y*Q = 0 is linear and homogeneous in the coefficients of P and Q: each structure's
    # coefficients are the least singular direction of its columns (no term is forced to 1, so
    # a law whose constant term is small stays well posed), columns scaled to unit norm.
    with np.errstate(all="ignore"):
        design = np.vstack([values[:, fit], -y[fit] * values[:, fit]]).T
        norms = np.linalg.norm(design, axis=0)
        if not (np.all(np.isfinite(norms)) and np.all(norms > 0)):
            return []
        gram = (design / norms).T @ (design / norms)
    screened: list[tuple[float, list[int], int]] = []
    for n_top in range(1, MAX_NUMERATOR + 1):
        for n_bottom in range(1, MAX_DENOMINATOR + 1):
            chosen = _structures(len(terms), n_top, n_bottom)
            if not len(chosen):
                continue
            with np.errstate(all="ignore"):
                coef = np.linalg.eigh(gram[chosen[:, :, None], chosen[:, None, :]])[1][:, :, 0] / norms[chosen]
                criterion = _criterion(coef, chosen, n_top, values[:, fit], y[fit], variance)
            screened.extend((float(criterion[row]), chosen[row].tolist(), n_top)
                            for row in np.flatnonzero(np.isfinite(criterion)).tolist())
    screened.sort(key=lambda s: s[0])
    scored: list[tuple[float, Expression]] = []
    for _, chosen, n_top in screened[:_SCREENED]:
        coef = _reweighted(design, norms, chosen, n_top, values[:, fit])
        found = None if coef is None else _scored(terms, chosen, n_top, coef / norms[chosen], values, y, test, variance)
        if found is not None:
            scored.append(found)
    if not scored:
        return []
    scored.sort(key=lambda s: s[0])
    best = scored[0][0]
    return [e for score, e in scored[:KEEP] if score <= best + _CLOSE]


def _ratio(coef: np.ndarray, chosen: np.ndarray, n_top: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numerators and denominators ``[m, n_rows]`` of a batch of structures (``coef`` and
    ``chosen`` ``[m, k]``) on the rows of ``values``."""
    n_terms = values.shape[0]
    numerator = np.einsum("mk,mkn->mn", coef[:, :n_top], values[chosen[:, :n_top]])
    denominator = np.einsum("mk,mkn->mn", coef[:, n_top:], values[chosen[:, n_top:] - n_terms])
    return numerator, denominator


def _criterion(coef: np.ndarray, chosen: np.ndarray, n_top: int, values: np.ndarray, y: np.ndarray,
               variance: float) -> np.ndarray:
    """Each structure's information criterion on these rows: the ratio's own error (the
    linearised one weighs each row by ``Q**2``, and a noisy law would then prefer a wrong, flatter
    ``Q``), charged ``log(n)`` per free coefficient; inf where ``Q`` changes sign."""
    numerator, denominator = _ratio(coef, chosen, n_top, values)
    one_signed = np.all(denominator > 0, axis=1) | np.all(denominator < 0, axis=1)
    mse = np.mean((y - numerator / denominator) ** 2, axis=1)
    criterion = len(y) * np.log(np.maximum(mse / variance, _FLOOR)) + (chosen.shape[1] - 1) * math.log(len(y))
    return np.where(one_signed, criterion, np.inf)


def _reweighted(design: np.ndarray, norms: np.ndarray, chosen: list[int], n_top: int,
                values: np.ndarray) -> np.ndarray | None:
    """The structure's coefficients (over columns ``chosen`` of ``design`` scaled by ``norms``),
    solved again with each row weighted by ``1/|Q|`` of the previous solve (Sanathanan and
    Koerner 1963): the linearised error is ``Q`` times the ratio's, and this evens it out."""
    columns = design[:, chosen] / norms[chosen]
    bottom = values[np.array(chosen[n_top:]) - values.shape[0]].T / norms[chosen[n_top:]]
    weights = np.ones(columns.shape[0])
    coef = None
    with np.errstate(all="ignore"):
        for _ in range(_REWEIGHTS + 1):
            try:
                solved = np.linalg.svd(columns * weights[:, None], full_matrices=False)[2][-1]
            except np.linalg.LinAlgError:
                break
            if not np.all(np.isfinite(solved)):
                break
            coef = solved
            q = np.abs(bottom @ coef[n_top:])
            if not (np.all(np.isfinite(q)) and np.all(q > 0)):
                break
            weights = 1.0 / q
    return coef


def _scored(terms: list[Term], chosen: list[int], n_top: int, coef: np.ndarray, values: np.ndarray,
            y: np.ndarray, test: np.ndarray, variance: float) -> tuple[float, Expression] | None:
    """The held-out criterion of the ratio (``coef`` over columns ``chosen``) on the ``test``
    rows, and the ratio, its denominator's largest coefficient 1; None where it fails (a
    denominator that changes sign on the data, a poor fit)."""
    with np.errstate(all="ignore"):
        numerator, denominator = _ratio(coef[None, :], np.array([chosen]), n_top, values)
        if not (np.all(denominator > 0) or np.all(denominator < 0)):
            return None
        mse = float(np.mean((y[test] - numerator[0, test] / denominator[0, test]) ** 2))
    if not math.isfinite(mse) or mse > _MAX_SHARE * variance:
        return None
    score = len(test) * math.log(max(mse / variance, _FLOOR)) + (len(chosen) - 1) * math.log(len(test))
    n_terms = len(terms)
    bottom = coef[n_top:]
    scale = float(bottom[np.argmax(np.abs(bottom))])
    ratio = Expression.combine("div", _polynomial([terms[i] for i in chosen[:n_top]], coef[:n_top] / scale),
                               _polynomial([terms[j - n_terms] for j in chosen[n_top:]], bottom / scale))
    return score, ratio
