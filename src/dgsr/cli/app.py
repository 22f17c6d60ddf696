"""The ``dgsr`` command line: ``dgsr fit``, ``dgsr predict``, ``dgsr example`` and plug-in commands.

``dgsr fit data.csv`` runs :class:`dgsr.SymbolicRegressor` on a CSV/TSV file (the target is the
last column unless ``--target`` names it), shows a live progress line, prints the Pareto front
with the selected equation marked, and writes ``front.csv`` and ``model.pkl`` to ``--out``.
``dgsr fit --example gravity`` does the same on a bundled dataset. ``dgsr predict model.pkl
new.csv`` applies a saved model. Errors in files, columns or data are printed as one line
(``dgsr: error: ...``, exit status 2), never as a traceback.

Plug-in commands
----------------
Other modules add subcommands without this file knowing their options. Each module listed in
:data:`PLUGINS` (``command name -> module``) may define::

    def add_subparser(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser("bench", help="...")
        parser.add_argument(...)
        parser.set_defaults(func=run)   # run(args: argparse.Namespace) -> int | None

A plug-in is imported only when its command is run, or for ``dgsr --help``; a module that does
not exist yet (ImportError) or has no ``add_subparser`` (``add_subparsers`` is accepted
too) is skipped, so the CLI works with any
subset installed. Its handler may raise :class:`CLIError` (or ``ValueError``/``OSError``) for a
one-line error message.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pickle
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Subcommands provided by other modules, imported lazily (see the module docstring).
PLUGINS: dict[str, str] = {
    "bench": "dgsr.bench.cli",
    "data": "dgsr.cli.data",
    "pretrain": "dgsr.cli.pretrain",
    "search": "dgsr.cli.search",
}


class CLIError(Exception):
    """An error reported to the user as one line, without a traceback."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dgsr`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            status = args.func(args)
        return int(status or 0)
    except KeyboardInterrupt:
        print("dgsr: interrupted", file=sys.stderr)
        return 130
    except (CLIError, ValueError, OSError, KeyError, IndexError, pickle.UnpicklingError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"dgsr: error: {message}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: still one line (DGSR_TRACEBACK=1 shows where)
        if os.environ.get("DGSR_TRACEBACK"):
            raise
        print(f"dgsr: error: {type(err).__name__}: {err} (set DGSR_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return 1


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser: built-in commands, plus the plug-in that ``argv`` asks for (all for help)."""
    parser = argparse.ArgumentParser(prog="dgsr", description="Symbolic regression with DGSR-MCTS.")
    parser.add_argument("--version", action="version", version=f"dgsr {_version()}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    _add_fit(sub)
    _add_predict(sub)
    _add_example(sub)
    command = next((a for a in argv if not a.startswith("-")), None)
    for name, module in PLUGINS.items():
        if command is None or command == name:
            _load_plugin(sub, module)
    return parser


def _version() -> str:
    """The version of the code that runs (``dgsr.__version__``, kept equal to pyproject's)."""
    from dgsr import __version__

    return __version__


def _load_plugin(sub: Any, module: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return  # not written / not installed yet: the command is simply absent
    hook = getattr(mod, "add_subparser", None) or getattr(mod, "add_subparsers", None)
    if callable(hook):
        hook(sub)


# ---------------------------------------------------------------------- fit
def _add_fit(sub: Any) -> None:
    p = sub.add_parser("fit", help="find formulas that fit a CSV/TSV file",
                       description="Fit a symbolic regressor to a table; the target is the last column "
                                   "unless --target names it.")
    p.add_argument("data", nargs="?", help="CSV or TSV file (separator from the extension; .gz works)")
    p.add_argument("--example", metavar="NAME", help="use a bundled example instead (see `dgsr example`)")
    p.add_argument("--target", help="target column (default: the last column)")
    p.add_argument("--time", type=float, default=60.0, help="seconds of search (default: 60)")
    p.add_argument("--evals", type=int, default=500_000, help="maximum evaluations (default: 500000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--policy", default="semantic",
                   help="semantic (default: data-aware, wins at equal time), random, neural (shipped weights), "
                        "or a .safetensors checkpoint")
    p.add_argument("--k", type=int, default=16, help="mutations sampled per expansion (default: 16)")
    p.add_argument("--constants", choices=("never", "best", "all"), default=None,
                   help="when to fit constants during search (default: the benchmark-chosen one)")
    p.add_argument("--selection", choices=("balanced", "best", "accuracy", "score", "validation"), default="balanced",
                   help="which front expression predictions use (default: balanced; see SymbolicRegressor)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="processes for independent search units, -1 for every CPU (default: 1; the result "
                        "does not depend on N for a fixed --seed and --evals)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="where --jobs run: local processes, or Ray (RAY_ADDRESS's cluster, else a local Ray)")
    p.add_argument("--operators", default=None, metavar="LIST",
                   help="comma-separated operators to use, from Table 1: add,sub,mul,div (or +,-,*,/), "
                        "sin,cos,tan,exp,log,sqrt,inv,sq (default: all)")
    p.add_argument("--target-r2", type=float, default=None, metavar="R2",
                   help="stop early once the best training R² reaches R2, e.g. 0.9999 (default: use the whole budget)")
    p.add_argument("--out", default="run", help="folder for front.csv and model.pkl (default: run/)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=cmd_fit)


def cmd_fit(args: argparse.Namespace) -> int:
    """``dgsr fit``: fit, print the front, write ``front.csv`` and ``model.pkl``."""
    from dgsr.estimator.input_checks import validate_params
    from dgsr.estimator.regressor import SymbolicRegressor

    if (args.data is None) == (args.example is None):
        raise CLIError("give either a data file or --example NAME (see `dgsr example`)")
    path = _example_path(args.example) if args.example else Path(args.data)
    df = read_table(path)
    target = args.target if args.target is not None else str(df.columns[-1])
    if target not in df.columns:
        raise CLIError(f"target column {target!r} not found in {path}; columns: {_names(df.columns)}")
    if df.shape[1] < 2:
        raise CLIError(f"{path} needs at least one input column besides the target {target!r}")
    X, y = df.drop(columns=[target]), df[target]
    est = SymbolicRegressor(max_time=args.time, max_evaluations=args.evals, random_state=args.seed,
                            policy=args.policy, n_samples=args.k, constant_fitting=args.constants,
                            model_selection=args.selection, target_r2=args.target_r2, verbose=not args.quiet,
                            n_jobs=args.jobs, parallel_backend=args.backend,
                            operators=[o.strip() for o in args.operators.split(",") if o.strip()]
                            if args.operators else None)
    validate_params(est)  # wrong options fail before any folder is made
    out = Path(args.out)
    check_writable_folder(out, "--out")  # before the search, not after it
    est.fit(X, y)  # a first Ctrl-C ends the fit early with its best result (a second one aborts)
    front_csv = out / "front.csv"
    _atomic_write(front_csv, lambda fh: front_frame(est).to_csv(fh, index=False), text=True)
    _atomic_write(out / "model.pkl", lambda fh: pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL))
    print_front(est, target)
    written = [str(front_csv), str(out / "model.pkl")]
    if _write_plot(est, target, out / "front.png"):
        written.append(str(out / "front.png"))
    else:
        print(f"skipped {out / 'front.png'}: matplotlib is not installed (pip install matplotlib)")
    print(f"stopped by {est.stop_reason_} after {est.n_evaluations_:,.0f} evaluations; "
          f"wrote {', '.join(written)}")
    return 0


def check_writable_folder(folder: Path, option: str) -> None:
    """Create ``folder`` if needed and check that a file can be written in it (CLIError if not)."""
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"{option} {folder} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".dgsr-write-test"):
            pass
    except OSError as err:
        raise CLIError(f"cannot write in {option} folder {folder}: {err.strerror or err}") from None


def _write_plot(est: Any, target: str, path: Path) -> bool:
    """Save the Pareto-front plot; False when matplotlib is missing (a dependency, but environments
    installed without dependencies may lack it)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window from the CLI
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ax = est.plot_front(target=target)
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=120)
    plt.close(ax.figure)
    return True


def front_frame(est: Any) -> Any:
    """The front as written to ``front.csv``: readable and exact equations, and the selection mark."""
    table = est.equations_.drop(columns=["sympy"]).copy()
    table["selected"] = [i == est.best_index_ for i in range(len(table))]
    # Exact infix with full-precision constants: dgsr.core.parser.parse reads it back to the same tree.
    table["expression"] = [e.format(est.selected_features_) for e in est.expressions_]
    return table


def print_front(est: Any, target: str) -> None:
    """The Pareto front as a rich table on stdout, the selected row marked."""
    from rich.console import Console
    from rich.table import Table

    from dgsr.core.display import format_number

    table = Table(title=f"Pareto front for {target}", title_justify="left")
    # The equation first, wrapped by rich to the terminal's width; headers are equations_'s columns.
    table.add_column("", justify="left", no_wrap=True)
    table.add_column("equation", justify="left", overflow="fold", min_width=20)
    for name in ("complexity", "loss", "r2", "score"):
        table.add_column(name, justify="right", no_wrap=True)
    for i, row in est.equations_.iterrows():
        mark = "→" if i == est.best_index_ else ""
        style = "bold green" if i == est.best_index_ else None
        table.add_row(mark, f"{target} = {row['equation']}", str(row["complexity"]), format_number(row["loss"]),
                      f"{row['r2']:.6f}", f"{row['score']:.3f}", style=style)
    console = Console(soft_wrap=False)
    console.print(table)
    console.print(f"selected (→, model_selection={est.model_selection!r}): "
                  f"{target} = {est.equations_['equation'].iloc[est.best_index_]}", markup=False)


# ---------------------------------------------------------------------- predict
def _add_predict(sub: Any) -> None:
    p = sub.add_parser("predict", help="apply a saved model to a CSV/TSV file",
                       description="Predict with a model.pkl written by `dgsr fit` (only load model files "
                                   "you trust: pickles can run code).")
    p.add_argument("model", help="model.pkl from `dgsr fit`")
    p.add_argument("data", help="CSV or TSV file with the model's input columns (extra columns are ignored)")
    p.add_argument("--out", help="write the table with a `prediction` column here (default: print predictions)")
    p.add_argument("--index", type=int, default=None, help="use this row of the front instead of the selected one")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    """``dgsr predict``: predictions of a saved model for the rows of a table."""
    from dgsr.estimator.regressor import SymbolicRegressor

    est = load_model(Path(args.model))
    df = read_table(Path(args.data))
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        missing = [str(n) for n in names if n not in df.columns]
        if missing:
            raise CLIError(f"{args.data} lacks the model's input column(s) {_names(missing)}; "
                           f"it has {_names(df.columns)}")
        X = df[list(names)]
    else:
        if df.shape[1] < est.n_features_in_:
            raise CLIError(f"the model needs {est.n_features_in_} columns, {args.data} has {df.shape[1]}")
        X = df.iloc[:, : est.n_features_in_].to_numpy()
    assert isinstance(est, SymbolicRegressor)
    pred = est.predict(X, index=args.index)
    if args.out:
        result = df.copy()
        result["prediction"] = pred
        _atomic_write(Path(args.out), lambda fh: result.to_csv(fh, index=False), text=True)
        print(f"wrote {len(pred)} predictions to {args.out}")
    else:
        for v in pred:
            print(repr(float(v)))
    return 0


def load_model(path: Path) -> Any:
    """Unpickle a fitted estimator, with a clear error for anything else."""
    from dgsr.estimator.regressor import SymbolicRegressor

    if not path.is_file():
        raise CLIError(f"model file not found: {path}")
    with open(path, "rb") as fh:
        try:
            est = pickle.load(fh)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as err:
            raise CLIError(f"{path} is not a model written by `dgsr fit` ({err})") from None
    if not isinstance(est, SymbolicRegressor) or not hasattr(est, "expression_"):
        raise CLIError(f"{path} does not hold a fitted dgsr SymbolicRegressor")
    return est


# ---------------------------------------------------------------------- example
def _add_example(sub: Any) -> None:
    p = sub.add_parser("example", help="list or show the bundled example datasets",
                       description="Bundled datasets from physical laws. Try `dgsr fit --example gravity`.")
    p.add_argument("name", nargs="?", help="example to show (default: list them)")
    p.add_argument("--path", action="store_true", help="print only the file's path")
    p.set_defaults(func=cmd_example)


def cmd_example(args: argparse.Namespace) -> int:
    """``dgsr example [NAME] [--path]``."""
    from dgsr.examples import EXAMPLES

    if args.name is None:
        for ex in EXAMPLES.values():
            print(f"{ex.name:10s} {ex.law:28s} {ex.rows} rows  {ex.path}")
        print("fit one with: dgsr fit --example NAME")
        return 0
    path = _example_path(args.name)
    if args.path:
        print(path)
        return 0
    ex = EXAMPLES[args.name]
    print(f"{ex.name}: {ex.law}  ({ex.rows} rows, target {ex.target})\n{path}\n")
    print(read_table(path).head(5).to_string(index=False))
    print(f"\nfit it with: dgsr fit --example {ex.name}")
    return 0


def _example_path(name: str) -> Path:
    from dgsr.examples import EXAMPLES

    if name not in EXAMPLES:
        raise CLIError(f"no bundled example {name!r}; available: {', '.join(sorted(EXAMPLES))}")
    return EXAMPLES[name].path


# ---------------------------------------------------------------------- files
def read_table(path: Path) -> Any:
    """Read a CSV (``,``) or TSV (``.tsv``/``.tab``: tab) file, optionally gzipped; other
    extensions have their separator sniffed."""
    import pandas as pd

    if not path.is_file():
        raise CLIError(f"file not found: {path}")
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in (".gz", ".bz2", ".xz", ".zip")]
    ext = suffixes[-1] if suffixes else ""
    kwargs: dict[str, Any] = {"sep": ","} if ext == ".csv" else {"sep": "\t"} if ext in (".tsv", ".tab") \
        else {"sep": None, "engine": "python"}
    try:
        df = pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise CLIError(f"cannot read {path} as a table: {err}") from None
    if df.shape[0] == 0:
        raise CLIError(f"{path} has a header but no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _atomic_write(path: Path, write: Any, *, text: bool = False) -> None:
    """Write through a temporary file and rename, so a crash never leaves half a file."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w" if text else "wb", **({"newline": ""} if text else {})) as fh:
            write(fh)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _names(columns: Any) -> str:
    return ", ".join(repr(str(c)) for c in columns)


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    # Warnings are for the user here, not for a developer: no file and line number.
    print(f"dgsr: warning: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
