"""``dgsr predict``: apply a model written by ``dgsr fit`` (``model.json`` or ``model.pkl``) to the
rows of a table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgsr.cli.errors import CLIError
from dgsr.cli.files import check_out_given, check_output_file, load_fitted_model, write_output
from dgsr.cli.messages import PREDICT_FLAGS, for_the_cli
from dgsr.cli.tables import column_list, read_table

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor


def add_subparser(sub: Any) -> None:
    """Register ``dgsr predict``."""
    p = sub.add_parser("predict", help="apply a saved model to a CSV/TSV file",
                       description="Predict with a model written by `dgsr fit`: model.json (the versioned "
                                   "model file, also written by SymbolicRegressor.save; it holds no code) or "
                                   "model.pkl (only load pickles you trust: they can run code).")
    p.add_argument("model", help="model.json or model.pkl from `dgsr fit`")
    p.add_argument("data", help="CSV or TSV file with the model's input columns, found by name (other columns "
                                "are ignored); for a model fitted on an unnamed array (x0, x1, ...), columns "
                                "named x0, x1, ..., else exactly that many columns, used in order")
    p.add_argument("--out", help="write the table with a `prediction` column (a model of several targets: "
                                 "`prediction_<target>` columns) to this file (default: print predictions, one "
                                 "line per row, comma-separated for several targets); never the model or data "
                                 "file, nor an existing file unless --force")
    p.add_argument("--force", action="store_true", help="replace the file --out names if it exists")
    p.add_argument("--index", type=int, default=None, help="use this row of the front instead of the selected one")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr predict``: predictions of a saved model for the rows of a table."""
    model, data = Path(args.model), Path(args.data)
    out = None
    if args.out is not None:
        check_out_given(args.out)
        out = Path(args.out)
        check_output_file(out, [model, data], args.force)
    est = load_fitted_model(model)
    df = read_table(data, allow_unnamed=True)
    X = model_inputs(est, df, data)
    with for_the_cli(PREDICT_FLAGS, errors=(ValueError, IndexError)):
        pred = est.predict(X, index=args.index)
    columns = prediction_columns(est)
    if out is not None:
        result = df.copy()
        for i, column in enumerate(columns):
            result[column] = pred if pred.ndim == 1 else pred[:, i]
        write_output(out, lambda fh: result.to_csv(fh, index=False), text=True)
        print(f"wrote {len(pred)} predictions to {out}" + ("" if pred.ndim == 1 else f" ({', '.join(columns)})"))
    else:
        for v in pred:
            print(repr(float(v)) if pred.ndim == 1 else ",".join(repr(float(x)) for x in v))
    return 0


def prediction_columns(est: SymbolicRegressor) -> list[str]:
    """The columns ``--out`` adds: ``prediction``, or ``prediction_<target>`` per target of several."""
    names = getattr(est, "target_name_", None)
    if not isinstance(names, list):
        return ["prediction"]
    return [f"prediction_{name}" for name in names]


def model_inputs(est: SymbolicRegressor, df: Any, path: Path) -> Any:
    """The columns of ``df`` that ``est`` takes, in its order: by name where the model knows its
    columns' names (a DataFrame's, or x0, x1, ... for an unnamed array when ``df`` has them);
    otherwise by position, and only when ``df`` has exactly as many columns (said on stderr):
    position alone silently gives wrong numbers when a column is added or the order differs."""
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        missing = [str(n) for n in names if n not in df.columns]
        if missing:
            raise CLIError(f"{path} lacks the model's input column(s) {column_list(missing)}; "
                           f"it has {column_list(df.columns)}")
        return df[list(names)]
    n = int(est.n_features_in_)
    default = [f"x{i}" for i in range(n)]  # the estimator's names for an array's columns
    if all(name in df.columns for name in default):
        return df[default].to_numpy()
    if df.shape[1] != n:
        raise CLIError(f"the model was fitted on an array of {n} unnamed column(s) ({', '.join(default)}); "
                       f"{path} has {df.shape[1]} column(s) ({column_list(df.columns)}) and not these names: "
                       f"name its columns {', '.join(default)}, or give exactly {n} column(s) in the fitted order")
    used = ", ".join(f"{c!r} as x{i}" for i, c in enumerate(df.columns))
    print(f"dgsr: note: the model's columns have no names; using the columns of {path} in order: {used}",
          file=sys.stderr)
    return df.to_numpy()
