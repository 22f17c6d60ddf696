"""Several targets: one front per column of a 2-D ``y``, as PySR fits them.

``SymbolicRegressor.fit`` with ``y`` of shape ``(n, k)``, ``k >= 2`` (an array, or a DataFrame
whose column names name the targets), fits ``k`` single-output copies of itself, one per column,
each through the single-output path (``fit`` -> ``fit_front``) with the same parameters except:

- ``random_state``: output ``i`` gets its own seed, derived deterministically from the estimator's
  (:func:`output_seeds`), so a fixed seed reproduces every front and no two outputs share a stream;
- ``max_evaluations`` and ``max_time``: split evenly, each output gets ``1/k`` of each
  (:func:`output_budget`), so the whole fit keeps the limits it was given.

The copies are kept, fitted, in ``estimators_``; the multi-output estimator's per-output fitted
attributes are lists with one item per output (:func:`store_outputs`). A ``y`` of shape
``(n, 1)`` is one target, as for scikit-learn's regressors: ``fit`` takes its column (with
scikit-learn's ``DataConversionWarning``) and ``predict`` returns 1-D.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.base import clone

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor

#: Fitted attributes that hold one value per output on a multi-output estimator.
PER_OUTPUT_ATTRIBUTES = ("expression_", "expressions_", "best_index_", "selected_features_", "size_limit_",
                         "validation_loss_", "n_evaluations_", "history_", "stop_reason_", "n_trials_")
_EXPORT_MODULES = {"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}


def n_targets(y: Any) -> int:
    """How many targets ``y`` holds: its number of columns when it is 2-D, else 1 (a 1-D ``y``
    and an ``(n, 1)`` one are both one target; shapes that are neither get ``fit``'s own checks)."""
    shape = getattr(y, "shape", None)
    if shape is None:
        try:
            shape = np.shape(y)
        except (TypeError, ValueError):  # ragged input: the single-output checks word the error
            return 1
    return int(shape[1]) if len(shape) == 2 else 1


def target_names(y: Any, k: int) -> list[str]:
    """The targets' names: a DataFrame's column names, else ``y0, y1, ...``."""
    columns = getattr(y, "columns", None)
    if columns is not None:
        return [str(c) for c in columns]
    return [f"y{i}" for i in range(k)]


def output_seeds(random_state: Any, k: int) -> list[Any]:
    """One seed per output, derived from ``random_state``: an int's ``k`` children of
    ``numpy.random.SeedSequence(random_state)``; ``k`` integers drawn from a Generator or
    RandomState (advancing it, as a single fit does); None for None (each output unseeded)."""
    if random_state is None:
        return [None] * k
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        children = np.random.SeedSequence(int(random_state)).spawn(k)
        return [int(child.generate_state(1, dtype=np.uint32)[0]) for child in children]
    if isinstance(random_state, np.random.Generator):
        return [int(s) for s in random_state.integers(0, 2**32, size=k)]
    if isinstance(random_state, np.random.RandomState):
        return [int(s) for s in random_state.randint(0, 2**32, size=k, dtype=np.int64)]
    return [random_state] * k  # not a seed at all: each output's fit refuses it with its message


def output_budget(max_evaluations: Any, max_time: Any, k: int) -> dict[str, Any]:
    """Each output's share of the fit's limits: ``1/k`` of the evaluations (at least 1) and of the time."""
    return {"max_evaluations": None if max_evaluations is None else max(int(max_evaluations) // k, 1),
            "max_time": None if max_time is None or math.isinf(max_time) else float(max_time) / k}


def fit_outputs(est: SymbolicRegressor, X: Any, y: Any, sample_weight: Any = None, x_units: Any = None,
                y_units: Any = None) -> SymbolicRegressor:
    """Fit one single-output copy of ``est`` per column of ``y`` and store them on ``est`` (returned);
    ``y_units`` is one unit per target (or None).

    A warm start refits the previous copies when the number of targets is the same (each one
    warm-starts from its own front); otherwise each copy starts cold."""
    k = n_targets(y)
    if y_units is not None and (isinstance(y_units, str) or len(y_units) != k):
        raise ValueError(f"y_units must be a list of {k} units, one per target, got {y_units!r}")
    names = target_names(y, k)
    columns = y.to_numpy() if isinstance(y, pd.DataFrame) else np.asarray(y)
    previous = getattr(est, "estimators_", None) if est.warm_start else None
    seeds = output_seeds(est.random_state, k)
    budget = output_budget(est.max_evaluations, est.max_time, k)
    outputs = []
    for i in range(k):
        if previous is not None and len(previous) == k:
            copy = previous[i]
            copy.set_params(**est.get_params(deep=False))
        else:
            copy = clone(est)
        copy.set_params(random_state=seeds[i], **budget)
        copy.fit(X, pd.Series(columns[:, i], name=names[i]), sample_weight=sample_weight, X_units=x_units,
                 y_units=None if y_units is None else y_units[i])
        outputs.append(copy)
    store_outputs(est, outputs)
    return est


def store_outputs(est: SymbolicRegressor, outputs: Sequence[SymbolicRegressor]) -> None:
    """Make ``est`` the multi-output model of the fitted single-output ``outputs`` (one per target):
    ``estimators_``, ``n_outputs_``, ``target_name_`` (a list) and the per-output attribute lists."""
    first = outputs[0]
    est.estimators_ = list(outputs)
    est.n_outputs_ = len(outputs)
    est.n_features_in_ = first.n_features_in_
    names = getattr(first, "feature_names_in_", None)
    if names is not None:
        est.feature_names_in_ = names
    else:
        est.__dict__.pop("feature_names_in_", None)
    est.target_name_ = [o.target_name_ for o in outputs]
    for attribute in PER_OUTPUT_ATTRIBUTES:
        setattr(est, attribute, [getattr(o, attribute, None) for o in outputs])
    est._interrupted = any(getattr(o, "_interrupted", False) for o in outputs)


def output_indices(index: Any, k: int) -> list[Any]:
    """``predict``'s ``index`` for each of ``k`` outputs: None (each output's selected row), one
    int (that row of every front) or a sequence of ``k`` ints or Nones."""
    if index is None or isinstance(index, (int, np.integer)):
        return [index] * k
    index = list(index)
    if len(index) != k:
        raise ValueError(f"index must be None, an int or one row per output ({k}), got {len(index)} values")
    return index


def each_output(outputs: Sequence[SymbolicRegressor], index: Any, method: Callable[[Any, Any], Any]) -> list:
    """``method(estimator, row)`` for each output's estimator, ``index`` read as ``predict`` reads it."""
    return [method(o, i) for o, i in zip(outputs, output_indices(index, len(outputs)))]


def predict_outputs(outputs: Sequence[SymbolicRegressor], X: Any, index: Any, strict: bool) -> np.ndarray:
    """The outputs' predictions side by side, shape ``(n, k)``."""
    rows = output_indices(index, len(outputs))
    return np.column_stack([o.predict(X, index=i, strict=strict) for o, i in zip(outputs, rows)])


def stacked_export(functions: Sequence[Callable[[Any], Any]], backend: str) -> Callable[[Any], Any]:
    """One function ``f(X)`` giving the outputs' formulas side by side, shape ``(n, k)`` (``(k,)``
    for one row), in ``backend``'s arrays (numpy, torch or jax)."""
    lib = importlib.import_module(_EXPORT_MODULES[backend])

    def formulas(X: Any) -> Any:
        return lib.stack([f(X) for f in functions], -1)

    formulas.__doc__ = "Several targets, one column each:\n" + "\n".join(f.__doc__ or "" for f in functions)
    return formulas


def file_stem(name: str) -> str:
    """A target's name as part of a file name: characters other than letters, digits, ``-``, ``_``
    and ``.`` become ``_`` (``front_<stem>.csv``)."""
    return re.sub(r"[^\w.-]", "_", name) or "_"
