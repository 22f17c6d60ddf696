"""The model file: a fitted :class:`~dgsr.SymbolicRegressor` as versioned JSON.

``est.save(path)`` writes, and ``SymbolicRegressor.from_file(path)`` reads, one JSON object that
holds everything ``predict``, ``score``, ``equations_``, ``sympy()`` and ``latex()`` need, so a
loaded model gives exactly the original's results (bit-identical predictions), in any later dgsr:

- ``format`` (``"dgsr-model"``), ``schema_version`` (:data:`SCHEMA_VERSION`) and ``dgsr_version``;
- ``units`` (only after a fit given units): ``fit``'s ``X_units`` and ``y_units`` as given.
- ``params``: ``get_params()`` where JSON can hold the value (a policy object or a numpy
  Generator cannot: their text is kept in ``params_not_saved`` and the loaded estimator has the
  default there, which only matters for refitting);
- ``features``: the columns ``predict`` takes (``n_features_in``, ``feature_names_in``) and the
  ones the formulas use (``selected``, their positions ``selected_index``);
- ``scaling``: the powers of two ``predict`` divides those columns and multiplies its values by
  (:class:`dgsr.core.exponent_scaling.Scaling`), and ``target`` (its name, and its mean, the
  last fallback of ``predict``, in the search's units);
- ``front``: one entry per row of ``equations_``: ``complexity``, ``loss`` and ``r2`` as the
  table shows them, ``equation`` (the exact formula in the user's units and column names, for
  people and :func:`dgsr.core.parser.parse`), ``search`` (the expression as ``predict`` evaluates
  it: prefix ``symbols`` and ``constants`` of :class:`dgsr.core.expression.Expression`, in the
  search's units, with its ``mse`` there) and ``sympy`` (the simplified form the table shows, as a
  :mod:`dgsr.core.sympy_json` tree; null where SymPy gave a node it does not write: that row is
  simplified again when read);
- ``selected`` (the row ``predict`` uses) and ``fit`` (``n_evaluations_``, ``stop_reason_``,
  ``n_trials_``, ``history_``, ``validation_loss_``, ``size_limit_``).

A model of several targets (:mod:`dgsr.estimator.multi_output`) is a file of schema version
:data:`SCHEMA_VERSION` 2 (a dgsr that reads only 1 says to upgrade): ``format``, the versions, its
``params``, and ``outputs``, one object per target with the fields above after ``params`` (each
output's own parameters: its seed and share of the budget). A single target's file keeps schema
version :data:`ONE_OUTPUT_SCHEMA` (1), readable by every dgsr that reads model files.

Floats are written exactly (JSON numbers in Python's shortest round-trip form); values that
are not finite, which JSON lacks, are the strings ``"inf"``, ``"-inf"`` and ``"nan"``. A file of a
newer schema, or one that is not a model file, is refused with one :class:`ModelFileError`
naming the file and the versions. A warm start from a loaded model starts cold (the search's
archive is not saved).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dgsr.core.custom_operators import define_operators
from dgsr.core.exponent_scaling import Scaling
from dgsr.core.expression import Expression
from dgsr.core.formula_rules import FormulaRules
from dgsr.core.sympy_json import UnsupportedSympy, from_tree, to_tree
from dgsr.core.units import UnitCheck, checked_units
from dgsr.estimator.display import simplify_seconds
from dgsr.estimator.front import FrontEntry
from dgsr.estimator.multi_output import store_outputs
from dgsr.runtime.files import atomic_write_text

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor

FORMAT = "dgsr-model"
#: Raised when a field changes meaning or a new one is needed to predict; a reader refuses
#: files of a higher schema (fields it does not know would be silently ignored otherwise).
SCHEMA_VERSION = 2
#: The schema of a file of one target: unchanged since version 1 (only several targets need 2).
ONE_OUTPUT_SCHEMA = 1
_LINE = 100  # characters of a line of the file before a value is spread over several
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class ModelFileError(ValueError):
    """A file that this dgsr cannot read as a model file (the message names the file)."""


def _dgsr_version() -> str:
    from dgsr import __version__

    return __version__


# ---------------------------------------------------------------------------- writing
def save_model(est: SymbolicRegressor, path: str | os.PathLike) -> Path:
    """Write fitted ``est`` to ``path`` as a model file, atomically; returns the path.

    Builds ``equations_`` first if it is not built yet (its SymPy forms are part of the file)."""
    check_is_fitted(est, "expression_")
    outputs = est.__dict__.get("estimators_")
    doc = model_document(est) if outputs is None else _outputs_document(est, outputs)
    return atomic_write_text(path, _json_text(doc) + "\n")


def _outputs_document(est: SymbolicRegressor, outputs: list[SymbolicRegressor]) -> dict[str, Any]:
    """The model file of a fit on several targets: its parameters, and each output's model."""
    params, not_saved = _json_params(est.get_params(deep=False))
    header = ("format", "schema_version", "dgsr_version")
    doc: dict[str, Any] = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "dgsr_version": _dgsr_version(),
                           "params": params,
                           "outputs": [{k: v for k, v in model_document(o).items() if k not in header}
                                       for o in outputs]}
    if not_saved:
        doc["params_not_saved"] = not_saved
    return doc


def model_document(est: SymbolicRegressor) -> dict[str, Any]:
    """The model file's content for fitted ``est`` (see the module docstring)."""
    params, not_saved = _json_params(est.get_params(deep=False))
    scaling = est._scaling
    doc: dict[str, Any] = {
        "format": FORMAT, "schema_version": ONE_OUTPUT_SCHEMA, "dgsr_version": _dgsr_version(),
        "params": params,
        "features": _features(est),
        "scaling": {"x_exponents": [int(e) for e in scaling.x_exponents], "y_exponent": int(scaling.y_exponent)},
        "target": {"name": est.target_name_, "search_mean": _number(est._y_mean)},
        "selected": int(est.best_index_),
        "front": _front_entries(est),
        "fit": _fit_record(est),
    }
    if not_saved:
        doc["params_not_saved"] = not_saved
    if getattr(est, "X_units_", None) is not None or getattr(est, "y_units_", None) is not None:
        doc["units"] = {"X": _json_form(est.X_units_), "y": est.y_units_}  # fit's arguments, as given
    return doc


def _features(est: SymbolicRegressor) -> dict[str, Any]:
    names = getattr(est, "feature_names_in_", None)  # absent after a fit on an array
    return {"n_features_in": int(est.n_features_in_),
            "feature_names_in": None if names is None else [str(n) for n in names],
            "selected": [str(n) for n in est.selected_features_],
            "selected_index": [int(i) for i in est._feature_index],
            "signs": [int(v) for v in getattr(est, "_column_signs", ())],
            "magnitudes": [[float(v) for v in m] for m in getattr(est, "_column_magnitudes", ())]}


def _fit_record(est: SymbolicRegressor) -> dict[str, Any]:
    losses = est.validation_loss_
    return {"n_evaluations": int(est.n_evaluations_), "stop_reason": est.stop_reason_,
            "n_trials": int(getattr(est, "n_trials_", 0)), "history": _plain(list(est.history_)),
            "validation_loss": None if losses is None else [_number(v) for v in losses],
            "size_limit": None if est.size_limit_ is None else int(est.size_limit_)}


def _front_entries(est: SymbolicRegressor) -> list[dict[str, Any]]:
    table = est.equations_  # built now if it was not: the file keeps the forms this estimator shows
    column = table.get("sympy") if hasattr(table, "get") else None
    if column is not None and len(column) != len(est._front):
        column = None  # a table set by hand that does not describe this front
    entries = []
    for i, entry in enumerate(est._front):
        expr = entry.expression
        entries.append({
            "complexity": int(entry.size), "loss": _number(est._scaling.unscale_loss(entry.mse)),
            "r2": _number(entry.r2), "equation": est.expressions_[i].format(est.selected_features_),
            "search": {"symbols": list(expr.symbols), "constants": [_number(c) for c in expr.constants],
                       "mse": _number(entry.mse)},
            "sympy": None if column is None else _sympy_tree(column.iloc[i]),
        })
    return entries


def _json_text(value: Any, indent: str = "") -> str:
    """JSON of ``value``, a value per line where it does not fit on one (a formula's SymPy tree,
    a short list, stay on one line, so the file reads as one screen per front entry)."""
    flat = json.dumps(value, allow_nan=False, ensure_ascii=False)
    if len(flat) + len(indent) <= _LINE or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_json_text(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if all(not isinstance(v, (dict, list)) for v in value) or isinstance(value[0], str):
        return flat  # a row of numbers or a SymPy tree: one (long) line
    return "[\n" + ",\n".join(inner + _json_text(v, inner) for v in value) + f"\n{indent}]"


def _sympy_tree(expr: Any) -> list | None:
    try:
        return to_tree(expr)
    except (UnsupportedSympy, AttributeError):  # not SymPy at all: a hand-made table
        return None


def _json_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``params`` split into the values JSON holds as they are and the text of the others."""
    saved, not_saved = {}, {}
    for name, value in params.items():
        value = _json_form(os.fspath(value) if isinstance(value, os.PathLike) else value)  # a checkpoint path
        if _is_json_value(value):
            saved[name] = value
        else:
            not_saved[name] = repr(value)
    return saved, not_saved


def _json_form(value: Any) -> Any:
    """Tuples as lists and numpy scalars as Python ones, inside lists and dicts too."""
    if isinstance(value, (tuple, list)):
        return [_json_form(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_form(v) for k, v in value.items()}
    return value.item() if isinstance(value, np.generic) else value


def _is_json_value(value: Any) -> bool:
    """Whether JSON holds ``value`` as it is (finite numbers; dicts with string keys)."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json_value(v) for v in value)
    return isinstance(value, dict) and all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())


def _number(value: Any) -> float | str:
    """A float for JSON: itself when finite, else ``"inf"``, ``"-inf"`` or ``"nan"``."""
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _plain(value: Any) -> Any:
    """Lists, dicts, strings and numbers as JSON holds them (numpy scalars as Python ones)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return _number(value)
    return value


# ---------------------------------------------------------------------------- reading
def load_model(cls: type, path: str | os.PathLike) -> Any:
    """A fitted ``cls`` from the model file at ``path`` (:class:`ModelFileError` if it is none)."""
    path = Path(path)
    doc = read_document(path)
    try:
        if "outputs" not in doc:
            return _restore(cls, doc)
        est = _restore_params(cls, doc)
        store_outputs(est, [_restore(cls, output) for output in doc["outputs"]])
        return est
    except (KeyError, TypeError, ValueError, IndexError) as err:
        what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
        raise ModelFileError(f"{path} is a damaged dgsr model file ({what}); it was written by dgsr "
                             f"{doc.get('dgsr_version', '?')}, this is dgsr {_dgsr_version()}") from None


def read_document(path: Path) -> dict[str, Any]:
    """The JSON object of a model file whose schema this dgsr reads; :class:`ModelFileError`
    naming ``path`` for anything else (not JSON, not a model file, a newer schema)."""
    reads = (f"dgsr {_dgsr_version()} reads the JSON model files written by SymbolicRegressor.save() "
             "and `dgsr fit` (model.json)")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(f"{path} is not a dgsr model file (not JSON: {err}); {reads}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a dgsr model file (no \"format\": \"{FORMAT}\" in it); {reads}")
    schema = doc.get("schema_version")
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise ModelFileError(f"{path} is not a dgsr model file (its schema_version is {schema!r}); {reads}")
    if schema > SCHEMA_VERSION:
        writer = doc.get("dgsr_version", "?")
        raise ModelFileError(
            f"{path} is a dgsr model file of schema version {schema}, written by dgsr {writer}; this dgsr "
            f"{_dgsr_version()} reads schema version {SCHEMA_VERSION} and earlier: upgrade dgsr to read it")
    return doc


def _restore(cls: type, doc: dict[str, Any]) -> Any:
    """A fitted estimator with the state ``doc`` describes (the fit attributes of ``fit``)."""
    est = _restore_params(cls, doc)
    est.n_outputs_ = 1
    features, scaling = doc["features"], doc["scaling"]
    est.n_features_in_ = int(features["n_features_in"])
    if features["feature_names_in"] is not None:
        est.feature_names_in_ = np.asarray([str(n) for n in features["feature_names_in"]], dtype=object)
    est.selected_features_ = [str(n) for n in features["selected"]]
    est._feature_index = np.asarray([int(i) for i in features["selected_index"]], dtype=np.int64)
    # Files written before 0.20.0 have no signs: their rows not stored simplified assume none.
    est._column_signs = tuple(int(v) for v in features.get("signs", ())) \
        if len(features.get("signs", ())) == len(est._feature_index) else ()
    # Files written before 0.25.0 have no magnitudes: their rows judge float noise with each column as 1.
    magnitudes = features.get("magnitudes", [])
    est._column_magnitudes = tuple(tuple(float(v) for v in m) for m in magnitudes) \
        if len(magnitudes) == len(est._feature_index) else ()
    if not len(est._feature_index) == len(est.selected_features_) == len(scaling["x_exponents"]):
        raise ValueError("the selected columns, their positions and their scaling differ in number")
    if any(not 0 <= i < est.n_features_in_ for i in est._feature_index):
        raise ValueError(f"a selected column's position is not one of its {est.n_features_in_} columns")
    est._scaling = Scaling(tuple(int(e) for e in scaling["x_exponents"]), int(scaling["y_exponent"]))
    est.target_name_ = str(doc["target"]["name"])
    est._y_mean = _float(doc["target"]["search_mean"])
    rules = est._fit_config().formula_rules()
    est._front = [_front_entry(e, rules) for e in doc["front"]]
    if not est._front:
        raise ValueError("its front is empty")
    est.best_index_ = int(doc["selected"])
    if not 0 <= est.best_index_ < len(est._front):
        raise ValueError(f"selected row {est.best_index_} is not a row of its {len(est._front)}-row front")
    est.expressions_ = [est._scaling.to_user(e.expression) for e in est._front]
    est.expression_ = est.expressions_[est.best_index_]
    _restore_units(est, doc.get("units"))
    _restore_fit_record(est, doc["fit"])
    rows = {i: from_tree(e["sympy"]) for i, e in enumerate(doc["front"]) if e.get("sympy") is not None}
    est._interrupted, est._archive, est._validation_errors = False, None, None
    est._equations, est._sympy_rows = None, rows
    # Rows stored simplified are shown as stored; any other gets the time a fit leaves (at most 10 s).
    est._simplify_seconds = 0.0 if len(rows) == len(est._front) else simplify_seconds(None, 0.0)
    return est


def _restore_units(est: SymbolicRegressor, units: dict[str, Any] | None) -> None:
    """``X_units_``, ``y_units_`` and the check ``equations_`` reads (its losses carry any penalty already)."""
    est.X_units_, est.y_units_ = (None, None) if units is None else (units.get("X"), units.get("y"))
    est._units = None
    if units is not None:
        xs, y = checked_units(est.X_units_, est.y_units_, int(est.n_features_in_))
        est._units = UnitCheck(tuple(xs[int(i)] for i in est._feature_index), y,
                               dimensionless_constants=bool(est.dimensionless_constants_only))


def _restore_params(cls: type, doc: dict[str, Any]) -> Any:
    """An unfitted ``cls`` with the parameters ``doc`` records."""
    known = cls().get_params(deep=False)
    # A later dgsr's parameters that this one lacks are left out: they only matter for refitting.
    est = cls(**{k: v for k, v in doc["params"].items() if k in known})
    define_operators(est.operators, est.unary_operators, est.binary_operators)  # the formulas may use them
    return est


def _front_entry(entry: dict[str, Any], rules: FormulaRules | None) -> FrontEntry:
    """One front row; its complexity must be the expression's under the saved parameters' rules."""
    search = entry["search"]
    expr = Expression(tuple(str(s) for s in search["symbols"]), tuple(_float(c) for c in search["constants"]))
    complexity = expr.size if rules is None else rules.complexity(expr)
    if int(entry["complexity"]) != complexity:
        raise ValueError(f"an entry of complexity {entry['complexity']} holds an expression of complexity {complexity}")
    return FrontEntry(complexity, expr, _float(search["mse"]), _float(entry["r2"]))


def _restore_fit_record(est: SymbolicRegressor, fit: dict[str, Any]) -> None:
    est.n_evaluations_ = int(fit["n_evaluations"])
    est.stop_reason_ = str(fit["stop_reason"])
    est.n_trials_ = int(fit["n_trials"])
    est.history_ = [{k: _float(v) if isinstance(v, str) and v in _NON_FINITE else v for k, v in step.items()}
                    for step in fit["history"]]
    losses = fit["validation_loss"]
    est.validation_loss_ = None if losses is None else np.array([_float(v) for v in losses], dtype=np.float64)
    est.size_limit_ = None if fit["size_limit"] is None else int(fit["size_limit"])


def _float(value: Any) -> float:
    """A float written by :func:`_number` (ValueError for anything else)."""
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r:.40}")
    return float(value)
