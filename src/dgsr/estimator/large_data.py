"""Data too large to value every candidate on every row: PySR's ``batching``.

The search values candidates on ``batch_size`` rows drawn once (:attr:`dgsr.search.config.SearchConfig.max_rows`).
With batching on and more than :data:`REFIT_ROWS` rows, the steps after the search work on
:data:`REFIT_ROWS` evenly spaced rows too (refitting the front's constants, tidying them, the
linear candidate, the pole checks): a smooth law's constants fitted on 100,000 rows are those of
all rows to many digits, while a refit on ten million rows costs minutes. Every front entry's
loss and R² are then computed on all rows (:func:`scored_on_all_rows`), a chunk of rows at a time,
so no full-size copy of the data is made.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence

import numpy as np

from dgsr.core.evaluate import all_finite, as_columns, evaluate_columns, weighted_var
from dgsr.core.expression import Expression
from dgsr.estimator.front import FrontEntry

#: Above this many rows (with batching on), the steps after the search use this many rows.
REFIT_ROWS = 100_000
#: Rows evaluated at once when scoring on all rows: temporaries of a few MB, not of the data's size.
CHUNK_ROWS = 1 << 16
#: What :func:`scoring_seconds` expects of a front: this many entries of this many nodes.
_FRONT_ENTRIES, _ENTRY_NODES = 16, 15


def refit_rows(n_rows: int, batching: bool | None) -> np.ndarray | None:
    """The rows the steps after the search use: None (all of them) unless batching is on (True or
    None) and there are more than :data:`REFIT_ROWS`; then that many evenly spaced rows (no random
    draw: the fit's random streams stay as they are)."""
    if batching is False or n_rows <= REFIT_ROWS:
        return None
    return np.unique(np.linspace(0, n_rows - 1, REFIT_ROWS).round().astype(np.int64))


def scoring_seconds(X: np.ndarray) -> float:
    """The expected seconds of :func:`scored_on_all_rows` on ``X``, timed on this machine now:
    one chunk made into columns and a typical front evaluated on it, times the chunks. Its load
    is in the timing, so the budget plan keeps as much as a loaded machine needs."""
    chunk = X[:CHUNK_ROWS]
    terms = [Expression.variable(j % X.shape[1]) for j in range((_ENTRY_NODES + 1) // 2)]
    typical = terms[0]
    for term in terms[1:]:
        typical = Expression.combine("mul", typical, term)
    started = time.perf_counter()
    columns = as_columns(chunk)
    for _ in range(_FRONT_ENTRIES):
        evaluate_columns(typical, columns)
    return (time.perf_counter() - started) * len(X) / max(len(chunk), 1)


def scored_on_all_rows(entries: Sequence[FrontEntry], X: np.ndarray, y: np.ndarray,
                       w: np.ndarray | None) -> list[FrontEntry]:
    """``entries`` with their loss and R² measured on every row of ``X`` (rows by columns), as
    :func:`dgsr.estimator.front.front_entry` measures them; entries not finite on every row are
    dropped. Each chunk of rows is made into columns once, for every entry."""
    y_var = weighted_var(y, w)
    sums = np.zeros(len(entries))
    for start in range(0, len(y), CHUNK_ROWS):
        stop = start + CHUNK_ROWS
        columns, y_chunk = as_columns(X[start:stop]), y[start:stop]
        for i, entry in enumerate(entries):
            if math.isfinite(sums[i]):
                sums[i] += _squared_error_sum(entry, columns, y_chunk, None if w is None else w[start:stop])
    total = float(len(y)) if w is None else float(np.sum(w))
    out = []
    for entry, error_sum in zip(entries, sums):
        mse = float(error_sum) / total
        if math.isfinite(mse):
            r2 = 1.0 - mse / y_var if y_var > 0 else (1.0 if mse == 0.0 else -math.inf)
            out.append(dataclasses.replace(entry, mse=mse, r2=r2))
    return out


def _squared_error_sum(entry: FrontEntry, columns: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
    """The (weighted) sum of squared errors of ``entry`` on these rows; inf where it is not finite."""
    pred = evaluate_columns(entry.expression, columns)
    if not all_finite(pred):
        return math.inf
    with np.errstate(all="ignore"):
        errors = (pred - y) ** 2
        return float(np.sum(errors) if w is None else np.dot(w, errors))
