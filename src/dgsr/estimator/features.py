"""Feature pre-selection for data with more columns than a policy can name.

The neural policy's vocabulary names at most ``MAX_VARIABLES`` inputs (the paper's model takes
at most 10), so for it wider data is reduced to the columns with the highest estimated mutual
information with the target (a k-nearest-neighbour estimate, scikit-learn's
``mutual_info_regression``); the random policy searches every column, unless the user asks for
pre-selection with ``max_features``. Mutual information rather than correlation: a column that enters
through ``cos`` or ``x**2`` can have zero linear correlation with the target. The regressor
reports the choice (``selected_features_`` and a warning); nothing is truncated silently.
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_selection import mutual_info_regression

# The kNN estimate costs O(n log n) per column; a few thousand rows rank columns reliably.
_MAX_ROWS = 2000


def select_features(X: np.ndarray, y: np.ndarray, max_features: int, *, rng: np.random.Generator) -> np.ndarray:
    """Indices (ascending) of the ``max_features`` columns of ``X`` most informative about ``y``.

    Parameters
    ----------
    X:
        ``[n_rows, n_features]`` finite float64.
    y:
        ``[n_rows]`` finite float64.
    max_features:
        How many columns to keep; all of them when ``X`` has no more.
    rng:
        Draws the row subsample and seeds the estimator's jitter, so the choice is reproducible.

    Returns
    -------
    np.ndarray
        int64 ``[min(max_features, n_features)]``, sorted, so the kept columns keep their order.
    """
    n_rows, n_features = X.shape
    if n_features <= max_features:
        return np.arange(n_features)
    if n_rows > _MAX_ROWS:
        rows = np.sort(rng.choice(n_rows, size=_MAX_ROWS, replace=False))
        X, y = X[rows], y[rows]
    seed = int(rng.integers(2**31 - 1))
    scores = mutual_info_regression(X, y, n_neighbors=3, random_state=seed)
    scores = np.where(np.isfinite(scores), scores, 0.0)
    # Stable sort on -score: ties keep the lower column index, so the result is deterministic.
    order = np.argsort(-scores, kind="stable")
    return np.sort(order[:max_features]).astype(np.int64)
