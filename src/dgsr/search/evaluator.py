"""Scoring candidate expressions on the training rows: the search's hot path.

An :class:`Evaluator` computes one candidate on the rows (a fixed subsample of at most
``max_rows``), values it by R² with its outer linear coefficients fitted in closed form (linear
scaling, per-term least squares), fits inner constants when asked, caches by expression key,
counts evaluations as CONTRACTS §2 says, and offers what it scores to the Pareto archive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.constants import DEFAULT_METHOD, fit_constants
from dgsr.core.evaluate import as_columns, evaluate_columns, evaluate_columns_unguarded
from dgsr.core.expression import Expression
from dgsr.core.inner_fit import INNER_FIT_TOLERANCES, fit_inner_constants
from dgsr.core.kernels import child as kernel_child
from dgsr.core.kernels import compiler, scoring
from dgsr.core.kernels.structure import COLLINEAR
from dgsr.core.linear_terms import (
    additive_terms,
    first_occurrences,
    fit_term_weights,
    scale_expression,
    weighted_sum,
)
from dgsr.core.pareto import ParetoArchive
from dgsr.search.config import SearchConfig


class Evaluator:
    """Scores expressions on the training rows, caching by key, counting, feeding the archive."""

    def __init__(self, X: np.ndarray, y: np.ndarray, config: SearchConfig, budget: Budget,
                 archive: ParetoArchive, rng: np.random.Generator, sample_weight: np.ndarray | None = None):
        y = np.asarray(y, dtype=np.float64)
        self.weight = 1.0  # evaluations counted per scoring pass (CONTRACTS §2: b rows of N count b/N)
        if config.max_rows is not None and len(y) > config.max_rows:
            rows = np.sort(rng.choice(len(y), size=config.max_rows, replace=False))
            self.weight = config.max_rows / len(y)
            X, y = X[rows], y[rows]
            sample_weight = sample_weight[rows] if sample_weight is not None else None
        self.columns = as_columns(X)
        self.y = y
        self.n = len(self.y)
        # Row weights normalised to mean 1, so every weighted mean is dot(w, .) / n; None = equal.
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if w is not None and (np.ptp(w) == 0 or not np.sum(w) > 0):
            w = None
        self.w = None if w is None else w * (self.n / float(np.sum(w)))
        self.y_mean = float(np.mean(self.y)) if self.w is None else float(np.dot(self.w, self.y)) / self.n
        self.y_centered = self.y - self.y_mean
        self.wy_centered = self.y_centered if self.w is None else self.w * self.y_centered
        self.y_var = float(np.dot(self.y_centered, self.wy_centered)) / self.n
        # The compiled scoring path (numba): unweighted rows only; the numpy path is the reference.
        self.compiled = compiler.AVAILABLE and self.w is None
        self.config = config
        self.budget = budget
        self.archive = archive
        self.rng = rng
        self.method = config.constant_method or DEFAULT_METHOD
        self.cache: dict[tuple, float] = {}
        self.fitted: set[tuple] = set()
        self.best_r2 = -math.inf
        self.best_size = 0
        self.fitted_forms: dict[tuple, Expression] = {}  # child key -> its inner-fitted form
        if config.inner_fit_steps:  # one fixed subsample for every child's inner fit
            rows = rng.choice(self.n, size=min(config.inner_fit_rows, self.n), replace=False)
            rows.sort()
            self.fit_columns, self.fit_y = self.columns[:, rows], self.y[rows]

    def score_child(self, expr: Expression, key: tuple) -> tuple[float, Expression]:
        """R² of a new child and the form the tree keeps: with its inner constants fitted first
        (``inner_fit_steps``), else the child itself. ``key`` is the child's own key."""
        if not self.config.inner_fit_steps:
            return self.score(expr, False, key), expr
        form = self.fitted_forms.get(key)
        if form is None:
            if self.compiled and not expr.is_empty:
                child = kernel_child.fit_and_score(
                    expr.symbols, expr.constants, self.fit_columns, self.fit_y, self.config.inner_fit_steps,
                    self.columns, self.y, linear_terms=self.config.linear_terms and self.y_var > 0,
                    max_size=self.config.max_size, **INNER_FIT_TOLERANCES)
                if child.score is not None:  # else collinear terms: the least-squares path below
                    return self._child_scored(expr, key, child)
                collinear = child.fit_status == COLLINEAR  # known: that kernel is not run again
            else:
                collinear = False
            fit = fit_inner_constants(expr, self.fit_columns, self.fit_y, steps=self.config.inner_fit_steps,
                                      collinear=collinear)
            if fit.passes == 0:  # no inner constants: nothing was fitted (and nothing to remember)
                return self.score(expr, False, key), expr
            form = self._fitted_form(key, fit.expression, fit.passes)
        return self.score(form, False), form

    def _child_scored(self, expr: Expression, key: tuple, child: kernel_child.ChildScore) -> tuple[float, Expression]:
        """:meth:`score_child` from the compiled call's results: the same steps, caches and counts
        as the fit followed by :meth:`score`, with the scoring already done."""
        if child.passes:
            form = expr if child.constants is None else Expression._trusted(expr.symbols, child.constants)
            expr = self._fitted_form(key, form, child.passes)
            key = expr.key()
        hit = self.cache.get(key)
        if hit is not None:
            return hit, expr
        r2 = self._score_compiled(expr, child)
        self._remember(key, r2)
        return r2, expr

    def _fitted_form(self, key: tuple, form: Expression, passes: int) -> Expression:
        """Count an inner fit of ``passes`` passes and remember its ``form`` for the child ``key``."""
        self.budget.add(passes * self.fit_y.shape[0] / self.n * self.weight)
        if len(self.fitted_forms) >= self.config.cache_size:
            self.fitted_forms.clear()
        self.fitted_forms[key] = form
        return form

    def score(self, expr: Expression, fit: bool, key: tuple | None = None) -> float:
        """R² of ``expr`` (constants fitted first when ``fit`` and it has any); -inf if invalid.

        ``key`` is ``expr.key()`` when the caller already has it.
        """
        key = expr.key() if key is None else key
        hit = self.cache.get(key)
        if hit is not None and (not fit or key in self.fitted or not expr.n_constants):
            return hit
        if fit and expr.n_constants:
            result = fit_constants(expr, self.columns, self.y, method=self.method, rng=self.rng,
                                   time_limit=self.budget.cap(self.config.constant_time_limit),
                                   batch_size=self.config.constant_batch_size, y_var=self.y_var,
                                   max_evaluations=self.budget.evaluations_left() / self.weight,
                                   sample_weight=self.w)
            self.budget.add(result.evaluations * self.weight)
            self.fitted.add(key)
            r2 = result.r2
            self._offer(result.expression, r2)
            if hit is not None and hit > r2:  # the mutated constants were better than the fit
                r2 = hit
        elif self.compiled and not expr.is_empty:
            r2 = self._score_compiled(expr)
        else:
            terms = additive_terms(expr) if self.config.linear_terms else []
            if sum(1 for _, t in terms if t.variables) >= 2:
                # evaluated term by term (the same work as the whole), so the terms can be reweighted
                with np.errstate(all="ignore"):
                    values = [evaluate_columns_unguarded(t, self.columns) for _, t in terms]
                    pred = sum(sign * v for (sign, _), v in zip(terms, values))
                self.budget.add(self.weight)
                r2 = max(self._score_prediction(expr, pred), self._score_terms(terms, values))
            else:
                pred = evaluate_columns(expr, self.columns)
                self.budget.add(self.weight)
                r2 = self._score_prediction(expr, pred)
        self._remember(key, r2)
        return r2

    def _remember(self, key: tuple, r2: float) -> None:
        if len(self.cache) >= self.config.cache_size:
            self.cache.clear()
            self.fitted.clear()
        self.cache[key] = r2

    def _score_compiled(self, expr: Expression, child: kernel_child.ChildScore | None = None) -> float:
        """:meth:`score`'s unfitted branch in one compiled call (:func:`scoring.score_sum`):
        the same values up to rounding; unweighted rows only. ``child``: that call's results
        already computed with the child's inner fit (:func:`kernel_child.fit_and_score`)."""
        if child is None:
            encoded = scoring.encode_sum(expr.symbols)
            fit_terms = (self.config.linear_terms and encoded.varying.shape[0] >= 2
                         and encoded.varying_size <= self.config.max_size and self.y_var > 0)
            result = scoring.score_sum(encoded, expr.constants, self.columns, self.y, fit_terms)
            varying, lengths = encoded.varying, encoded.lengths
        else:
            result, fit_terms, varying, lengths = child.score, child.fit_terms, child.varying, child.lengths
        self.budget.add(self.weight)
        r2 = self._score_moments(expr, result.mean, result.var, result.cov)
        if not fit_terms or result.status == scoring.FIT_NON_FINITE:
            return r2
        if child is None:  # the weighted sum's size and its weights' finiteness (the compiled call reads them off)
            used = varying[result.distinct]
            size, finite = int(lengths[used].sum()) + 3 * len(used) + 1, bool(np.isfinite(result.weights).all())
        else:
            size, finite = child.terms_size, child.weights_finite
        weights = None  # the fitted weights of the used terms, when not the scoring's own
        if result.status == scoring.FIT_COLLINEAR:  # numpy's minimum-norm least squares
            fit = fit_term_weights(result.values[varying[result.distinct]], self.y)
            if fit is None:
                return r2
            weights, intercept, mse = fit
        else:
            intercept, mse = result.intercept, result.mse
            if not (math.isfinite(intercept) and math.isfinite(mse) and finite):
                return r2
        terms_r2 = 1.0 - mse / self.y_var

        def build() -> Expression:
            terms = additive_terms(expr)
            used = varying[result.distinct]
            return weighted_sum([terms[i][1] for i in used], result.weights[result.distinct] if weights is None
                                else weights, intercept)

        self._offer_built(size, terms_r2, mse, build)
        return max(r2, terms_r2)

    def _score_prediction(self, expr: Expression, pred: np.ndarray) -> float:
        """R² of ``pred``, or of its least-squares rescaling ``a*pred + b`` when linear scaling is on.

        Both come from the first two moments of ``pred`` and its covariance with ``y``: one pass,
        no second evaluation; the scaled expression is built only when the archive keeps it.
        """
        n = self.n
        w = self.w
        with np.errstate(all="ignore"):
            mean = float(np.add.reduce(pred) if w is None else np.dot(w, pred)) / n
            centered = pred - mean
            var = float(np.dot(centered, centered if w is None else w * centered)) / n
            cov = float(np.dot(centered, self.wy_centered)) / n
        return self._score_moments(expr, mean, var, cov)

    def _score_moments(self, expr: Expression, mean: float, var: float, cov: float) -> float:
        """:meth:`_score_prediction` from the prediction's mean, variance and covariance with ``y``."""
        y_var = self.y_var
        if not (math.isfinite(var) and math.isfinite(cov)):
            return -math.inf  # NaN or inf somewhere in pred (or an overflow of its moments)
        offset = self.y_mean - mean
        mse = max(y_var + var - 2.0 * cov + offset * offset, 0.0)  # float * overflows to inf, ** raises
        r2 = 1.0 - mse / y_var if y_var > 0 else (1.0 if mse == 0 else -math.inf)
        self._offer(expr, r2, mse)
        # A prediction whose spread is rounding noise about its mean (relative spread below 1e-12;
        # a sum of n values rounds at about 1e-16 * n) is a constant: no slope to fit.
        if not self.config.linear_scaling or var <= 1e-24 * mean * mean or var <= 1e-300 or y_var <= 0:
            return r2
        scaled_r2 = min((cov / var) * (cov / y_var), 1.0)  # var * y_var can underflow to 0
        scaled_size = expr.size + 4
        if not math.isfinite(scaled_r2) or scaled_r2 <= r2 or scaled_size > self.config.max_size:
            return r2
        a = cov / var
        self._offer_built(scaled_size, scaled_r2, (1.0 - scaled_r2) * y_var,
                          lambda: scale_expression(expr, a, self.y_mean - a * mean))
        return scaled_r2

    def _score_terms(self, terms: list[tuple[float, Expression]], values: list[np.ndarray]) -> float:
        """R² of the least-squares reweighting ``b + sum w_i t_i`` of the non-constant additive terms
        (offered to the archive as an expression); -inf when it cannot be built within ``max_size``."""
        keep = [i for i, (_, t) in enumerate(terms) if t.variables]
        size = sum(terms[i][1].size for i in keep) + 3 * len(keep) + 1
        if size > self.config.max_size or self.y_var <= 0:
            return -math.inf
        keep = first_occurrences(keep, values)  # a term repeated fits once (as the compiled path)
        fit = fit_term_weights(np.stack([values[i] for i in keep]), self.y, self.w)
        if fit is None:
            return -math.inf
        weights, intercept, mse = fit
        r2 = 1.0 - mse / self.y_var
        size = sum(terms[i][1].size for i in keep) + 3 * len(keep) + 1
        self._offer_built(size, r2, mse, lambda: weighted_sum([terms[i][1] for i in keep], weights, intercept))
        return r2

    def _offer_built(self, size: int, r2: float, mse: float, build: Callable[[], Expression]) -> None:
        """Offer the expression ``build()`` makes (of ``size`` nodes), building it only when the
        archive would keep it; otherwise only the best-so-far statistics are updated."""
        if self.archive.accepts(size, mse):
            self._offer(build(), r2, mse)
        else:
            self._note_best(r2, size)

    def _offer(self, expr: Expression, r2: float, mse: float | None = None) -> None:
        if not math.isfinite(r2):
            return
        if mse is None:  # R² = 1 - mse / var(y): the loss needs no second pass over the rows
            mse = max(1.0 - r2, 0.0) * self.y_var
        self.archive.add(expr, mse, r2)
        self._note_best(r2, expr.size)

    def _note_best(self, r2: float, size: int) -> None:
        if r2 > self.best_r2 or (r2 == self.best_r2 and size < self.best_size):
            self.best_r2, self.best_size = r2, size
