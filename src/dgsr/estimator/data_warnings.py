"""The warnings ``fit`` gives about its rows before searching: a constant target (the model is
that constant) and rows too few for ``max_size`` (large formulas could fit them exactly)."""

from __future__ import annotations

import numpy as np

from dgsr.core.exponent_scaling import is_constant_target
from dgsr.estimator.fit_search import SearchRows
from dgsr.estimator.input_checks import TrainingData
from dgsr.estimator.search_cv import is_tiny
from dgsr.estimator.user_warnings import warn_user


def _constant_reason(y: np.ndarray, y_weighted: np.ndarray) -> str:
    """Why the target counts as constant: ``y`` itself, or only on the rows with a non-zero
    ``sample_weight`` (``y_weighted``, the rows the fit keeps)."""
    value = float(y_weighted[0]) if len(y_weighted) else float(y[0])
    if len(y_weighted) == len(y) or is_constant_target(y):
        return f"y is constant ({float(y[0]):g})"
    if len(y_weighted) == 1:
        return f"only one row has a non-zero sample_weight (y = {value:g} there)"
    return f"y is constant ({value:g}) on the {len(y_weighted)} rows with a non-zero sample_weight"


def warn_about_rows(data: TrainingData, rows: SearchRows, max_size: int) -> None:
    """Say when the target is constant (the fit is then that constant) or the rows are few for ``max_size``."""
    if is_constant_target(rows.y):
        warn_user(f"{_constant_reason(data.y, rows.scaling.unscale_y(rows.y))}; the model is that constant "
                  "(no search was run).")
    elif is_tiny(len(rows.y), max_size):
        warn_user(f"Only {len(rows.y)} rows for expressions of up to max_size={max_size} nodes (as many as "
                  f"{max_size // 2} fitted constants): large formulas can fit these rows exactly and still be "
                  f"wrong between them. Prefer the small formulas of equations_, or pass max_size={len(rows.y)} "
                  "(no more nodes than rows) or more data.")
