"""What ``warm_start=True`` carries from one fit to the next (issue 48, item 3).

The previous fit's front is kept as *structures*: the next fit runs its search with the whole
budget, exactly as a cold fit would, and offers the kept expressions to the final refit beside
what it found, so each is re-valued (constants refitted, losses measured) on the new rows. No loss
from the old rows reaches the new front, and a warm fit has every candidate a cold fit of the
same budget has. On the same rows the fit continues the series with fresh random streams (it
explores further); on changed rows it uses a cold fit's streams (a cold fit plus the old
structures), so at a fixed ``max_evaluations`` it is never less accurate than that cold fit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoArchive


def data_key(X: np.ndarray, y: np.ndarray, sample_weight: Any) -> str:
    """A digest of the training rows (values, shapes and weights): equal for the same data."""
    h = hashlib.blake2b(digest_size=16)
    for part in (X, y, None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)):
        if part is None:
            h.update(b"none")
            continue
        a = np.ascontiguousarray(part, dtype=np.float64)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def kept_structures(archive: ParetoArchive | None) -> list[Expression]:
    """The previous fit's front as expressions to re-value (empty without one)."""
    return [] if archive is None else [e.expression for e in archive.front()]


def kept_archive(archive: ParetoArchive, entries: Sequence[Any]) -> ParetoArchive:
    """``archive`` (this fit's search) with the refitted front ``entries`` added: losses all from these rows."""
    for e in entries:
        archive.add(e.expression, e.mse, e.r2, penalised=True)
    return archive
