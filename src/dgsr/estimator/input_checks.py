"""Input and parameter checks for :class:`dgsr.SymbolicRegressor`, run at the start of ``fit``.

Every problem with the data is reported before any search starts, in words that name the
offending column or row (docs/DESIGN.md, "Estimator": a clear error at the start of fit). Shapes, emptiness,
complex numbers and sparse input are delegated to scikit-learn's ``validate_data``, whose
messages are the ones its estimator checks expect (``"1 sample(s)"``, ``"0 feature(s)"``);
non-numeric columns and non-finite values get our own messages, which say where they are.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.utils.validation import validate_data

from dgsr.core.custom_operators import is_custom
from dgsr.estimator.model_selection import MODEL_SELECTION_RULES as _MODEL_SELECTION
from dgsr.estimator.policy_loading import BUILTIN_POLICIES
from dgsr.search.config import MAX_SIZE_LIMIT
from dgsr.search.mcts import CONSTANT_FITTING_MODES
from dgsr.search.workers import BACKENDS

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

    from dgsr.estimator.fit_config import FitConfig


@dataclass(frozen=True)
class TrainingData:
    """Validated training data.

    Attributes
    ----------
    X:
        float64 ``[n_rows, n_features]``, finite.
    y:
        float64 ``[n_rows]``, finite.
    names:
        One display name per column: the DataFrame's column names, else ``x0, x1, ...``.
    """

    X: np.ndarray
    y: np.ndarray
    names: tuple[str, ...]


def validate_training_data(estimator: BaseEstimator, X: Any, y: Any) -> TrainingData:
    """Check and convert ``X, y`` for ``fit``; sets ``n_features_in_`` (and ``feature_names_in_``).

    Raises
    ------
    ValueError
        Non-numeric or non-finite values, wrong shapes, fewer than 2 rows, no columns,
        mismatched lengths, complex numbers, a target with several columns.
    TypeError
        Objects that are not numbers at all (e.g. a dict inside an object array).
    """
    if y is None:
        raise ValueError("SymbolicRegressor requires y to be passed, but the target y is None.")
    _check_dataframe_columns(X)
    if len(getattr(X, "shape", ())) == 2 and X.shape[1] == 0:
        # scikit-learn's wording (its estimator checks match it), then what it means here
        raise ValueError(f"Found array with 0 feature(s) (shape={tuple(X.shape)}) while a minimum of 1 is "
                         "required: X has no columns, and a formula needs at least one input column.")
    y = _numeric_target(y)
    _check_target_finite(y)
    X_arr, y_arr = validate_data(
        estimator, X, y, reset=True, dtype=np.float64, y_numeric=True, ensure_min_samples=2,
        ensure_all_finite=False, multi_output=False,
    )
    names = getattr(estimator, "feature_names_in_", None)
    names = tuple(str(n) for n in names) if names is not None else tuple(
        f"x{i}" for i in range(X_arr.shape[1]))
    _check_finite(X_arr, "X", names)
    _check_finite(y_arr.reshape(-1, 1), "y", ("y",))
    return TrainingData(np.ascontiguousarray(X_arr), np.ascontiguousarray(y_arr, dtype=np.float64), names)


def validate_sample_weight(sample_weight: Any, X: np.ndarray) -> np.ndarray | None:
    """``sample_weight`` for ``fit`` as float64 ``[n_rows]`` normalised to mean 1, or None when it
    is None or all equal (the unweighted path is faster).

    Raises
    ------
    ValueError
        Wrong length, negative or non-finite weights, or weights that are all zero.
    """
    if sample_weight is None:
        return None
    from sklearn.utils.validation import _check_sample_weight

    w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinity.")
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError("sample_weight must not be all zero.")
    if np.ptp(w) == 0:
        return None
    return w * (len(w) / total)


def validate_predict_data(estimator: BaseEstimator, X: Any) -> np.ndarray:
    """Check ``X`` for ``predict``: same columns as in ``fit``, numeric and finite."""
    _check_dataframe_columns(X)
    X_arr = validate_data(estimator, X, reset=False, dtype=np.float64, ensure_all_finite=False)
    names = getattr(estimator, "feature_names_in_", None)
    names = tuple(str(n) for n in names) if names is not None else tuple(
        f"x{i}" for i in range(X_arr.shape[1]))
    _check_finite(X_arr, "X", names, stage="predicting")
    return X_arr


def _check_dataframe_columns(X: Any) -> None:
    """Name the non-numeric columns of a DataFrame (sklearn only says a string did not convert)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return
    bad = []
    for name, dtype in zip(X.columns, dtypes):
        kind = getattr(dtype, "kind", "O")
        if kind in "biuf" or (kind == "O" and _object_column_numeric(X[name])):
            continue
        if kind == "c":
            raise ValueError(f"Complex data not supported: column {name!r} is complex.")
        bad.append(f"{name!r} ({dtype})")
    if bad:
        raise ValueError(
            f"Non-numeric column(s) in X: {', '.join(bad)}. Symbolic regression needs numbers: "
            "drop these columns or encode them numerically first."
        )


def _object_column_numeric(column: Any) -> bool:
    try:
        np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _numeric_target(y: Any) -> Any:
    """Convert ``y`` to float64 with a message naming the problem (sklearn lets strings through)."""
    if hasattr(y, "dtype") and getattr(y.dtype, "kind", "") in "biuf" and not hasattr(y, "columns"):
        return y
    try:
        arr = np.asarray(y)
    except (TypeError, ValueError):  # ragged sequences and the like: sklearn's check words it
        return y
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported: the target y is complex.")
    if arr.dtype.kind in "OUS":
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"The target y must be numeric; it holds non-numeric values ({err}).") from None
    return y


def _check_target_finite(y: Any) -> None:
    # scikit-learn checks y with its own generic message before we see it; say where instead.
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return  # shape and type problems get scikit-learn's messages
    if arr.ndim == 1:
        _check_finite(arr.reshape(-1, 1), "y", ("y",))
    elif arr.ndim == 2:
        _check_finite(arr, "y", tuple(f"y{i}" for i in range(arr.shape[1])))


def _check_finite(values: np.ndarray, what: str, names: tuple[str, ...], stage: str = "fitting") -> None:
    """Raise naming the first bad row and column when ``values`` holds NaN or inf."""
    if values.size == 0 or np.isfinite(values).all():
        return
    nan_mask = np.isnan(values)
    kind = "NaN" if nan_mask.any() else "inf"
    bad = ~np.isfinite(values)
    rows = np.flatnonzero(bad.any(axis=1))
    row = int(rows[0])
    col = int(np.flatnonzero(bad[row])[0])
    where = f"row {row}" if what == "y" else f"row {row}, column {names[col]!r}"
    raise ValueError(
        f"Input {what} contains {kind} (or infinity) in {len(rows)} row(s), first at {where}. "
        f"Remove or impute these rows before {stage}."
    )


#: The largest ``max_evaluations`` accepted: beyond a lifetime of search, and well below 2**53, so every
#: count and share of it is exact in float64 (10**20 raised an OverflowError deep in the search).
MAX_EVALUATIONS = 10**15

#: The largest ``n_samples`` accepted: an expansion of a small expression has a few hundred to a
#: thousand distinct mutations, and one expansion (proposals, then every child scored) is a step
#: the time limit cannot interrupt; 10**7 ran for minutes past ``max_time``.
MAX_N_SAMPLES = 1024


def validate_params(config: FitConfig) -> None:
    """Check the estimator's hyper-parameters (as ``config``); raises ValueError/TypeError naming the parameter."""
    seed = config.random_state
    if not (seed is None or isinstance(seed, (np.random.Generator, np.random.RandomState))
            or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0)):
        raise ValueError(f"random_state must be None, a non-negative integer or a numpy Generator, "
                         f"got {seed!r}.")
    _positive_number(config.max_time, "max_time", allow_none=True)
    _positive_int(config.max_evaluations, "max_evaluations", allow_none=True)
    if config.max_evaluations is not None and config.max_evaluations > MAX_EVALUATIONS:
        raise ValueError(f"max_evaluations must be at most {MAX_EVALUATIONS:.0e} (years of search; counts above "
                         f"it are not exact in floating point), got {config.max_evaluations!r}.")
    if config.max_time is None and config.max_evaluations is None:
        raise ValueError("At least one of max_time and max_evaluations must be set (both are None).")
    _positive_int(config.n_samples, "n_samples")
    if config.n_samples > MAX_N_SAMPLES:
        raise ValueError(f"n_samples must be at most {MAX_N_SAMPLES} (mutations asked of the policy per expansion; "
                         f"an expansion rarely has that many distinct ones), got {config.n_samples!r}.")
    _positive_int(config.iterations_per_trial, "iterations_per_trial")
    _positive_number(config.p_uct, "p_uct", allow_zero=True)
    _positive_int(config.max_size, "max_size")
    if config.max_size > MAX_SIZE_LIMIT:  # here, before fit's warnings about it: an error first
        raise ValueError(f"max_size must be in 1..{MAX_SIZE_LIMIT}, got {config.max_size!r}.")
    steps = config.inner_fit_steps
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"inner_fit_steps must be a non-negative integer, got {steps!r}.")
    _positive_int(config.max_features, "max_features", allow_none=True)
    n_jobs = config.n_jobs
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None, a positive integer or a negative one (-1: every CPU), got {n_jobs!r}.")
    if config.parallel_backend not in BACKENDS:
        raise ValueError(f"parallel_backend must be 'local' or 'ray', got {config.parallel_backend!r}.")
    if config.constant_fitting is not None and config.constant_fitting not in CONSTANT_FITTING_MODES:
        raise ValueError(f"constant_fitting must be None or one of {CONSTANT_FITTING_MODES}, "
                         f"got {config.constant_fitting!r}.")
    cv_max_rows = config.cv_max_rows
    if isinstance(cv_max_rows, bool) or not isinstance(cv_max_rows, (int, np.integer)) or cv_max_rows < 0:
        raise ValueError(f"cv_max_rows must be an integer >= 0 (0: no cross-validation), got {cv_max_rows!r}.")
    if config.model_selection not in _MODEL_SELECTION:
        raise ValueError(f"model_selection must be one of {_MODEL_SELECTION}, got {config.model_selection!r}.")
    r2 = config.target_r2
    # Any finite R² up to 1 (a negative one is reached at once: harmless); -inf and NaN are no target.
    if r2 is not None and (isinstance(r2, bool) or not isinstance(r2, numbers.Real)
                           or not (math.isfinite(r2) and r2 <= 1.0)):
        raise ValueError(f"target_r2 must be None or a finite number <= 1, got {r2!r}.")
    allowed = config.allowed_operators()  # raises on unknown operator names (and defines the user's)
    custom = [op for op in allowed or () if is_custom(op)]
    neural = isinstance(config.policy, str) and (config.policy == "neural" or config.policy.endswith(".safetensors"))
    if custom and neural:
        raise ValueError(f"the neural policy's vocabulary holds the operators of Table 1 only: with "
                         f"{', '.join(custom)} use policy='semantic' (the default), 'learned' or 'random'.")
    config.formula_rules()  # raises on malformed constraints and complexities
    if config.batching not in (None, True, False):
        raise ValueError(f"batching must be None (on above batch_size rows), True or False, got {config.batching!r}.")
    _positive_int(config.batch_size, "batch_size")
    _positive_number(config.dimensional_constraint_penalty, "dimensional_constraint_penalty", allow_zero=True)
    policy = config.policy
    if isinstance(policy, str) and policy not in BUILTIN_POLICIES and not policy.endswith((".safetensors", ".json")):
        names = ", ".join(repr(name) for name in BUILTIN_POLICIES)
        raise ValueError(f"policy must be {names}, a path to a .safetensors checkpoint or .json learned-prior "
                         f"weights, or a Policy object, got {policy!r}.")


def _positive_int(value: Any, name: str, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _positive_number(value: Any, name: str, *, allow_none: bool = False, allow_zero: bool = False) -> None:
    if value is None and allow_none:
        return
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be a {bound} finite number, got {value!r}.")


def check_precision(precision: Any, *, allow_none: bool = True) -> int | None:
    """``precision`` (significant digits of displayed constants) as an int >= 1, or None where
    allowed; a TypeError for a non-integer, a ValueError below 1 (0 used to round every constant
    to 0, negative and fractional values failed deep in the formatting)."""
    if precision is None and allow_none:
        return None
    if isinstance(precision, bool) or not isinstance(precision, numbers.Integral):
        allowed = "an integer >= 1 or None" if allow_none else "an integer >= 1"
        raise TypeError(f"precision must be {allowed}, got {precision!r}.")
    if precision < 1:
        raise ValueError(f"precision must be at least 1 (significant digits), got {precision!r}.")
    return int(precision)

