"""``dgsr predict``: apply a ``model.pkl`` written by ``dgsr fit`` to the rows of a table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError
from dgsr.cli.files import load_fitted_model, refuse_input_overwrite
from dgsr.cli.tables import column_list, read_table


def add_subparser(sub: Any) -> None:
    """Register ``dgsr predict``."""
    p = sub.add_parser("predict", help="apply a saved model to a CSV/TSV file",
                       description="Predict with a model.pkl written by `dgsr fit` (only load model files "
                                   "you trust: pickles can run code).")
    p.add_argument("model", help="model.pkl from `dgsr fit`")
    p.add_argument("data", help="CSV or TSV file with the model's input columns (extra columns are ignored)")
    p.add_argument("--out", help="write the table with a `prediction` column to this file (default: print "
                                 "predictions); never the model or data file")
    p.add_argument("--index", type=int, default=None, help="use this row of the front instead of the selected one")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr predict``: predictions of a saved model for the rows of a table."""
    from dgsr.core.files import atomic_write

    if args.out:
        refuse_input_overwrite(Path(args.out), [Path(args.model), Path(args.data)], "--out")
    est = load_fitted_model(Path(args.model))
    df = read_table(Path(args.data))
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        missing = [str(n) for n in names if n not in df.columns]
        if missing:
            raise CLIError(f"{args.data} lacks the model's input column(s) {column_list(missing)}; "
                           f"it has {column_list(df.columns)}")
        X = df[list(names)]
    else:
        if df.shape[1] < est.n_features_in_:
            raise CLIError(f"the model needs {est.n_features_in_} columns, {args.data} has {df.shape[1]}")
        X = df.iloc[:, : est.n_features_in_].to_numpy()
    pred = est.predict(X, index=args.index)
    if args.out:
        result = df.copy()
        result["prediction"] = pred
        atomic_write(Path(args.out), lambda fh: result.to_csv(fh, index=False), text=True)
        print(f"wrote {len(pred)} predictions to {args.out}")
    else:
        for v in pred:
            print(repr(float(v)))
    return 0
