"""``predict`` where the chosen formula is undefined (CONTRACTS §6): finite input never gives NaN
or inf. Such rows take the value of the next front expression that is finite there (most
accurate first), else the training mean, with a warning naming the rows and what was used."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dgsr.core.evaluate import evaluate
from dgsr.core.exponent_scaling import Scaling
from dgsr.estimator.front import FrontEntry


def predict_front(front: Sequence[FrontEntry], scaling: Scaling | None, y_mean: float, first: int,
                  X_sel: np.ndarray, strict: bool, describe: Callable[[int], str]) -> np.ndarray:
    """Predictions of row ``first`` of ``front`` on ``X_sel`` (the selected columns, in the search's
    units), in the user's units (``scaling``; None: the same units), with the fallback above
    (``strict``: NaN there). ``y_mean`` is the training mean in the search's units; ``describe(i)``
    names row ``i`` in the warning."""
    order = _fallback_order(front, first)
    out = _values(front[order[0]], scaling, X_sel)
    bad = ~np.isfinite(out)
    if not bad.any():
        return out
    bad_rows = np.flatnonzero(bad)
    if strict:
        out[bad] = np.nan
        warnings.warn(f"Row {first} of equations_ is undefined on {len(bad_rows)} of {len(out)} rows "
                      f"({_list_rows(bad_rows)}); they are NaN (strict=True).", RuntimeWarning, stacklevel=3)
        return out
    used = []
    for i in order[1:]:
        rows = np.flatnonzero(bad)
        values = _values(front[i], scaling, X_sel[rows])
        ok = np.isfinite(values)
        if ok.any():
            out[rows[ok]] = values[ok]
            bad[rows[ok]] = False
            used.append(f"row {i} of equations_ ({describe(i)}) on {_list_rows(rows[ok])}")
        if not bad.any():
            break
    if bad.any():
        mean = y_mean if scaling is None else float(scaling.unscale_y(np.array(y_mean)))
        out[bad] = mean
        used.append(f"the training mean ({mean:.6g}) on {_list_rows(np.flatnonzero(bad))}")
    warnings.warn(f"The selected expression (row {first} of equations_: {describe(first)}) is undefined "
                  f"on {len(bad_rows)} of {len(out)} rows ({_list_rows(bad_rows)}); used instead: {'; '.join(used)}. "
                  "predict(..., strict=True) gives NaN there instead.", RuntimeWarning, stacklevel=3)
    return out


def _values(entry: FrontEntry, scaling: Scaling | None, X_scaled: np.ndarray) -> np.ndarray:
    """A front entry on scaled inputs, in the user's units (non-finite where undefined)."""
    values = evaluate(entry.expression, X_scaled)
    return values if scaling is None else scaling.unscale_y(values)


def _fallback_order(front: Sequence[FrontEntry], first: int) -> list[int]:
    rest = sorted((i for i in range(len(front)) if i != first), key=lambda i: front[i].mse)
    return [first, *rest]


def _list_rows(rows: np.ndarray, limit: int = 10) -> str:
    """``rows 3, 8, 20`` (the first ``limit`` of them, then how many more)."""
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


def scaled_r2(y: np.ndarray, pred: np.ndarray, sample_weight: Any = None) -> float:
    """scikit-learn's R² of ``pred``, computed on ``y`` and ``pred`` divided by one power of two.

    The division is exact and leaves R² unchanged, but keeps squared errors of targets near
    1e300 inside the float range (scikit-learn's ``r2_score`` gives NaN there).
    """
    from sklearn.metrics import r2_score

    with np.errstate(all="ignore"):
        top = float(np.max(np.abs(np.concatenate([y.ravel(), np.asarray(pred, dtype=np.float64).ravel()]))))
    exponent = int(np.frexp(top)[1]) if np.isfinite(top) and top > 0 else 0
    return float(r2_score(np.ldexp(y, -exponent), np.ldexp(np.asarray(pred, dtype=np.float64), -exponent),
                          sample_weight=sample_weight))
