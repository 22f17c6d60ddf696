"""Cross-validated model selection for small data sets (``model_selection="cv"``).

On a few dozen noisy rows the front's larger formulas fit the training rows better and
predict new rows worse, and a rule read off the training loss (``"balanced"``) cannot see it.
``"cv"`` checks that rule's pick by K-fold cross-validation of the front's *structures*: each
expression's constants are refitted on K-1 folds (a few Levenberg-Marquardt steps from its
fitted values) and it is scored on the fold left out, so every row gets an out-of-fold error.
The pick stands unless another expression's out-of-fold error is lower by more than one
standard error of the paired per-row difference; then the smallest expression within one
standard error of the lowest is taken (Breiman's one-standard-error rule). On exact laws the
out-of-fold errors of the law are ~0, so nothing changes there; on large data the training
loss is already an honest estimate, so the check runs only up to :data:`CV_MAX_ROWS` rows.

Deterministic for a seed: the folds come from the caller's generator, the refits have fixed
step counts and use all rows of their folds (no subsampling, no time cap in the result).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression

# Defined with the other held-out choices (the undersampled-wave fallback applies it too); re-exported.
from dgsr.estimator.model_selection import cross_validated_choice  # noqa: F401

#: Folds of the check.
CV_FOLDS = 5
#: Above this many training rows the check is skipped (the training loss is then a fair guide,
#: and refitting the front K times would take a visible share of a short budget).
CV_MAX_ROWS = 1000
#: Fewer rows than this and there is nothing to hold out: the pick stands.
CV_MIN_ROWS = 2 * CV_FOLDS
#: Levenberg-Marquardt iterations per refit (from the constants fitted on all rows, which are
#: already close: the fold's optimum moves little).
CV_REFIT_STEPS = 20
#: Safety cap on one refit's wall time; a fit that reaches it keeps its best point so far.
_REFIT_SECONDS = 0.5


def fold_labels(n_rows: int, rng: np.random.Generator, folds: int = CV_FOLDS) -> np.ndarray:
    """``[n_rows]`` fold numbers ``0..folds-1``, balanced (sizes differ by at most one), shuffled."""
    return rng.permutation(np.arange(n_rows) % folds)


def out_of_fold_errors(exprs: Sequence[Expression], columns: np.ndarray, y: np.ndarray,
                       labels: np.ndarray, rng: np.random.Generator, w: np.ndarray | None = None,
                       max_evaluations: float = math.inf) -> tuple[np.ndarray | None, float]:
    """``([n_exprs, n_rows] squared errors, evaluations spent)``.

    Row ``i``'s error for an expression is measured with constants refitted on the rows of the
    other folds (``labels`` as from :func:`fold_labels`); weighted like
    :func:`dgsr.estimator.model_selection.squared_errors`. An expression that is non-finite
    on a held-out row gets a row of inf (it cannot be trusted on new rows either).
    Evaluations count as CONTRACTS §2 does (a refit's passes over its folds' rows as fractions,
    the held-out scoring of each expression as one); when ``max_evaluations`` would be
    exceeded the check stops and the errors are None.
    """
    n_rows = len(y)
    scale = np.ones(n_rows) if w is None else w / np.mean(w)
    errors = np.empty((len(exprs), n_rows))
    spent = 0.0
    folds = np.unique(labels)
    for k, expr in enumerate(exprs):
        row = np.empty(n_rows)
        if spent + 1.0 > max_evaluations:
            return None, spent
        spent += 1.0  # the held-out scoring: every row once
        for fold in folds:
            test = labels == fold
            train = ~test
            fitted = expr
            if expr.n_constants:
                left = (max_evaluations - spent) / train.mean()
                if left < 4.0:  # a fit always makes its start and its final scoring
                    return None, spent
                fit = fit_constants(expr, columns[:, train], y[train], method="lm", rng=rng,
                                    time_limit=_REFIT_SECONDS, batch_size=int(train.sum()),
                                    max_iter=CV_REFIT_STEPS, sample_weight=None if w is None else w[train],
                                    max_evaluations=left)
                spent += fit.evaluations * train.mean()
                if fit.improved:
                    fitted = fit.expression
            with np.errstate(all="ignore"):
                row[test] = scale[test] * (evaluate_columns(fitted, columns[:, test]) - y[test]) ** 2
        errors[k] = row if np.isfinite(row).all() else np.inf
    if spent > max_evaluations:
        return None, spent
    return errors, spent
