"""``dgsr fit``: fit a symbolic regressor to a table, print the front, write ``front.csv``,
``model.pkl`` and ``front.png`` to ``--out``."""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError
from dgsr.cli.example import example_path
from dgsr.cli.files import check_writable_folder
from dgsr.cli.tables import column_list, front_frame, print_front, read_table
from dgsr.estimator.model_selection import MODEL_SELECTION_RULES
from dgsr.search.mcts import CONSTANT_FITTING_MODES


def add_subparser(sub: Any) -> None:
    """Register ``dgsr fit``."""
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
    p.add_argument("--constants", choices=CONSTANT_FITTING_MODES, default=None,
                   help="when to fit constants during search (default: the benchmark-chosen one)")
    p.add_argument("--selection", choices=MODEL_SELECTION_RULES, default="balanced",
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr fit``: fit, print the front, write ``front.csv`` and ``model.pkl``."""
    from dgsr.core.files import atomic_write
    from dgsr.estimator.input_checks import validate_params
    from dgsr.estimator.regressor import SymbolicRegressor

    if (args.data is None) == (args.example is None):
        raise CLIError("give either a data file or --example NAME (see `dgsr example`)")
    path = example_path(args.example) if args.example else Path(args.data)
    df = read_table(path)
    target = args.target if args.target is not None else str(df.columns[-1])
    if target not in df.columns:
        raise CLIError(f"target column {target!r} not found in {path}; columns: {column_list(df.columns)}")
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
    atomic_write(front_csv, lambda fh: front_frame(est).to_csv(fh, index=False), text=True)
    atomic_write(out / "model.pkl", lambda fh: pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL))
    print_front(est, target)
    written = [str(front_csv), str(out / "model.pkl")]
    if _write_plot(est, target, out / "front.png"):
        written.append(str(out / "front.png"))
    else:
        print(f"skipped {out / 'front.png'}: matplotlib is not installed (pip install matplotlib)")
    print(f"stopped by {est.stop_reason_} after {est.n_evaluations_:,.0f} evaluations; "
          f"wrote {', '.join(written)}")
    return 0


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
