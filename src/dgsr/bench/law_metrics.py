"""Metrics of the ``laws`` suite: extrapolation R², recovery, and the no-signal linear baseline.

A model *recovers* a law when it is SRBench's symbolic solution (equal up to an additive or a
multiplicative constant after rounding floats, :func:`~dgsr.bench.protocol.is_symbolic_solution`)
or when its R² against the noise-free law is at least :data:`RECOVERED_R2` on the *stretched box*
(each training range widened by half its width on both sides, in log space for log-uniform
variables, without leaving the variable's domain). The second path accepts a law whose fitted
constants are slightly off, and rejects a curve that only interpolates the training box.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .datasets import stable_seed
from .laws import Law, evaluate_truth, law_expression, sample_inputs
from .protocol import SOLUTION_R2_GATE, Split, is_symbolic_solution, r2_score

RECOVERED_R2 = 0.999
EXTRAP_ROWS = 2000


def extrapolation_points(law: Law, seed: int, n: int = EXTRAP_ROWS) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` rows from the stretched box and the noise-free law on them; deterministic in (law, seed)."""
    # Its own seed, so the extrapolation rows never coincide with the training rows' stream.
    rng = np.random.default_rng(stable_seed(f"{law.name}|stretched", seed))
    X = sample_inputs(law, n, rng, stretched=True)
    return X, evaluate_truth(law, X)


def model_predictions(model, X: pd.DataFrame) -> np.ndarray:
    """A SymPy model (in the column names) evaluated on the rows of ``X``; NaN where it is undefined.

    Raises KeyError when the model uses a name that is not a column.
    """
    import sympy

    from .datasets import parse_formula

    # Text goes through the checked parser (never a bare sympify, which calls eval).
    expr = parse_formula(model, list(X.columns)) if isinstance(model, str) else sympy.sympify(model)
    names = sorted(s.name for s in expr.free_symbols)
    missing = [n for n in names if n not in X.columns]
    if missing:
        raise KeyError(f"model uses names that are not columns: {missing}")
    fn = sympy.lambdify([sympy.Symbol(n) for n in names], expr, modules="numpy")
    with np.errstate(all="ignore"):
        pred = np.asarray(fn(*(X[n].to_numpy(np.float64) for n in names)))
    if np.iscomplexobj(pred):  # a complex value is outside the model's real domain
        pred = np.where(pred.imag != 0, np.nan, pred.real)
    return np.broadcast_to(pred.astype(np.float64), (len(X),)).copy()


def extrapolation_r2(model, law: Law, seed: int) -> float:
    """R² of ``model`` against the noise-free law on the stretched box (-inf where it is not finite)."""
    X, y = extrapolation_points(law, seed)
    try:
        pred = model_predictions(model, X)
    except Exception:  # noqa: BLE001  (a model SymPy cannot evaluate is as bad as a non-finite one)
        return float("-inf")
    return r2_score(y, pred)


def recovery(model, law: Law, seed: int, *, r2_test: float | None = None, exact: bool | None = None,
             seconds: float = 10.0) -> dict[str, Any]:
    """``exact``, ``r2_extrap`` and ``recovered`` of a model for a law with a ground truth.

    ``exact`` given (the runner's own symbolic check) is reused; otherwise the symbolic check runs
    when ``r2_test`` is above SRBench's gate (or is not given).
    """
    r2_extrap = extrapolation_r2(model, law, seed)
    if exact is None:
        gate = r2_test is None or r2_test > SOLUTION_R2_GATE
        exact = bool(gate and is_symbolic_solution(model, law_expression(law), seconds))
    return {"exact": exact, "r2_extrap": r2_extrap, "recovered": exact or r2_extrap >= RECOVERED_R2}


def linear_baseline_r2(split: Split) -> float:
    """Test R² of ordinary least squares on the same split (the no-signal reference)."""
    from sklearn.linear_model import LinearRegression

    fit = LinearRegression().fit(split.X_train.to_numpy(np.float64), split.y_train)
    return r2_score(split.y_test, fit.predict(split.X_test.to_numpy(np.float64)))


def law_fields(law: Law, model, split: Split, seed: int, r2_test: float | None, *,
               exact: bool | None = None, seconds: float = 10.0) -> dict[str, Any]:
    """The extra row fields of a laws run (non-finite R² are written as None); ``exact`` as in
    :func:`recovery`."""

    def finite(x: float) -> float | None:
        return float(x) if np.isfinite(x) else None

    fields: dict[str, Any] = {"half": law.half, "kind": law.kind, "no_signal": law.no_signal}
    if law.no_signal:
        fields["r2_linear"] = finite(linear_baseline_r2(split))
    elif model is not None:
        rec = recovery(model, law, seed, r2_test=r2_test, exact=exact, seconds=seconds)
        fields.update(exact=rec["exact"], recovered=rec["recovered"], r2_extrap=finite(rec["r2_extrap"]))
    else:
        fields.update(exact=False, recovered=False, r2_extrap=None)
    return fields
