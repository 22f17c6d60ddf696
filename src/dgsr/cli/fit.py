"""``dgsr fit``: fit a symbolic regressor to a table, print the front, write ``front.csv``,
``model.pkl`` and ``front.png`` to ``--out``."""

from __future__ import annotations

import argparse
import contextlib
import pickle
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError
from dgsr.cli.example import example_path
from dgsr.cli.files import check_run_folder, check_writable_folder
from dgsr.cli.tables import column_list, front_frame, print_front, read_table
from dgsr.estimator.model_selection import MODEL_SELECTION_RULES
from dgsr.estimator.regressor import DEFAULT_SELECTION
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
    p.add_argument("--inner-fit-steps", type=int, default=None, metavar="N",
                   help="Levenberg-Marquardt steps each new candidate's inner constants get before it is "
                        "valued (default: the estimator's inner_fit_steps, 3; 0 values candidates as proposed)")
    p.add_argument("--selection", choices=MODEL_SELECTION_RULES, default=DEFAULT_SELECTION,
                   help=f"which front expression predictions use (default: {DEFAULT_SELECTION}; see SymbolicRegressor)")
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
    p.add_argument("--max-size", type=int, default=None, metavar="N",
                   help="largest formula, in nodes (default: the estimator's max_size, 60; on few rows, "
                        "no more nodes than rows)")
    p.add_argument("--out", default="run",
                   help="folder for front.csv, model.pkl and front.png (default: run/); a folder that "
                        "already holds a run is refused unless --force")
    p.add_argument("--force", action="store_true", help="replace the run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr fit``: fit, print the front, write ``front.csv`` and ``model.pkl``.

    Returns 0 after a complete fit and 130 after an interrupted one (its best result written,
    ``stop_reason`` = ``interrupted`` in front.csv)."""
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
    if args.seed < 0:
        raise CLIError(f"--seed must be a non-negative integer, got {args.seed}")
    operators = None
    if args.operators is not None:
        operators = [o.strip() for o in args.operators.split(",") if o.strip()]
        if not operators:
            raise CLIError("--operators needs at least one operator, e.g. --operators +,-,*,/ "
                           "(leave the flag out to use all of them)")
    est = SymbolicRegressor(max_time=args.time, max_evaluations=args.evals, random_state=args.seed,
                            policy=args.policy, n_samples=args.k, constant_fitting=args.constants,
                            model_selection=args.selection, target_r2=args.target_r2, verbose=not args.quiet,
                            n_jobs=args.jobs, parallel_backend=args.backend, operators=operators,
                            **({} if args.max_size is None else {"max_size": args.max_size}),
                            **({} if args.inner_fit_steps is None else {"inner_fit_steps": args.inner_fit_steps}))
    with for_the_cli():
        validate_params(est)  # wrong options fail before any folder is made
    out = Path(args.out)
    check_run_folder(out, [path], args.force)  # never over the data or an earlier run
    check_writable_folder(out, "--out")  # before the search, not after it
    with for_the_cli():
        est.fit(X, y)  # a first Ctrl-C ends the fit early with its best result (a second one aborts)
        front = front_frame(est)  # builds equations_: a first Ctrl-C in its simplification leaves it unsimplified
    interrupted = est.stop_reason_ == "interrupted"
    front_csv = out / "front.csv"
    atomic_write(front_csv, lambda fh: front.to_csv(fh, index=False), text=True)
    atomic_write(out / "model.pkl", lambda fh: pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL))
    print_front(est, target)
    written = [str(front_csv), str(out / "model.pkl")]
    if _write_plot(est, target, out / "front.png"):
        written.append(str(out / "front.png"))
    else:
        print(f"skipped {out / 'front.png'}: matplotlib is not installed (pip install matplotlib)")
    print(f"stopped by {est.stop_reason_} after {est.n_evaluations_:,.0f} evaluations; "
          f"wrote {', '.join(written)}")
    if interrupted:
        print("the fit was interrupted: these are the best results reached so far (exit status 130)")
    return 130 if interrupted else 0


#: The estimator's parameters as ``dgsr fit`` spells them (messages name the flag, not the parameter).
FLAGS = {"max_time": "--time", "max_evaluations": "--evals", "random_state": "--seed", "policy": "--policy",
         "n_samples": "--k", "constant_fitting": "--constants", "model_selection": "--selection",
         "n_jobs": "--jobs", "parallel_backend": "--backend", "operators": "--operators",
         "target_r2": "--target-r2", "max_size": "--max-size", "inner_fit_steps": "--inner-fit-steps"}
_PARAMETER = re.compile(r"(?<![\w.-])(" + "|".join(sorted(FLAGS, key=len, reverse=True)) + r")(=(\S+?))?(?=[\s,.;:)]|$)")
# A bare parameter name is a flag where it is plainly one (``policy must be ...``); the common
# words among them (policy, operators) are translated only when they start the message or carry a value.
_WORDS = ("policy", "operators")


def cli_message(text: str) -> str:
    """An estimator message in the command line's terms: ``max_size=12`` -> ``--max-size 12``,
    ``max_evaluations must ...`` -> ``--evals must ...``, ``equations_`` -> ``the front``."""
    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(3)
        if value is not None:
            return f"{FLAGS[name]} {value}"
        if name in _WORDS and match.start() != 0:
            return name
        return FLAGS[name]

    text = _PARAMETER.sub(flag, text)
    text = re.sub(r"(--[\w-]+ must be )None(?:,| or) ", r"\1", text)  # a flag cannot be None
    return re.sub(r"\bequations_", "the front (front.csv)", text)


@contextlib.contextmanager
def for_the_cli() -> Iterator[None]:
    """Estimator errors (ValueError) and warnings inside this block are worded for the command line."""
    shown = warnings.showwarning

    def show(message: Any, *rest: Any, **kwargs: Any) -> None:
        shown(cli_message(str(message)), *rest, **kwargs)

    warnings.showwarning = show
    try:
        yield
    except ValueError as err:
        raise CLIError(cli_message(str(err))) from None
    finally:
        warnings.showwarning = shown


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
