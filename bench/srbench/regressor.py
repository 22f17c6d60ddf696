"""SRBench submission of dgsr (DGSR-MCTS, Kamienny et al., ICML 2023).

SRBench imports this file and uses: ``est`` (a scikit-learn regressor), ``hyper_params`` (the
search space: one configuration, as in the paper), ``model(est, X)`` (a SymPy-parsable string in
the training data's column names), ``get_population(est)`` (at most 100 regressors, here the
Pareto front) and ``get_best_solution(est)``; ``eval_kwargs`` adjusts SRBench's evaluation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dgsr import SymbolicRegressor

# The paper's budget for SRBench: 500,000 evaluations (SRBench's cap per configuration). The time
# limit only guards against a stalled run; SRBench measures wall time separately.
est = SymbolicRegressor(
    max_evaluations=500_000,
    max_time=8 * 3600,
    random_state=None,  # SRBench sets random_state per run
    verbose=False,
)

# A single configuration, as submitted in the paper (§4.2).
hyper_params: list[dict[str, list[Any]]] = [{}]


def _column_names(estimator: Any, X: pd.DataFrame | None) -> list[str] | None:
    if X is not None and hasattr(X, "columns"):
        return [str(c) for c in X.columns]
    names = getattr(estimator, "feature_names_in_", None)
    return None if names is None else [str(c) for c in names]


def _rename(expr: Any, estimator: Any, X: pd.DataFrame | None) -> Any:
    """Map generic x0, x1, ... to the training columns when the model was fitted on an array."""
    import sympy

    names = _column_names(estimator, X)
    if names is None:
        return expr
    generic = {sympy.Symbol(f"x{i}"): sympy.Symbol(n) for i, n in enumerate(names)}
    present = {s.name for s in expr.free_symbols}
    if present and present <= {s.name for s in generic} and not present <= set(names):
        return expr.xreplace(generic)
    return expr


def model(est: Any, X: pd.DataFrame | None = None) -> str:
    """The selected equation as a SymPy-parsable string in ``X``'s column names."""
    if isinstance(est, FrontMember):
        return est.model_string(X)
    return str(_rename(est.sympy(), est, X))


class FrontMember:
    """One equation of a fitted estimator's Pareto front, usable as an SRBench population member."""

    def __init__(self, estimator: Any, index: int) -> None:
        self.estimator = estimator
        self.index = index

    def predict(self, X: Any) -> np.ndarray:
        return self.estimator.predict(X, index=self.index)

    def model_string(self, X: pd.DataFrame | None = None) -> str:
        return str(_rename(self.estimator.sympy(self.index), self.estimator, X))


def get_population(est: Any) -> list[FrontMember]:
    """The Pareto front (at most 100 equations, simplest first)."""
    return [FrontMember(est, i) for i in range(min(len(est.equations_), 100))]


def get_best_solution(est: Any) -> Any:
    """The fitted estimator itself: it predicts with its selected equation."""
    return est


# SRBench options: the pre-trained policy expects raw (unscaled) data, and SRBench's quick tests
# use a small budget.
eval_kwargs = {
    "scale_x": False,
    "scale_y": False,
    "max_train_samples": 10_000,
    "test_params": {"max_time": 10, "max_evaluations": 5_000},
}
