"""``dgsr fit``: fit a symbolic regressor to a table, print the front, write ``front.csv``,
``model.json`` (the versioned model file), ``model.pkl`` and ``front.png`` to ``--out``."""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgsr.cli.errors import CLIError
from dgsr.cli.example import example_path
from dgsr.cli.files import check_out_given, check_run_folder, check_writable_folder, write_output
from dgsr.cli.formula_rules import add_rule_options, rule_params
from dgsr.cli.messages import FLAGS, cli_message, for_the_cli
from dgsr.cli.streams import silence_stdout
from dgsr.cli.tables import front_frame, print_front, read_table
from dgsr.cli.targets import Target, run_file_names, run_targets, target_columns
from dgsr.cli.units import parse_units_option
from dgsr.core.custom_operators import split_operator_list
from dgsr.estimator.model_selection import MODEL_SELECTION_RULES
from dgsr.estimator.regressor import DEFAULT_SELECTION
from dgsr.runtime.termination import sigterm_as_interrupt
from dgsr.search.mcts import CONSTANT_FITTING_MODES

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor

# FLAGS and cli_message live in dgsr.cli.messages; they stay importable from here.
__all__ = ["FLAGS", "add_subparser", "cli_message", "for_the_cli", "run"]


def add_subparser(sub: Any) -> None:
    """Register ``dgsr fit``."""
    p = sub.add_parser("fit", help="find formulas that fit a CSV/TSV file",
                       description="Fit a symbolic regressor to a table; the target is the last column "
                                   "unless --target names it.")
    p.add_argument("data", nargs="?", help="CSV or TSV file (separator from the extension; .gz works)")
    p.add_argument("--example", metavar="NAME", help="use a bundled example instead (see `dgsr example`)")
    p.add_argument("--target", help="target column (default: the last column), or several separated by commas "
                                     "(--target a,b: one front per target, front_a.csv, front_b.csv, one model.json)")
    p.add_argument("--time", type=float, default=60.0, help="seconds of search (default: 60)")
    p.add_argument("--evals", type=int, default=500_000, help="maximum evaluations (default: 500000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--policy", default="semantic",
                   help="semantic (default: data-aware, wins at equal time), learned (semantic with a prior "
                        "learned from dgsr's searches), random, neural (the paper's transformer, shipped as a "
                        "reference: it loses to random mutations at equal time), a .safetensors checkpoint, or "
                        ".json learned-prior weights")
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
                        "sin,cos,tan,exp,log,sqrt,inv,sq (default: all), and your own as SymPy "
                        "expressions, e.g. \"+,*,gauss(x) = exp(-x**2),hyp(x, y) = sqrt(x**2 + y**2)\"")
    p.add_argument("--target-r2", type=float, default=None, metavar="R2",
                   help="stop early once the best training R² reaches R2, e.g. 0.9999 (default: use the whole budget)")
    p.add_argument("--max-size", type=int, default=None, metavar="N",
                   help="largest formula, in nodes (default: the estimator's max_size, 60; on few rows, "
                        "no more nodes than rows)")
    p.add_argument("--guess", action="append", default=None, metavar="FORMULA",
                   help="a formula you expect, in the column names, e.g. \"m1*m2/r**2\" (constants refitted; the "
                        "search starts from it); repeatable")
    add_rule_options(p)
    p.add_argument("--batching", choices=("auto", "on", "off"), default="auto",
                   help="value candidates on a sample of --batch-size rows (auto: when there are more rows; "
                        "above 100,000 rows the refit uses a sample too, and losses are on all rows)")
    p.add_argument("--units", default=None, metavar="PAIRS",
                   help="units of columns and target for pint, e.g. --units 'm1=kg,m2=kg,r=m,F=N' (a column "
                        "left out is a pure number); formulas whose units do not follow are penalised")
    p.add_argument("--batch-size", type=int, default=1000, metavar="N", help="rows per sample (default: 1000)")
    p.add_argument("--out", default="run",
                   help="folder for front.csv, model.json, model.pkl and front.png (default: run/); a folder that "
                        "already holds a run is refused unless --force")
    p.add_argument("--force", action="store_true", help="replace the run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr fit``: fit, write ``front.csv``, ``model.json``, ``model.pkl`` and ``front.png``, print the front.

    Returns 0 after a complete fit, 130 after an interrupted one and 143 after a SIGTERM (the best
    result written either way, ``stop_reason`` = ``interrupted`` in front.csv), and 141 when
    stdout was closed (every file written all the same)."""
    from dgsr.core.units import checked_units
    from dgsr.estimator.fit_config import config_from
    from dgsr.estimator.guesses import parse_guesses
    from dgsr.estimator.input_checks import validate_params
    from dgsr.estimator.regressor import SymbolicRegressor

    if (args.data is None) == (args.example is None):
        raise CLIError("give either a data file or --example NAME (see `dgsr example`)")
    check_out_given(args.out)
    path = example_path(args.example) if args.example else Path(args.data)
    df = read_table(path)
    targets = target_columns(args.target, df.columns, path)
    if df.shape[1] <= len(targets):
        raise CLIError(f"{path} needs at least one input column besides the target {', '.join(map(repr, targets))}")
    X, y = df.drop(columns=targets), df[targets[0]] if len(targets) == 1 else df[targets]
    if args.seed < 0:
        raise CLIError(f"--seed must be a non-negative integer, got {args.seed}")
    operators = None
    if args.operators is not None:
        operators = [o.strip() for o in split_operator_list(args.operators) if o.strip()]
        if not operators:
            raise CLIError("--operators needs at least one operator, e.g. --operators +,-,*,/ "
                           "(leave the flag out to use all of them)")
    est = SymbolicRegressor(max_time=args.time, max_evaluations=args.evals, random_state=args.seed,
                            policy=args.policy, n_samples=args.k, constant_fitting=args.constants,
                            model_selection=args.selection, target_r2=args.target_r2, verbose=not args.quiet,
                            n_jobs=args.jobs, parallel_backend=args.backend, operators=operators, guesses=args.guess,
                            **rule_params(args), batching={"auto": None, "on": True, "off": False}[args.batching],
                            batch_size=args.batch_size,
                            **({} if args.max_size is None else {"max_size": args.max_size}),
                            **({} if args.inner_fit_steps is None else {"inner_fit_steps": args.inner_fit_steps}))
    with for_the_cli(errors=(ValueError, TypeError)):  # a JSON rule of the wrong shape is a TypeError
        validate_params(config_from(est.get_params()))  # wrong options fail before any folder is made
        parse_guesses(config_from(est.get_params()), [str(c) for c in X.columns])
        units = parse_units_option(args.units, list(X.columns), targets)
        if units:
            checked_units(units["X_units"], None, X.shape[1], [str(c) for c in X.columns])
            for unit in units["y_units"] if isinstance(units["y_units"], list) else [units["y_units"]]:
                checked_units(None, unit, 0)
    out = Path(args.out)
    check_run_folder(out, [path], args.force, run_file_names(targets))  # never over the data or an earlier run
    check_writable_folder(out, "--out")  # before the search, not after it; the folder is made when written
    # SIGTERM (a batch scheduler's time limit) ends the fit as a first Ctrl-C does.
    with sigterm_as_interrupt() as term, for_the_cli(reword=lambda text: _as_sigterm(text) if term.received else text):
        est.fit(X, y, **units)  # a first Ctrl-C ends the fit early with its best result (a second one aborts)
        parts = run_targets(est, targets)
        # builds equations_: a first Ctrl-C in its simplification leaves it unsimplified
        fronts = [front_frame(part.estimator) for part in parts]
    interrupted = any(part.estimator.stop_reason_ == "interrupted" for part in parts)
    status = 143 if term.received else 130 if interrupted else 0
    # Every file before any output: a reader of stdout that goes away (`| head -1`) costs none.
    written, notes = _write_run(est, parts, fronts, out)
    summary = [*notes, *_summary(parts, written, term.received)]
    try:
        for part in parts:
            print_front(part.estimator, part.name)
        for line in summary:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        for line in summary:  # where the files are is worth the one place still read
            print(line, file=sys.stderr)
        return status or 141
    return status


def _write_run(est: SymbolicRegressor, parts: list[Target], fronts: list[Any],
               out: Path) -> tuple[list[str], list[str]]:
    """Write ``front.csv`` (``front_<target>.csv`` per target of several), ``model.json``,
    ``model.pkl`` and (with matplotlib) ``front.png`` (``front_<target>.png``) in ``out``; returns
    the paths written, and a note for a plot that was not."""
    for part, front in zip(parts, fronts):
        write_output(out / f"{part.stem}.csv", lambda fh, front=front: front.to_csv(fh, index=False), text=True)
    try:
        est.save(out / "model.json")  # atomic, as write_output's files
    except OSError as err:
        raise CLIError(f"cannot write {out / 'model.json'}: {err.strerror or err}") from None
    write_output(out / "model.pkl", lambda fh: pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL))
    written = [*(str(out / f"{part.stem}.csv") for part in parts), str(out / "model.json"), str(out / "model.pkl")]
    notes = []
    for part in parts:
        plot = out / f"{part.stem}.png"
        try:
            if _write_plot(part.estimator, part.name, plot):
                written.append(str(plot))
            else:
                notes.append(f"skipped {plot}: matplotlib is not installed (pip install matplotlib)")
        except OSError as err:
            raise CLIError(f"cannot write {plot}: {err.strerror or err}") from None
    return written, notes


#: Why a fit stopped (``stop_reason_``), as the last line of ``dgsr fit`` says it.
STOP_REASONS = {"time": "the time limit (--time)", "evaluations": "the evaluation budget (--evals)",
                "target": "reaching --target-r2", "interrupted": "Ctrl-C",
                "constant_target": "a constant target (no search needed)",
                "exhausted": "running out of new formulas", "trials": "the last trial"}


def _as_sigterm(text: str) -> str:
    """The estimator's words for a first Ctrl-C, for the SIGTERM that stood in for it."""
    return text.replace("(Ctrl-C)", "(SIGTERM)").replace("Press Ctrl-C again to abort.", "A second SIGTERM aborts.")


def _summary(parts: list[Target], written: list[str], terminated: bool) -> list[str]:
    """The lines after the fronts: why each fit stopped, what was written, and for a stopped fit
    what the files hold."""
    lines = []
    for part in parts:
        est = part.estimator
        reason = "SIGTERM" if terminated else STOP_REASONS.get(est.stop_reason_, str(est.stop_reason_))
        name = "" if len(parts) == 1 else f"{part.name}: "
        lines.append(f"{name}stopped by {reason} after {est.n_evaluations_:,.0f} evaluations")
    lines[-1] += f"; wrote {', '.join(written)}"
    if terminated:
        lines.append("the fit was terminated (SIGTERM): these are the best results reached so far (exit status 143)")
    elif any(part.estimator.stop_reason_ == "interrupted" for part in parts):
        lines.append("the fit was interrupted: these are the best results reached so far (exit status 130)")
    return lines


def _write_plot(est: SymbolicRegressor, target: str, path: Path) -> bool:
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
