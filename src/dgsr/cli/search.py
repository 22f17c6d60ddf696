"""``dgsr search``: expert iteration over several datasets at once (Section 3.2 of the paper).

``dgsr search data1.csv data2.csv ... --time 3600 --out run/`` searches all the files at once
while the policy and critic keep learning from the searches; it writes, under ``--out``,

* ``results/<dataset>.json`` (Pareto front, selected and most accurate expression, trials) and
  ``results.csv`` (one line per dataset),
* ``policy.safetensors``: the fine-tuned policy, usable later as ``dgsr fit --policy`` or
  ``SymbolicRegressor(policy=...)``,
* ``state.pt``: the whole learning state, checkpointed every few trials; ``--resume``
  continues after a crash or Ctrl-C, and ``log.jsonl``, one line per trial.

``--backend ray`` runs the search workers and the trainer as Ray actors (a local instance, or a
cluster with ``--address``); the default runs in this process (``--workers 1``) or a local
process pool.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np

#: Rows kept per dataset (CONTRACTS §3 caps training rows at 10,000).
MAX_ROWS = 10_000


def add_subparser(subparsers: Any) -> None:
    """Register ``dgsr search``."""
    p = subparsers.add_parser(
        "search", help="search several datasets at once while the policy learns (expert iteration)",
        description="Expert iteration over several CSV/TSV files: one search per file, run in trials, with "
                    "the policy and critic fine-tuned on the searches' results; writes a result per dataset "
                    "and the fine-tuned policy.")
    p.add_argument("data", nargs="*", help="CSV/TSV files (target: the last column unless --target names it)")
    p.add_argument("--target", help="target column name in every file (default: each file's last column)")
    p.add_argument("--time", type=float, default=3600.0,
                   help="seconds of wall time in all; a resumed run counts the time already spent (default: 3600)")
    p.add_argument("--trials", type=int, default=None, help="stop after this many trials in all")
    p.add_argument("--out", default="run", help="output folder (default: run/)")
    p.add_argument("--policy", default="neural",
                   help="starting weights: neural (the shipped transformer), a .safetensors checkpoint, learned "
                        "(the shipped learned prior over the semantic policy, torch-free) or its .json weights")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local: this process or a local process pool; ray: Ray actors")
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local instance)")
    p.add_argument("--workers", type=int, default=1, help="search workers (default: 1)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/state.pt (an error if there is none)")
    p.add_argument("--force", action="store_true", help="start a new run even if OUT holds one (replacing its log)")
    p.add_argument("--synthetic", type=int, default=0, help="synthetic datasets mixed into the queue (default: 0)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--iterations", type=int, default=1000, help="MCTS iterations per trial (default: 1000)")
    p.add_argument("--trial-evals", type=float, default=None, help="evaluations per trial at most")
    p.add_argument("--trial-time", type=float, default=600.0, help="seconds per trial at most (default: 600)")
    p.add_argument("--frozen", action="store_true", help="do not fine-tune (the baseline: a frozen policy)")
    p.add_argument("--steps-per-trial", type=int, default=4, help="trainer steps after each trial (default: 4)")
    p.add_argument("--batch-size", type=int, default=32, help="trainer batch size (default: 32)")
    p.add_argument("--lr", type=float, default=1e-4, help="trainer learning rate (default: 1e-4)")
    p.add_argument("--checkpoint-every", type=int, default=5,
                   help="trials between checkpoints (default: 5; also at least every 60 s of trials)")
    p.add_argument("--device", default="cpu", help="torch device of the trainer (default: cpu)")
    p.add_argument("--quiet", action="store_true", help="no line per trial")
    p.set_defaults(func=run)


def load_dataset(path: Path, target: str | None, rng: np.random.Generator, name: str) -> Any:
    """A :class:`~dgsr.online.Dataset` from a table: numeric, finite, at most ``MAX_ROWS`` rows, <= 10 columns."""
    from dgsr.online import Dataset

    return Dataset(name, *read_search_table(path, target, rng))


def read_search_table(path: Path, target: str | None, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``X``, ``y`` and the column names of a table to search: numeric, finite, at most
    ``MAX_ROWS`` rows (a random subset), at most 10 input columns (the most informative)."""
    from dgsr.cli.errors import CLIError
    from dgsr.cli.tables import read_table
    from dgsr.core.operators import MAX_VARIABLES
    from dgsr.estimator.features import select_features

    df = read_table(path)
    column = target if target is not None else str(df.columns[-1])
    if column not in df.columns:
        raise CLIError(f"target column {column!r} not found in {path}")
    if df.shape[1] < 2:
        raise CLIError(f"{path} needs at least one input column besides the target {column!r}")
    inputs = df.drop(columns=[column])
    try:
        X = inputs.to_numpy(dtype=np.float64)
        y = df[column].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise CLIError(f"{path}: every column must be numeric ({err})") from None
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise CLIError(f"{path} contains NaN or infinite values; remove those rows first")
    if np.ptp(y) == 0:
        raise CLIError(f"{path}: the target {column!r} is constant")
    if X.shape[0] > MAX_ROWS:
        rows = np.sort(rng.choice(X.shape[0], MAX_ROWS, replace=False))
        X, y = X[rows], y[rows]
    names = [str(c) for c in inputs.columns]
    if X.shape[1] > MAX_VARIABLES:
        keep = select_features(X, y, MAX_VARIABLES, rng=rng)
        warnings.warn(f"{path} has {X.shape[1]} input columns; the search uses the {len(keep)} with the highest "
                      f"mutual information with {column!r}: {', '.join(names[i] for i in keep)}", UserWarning,
                      stacklevel=2)
        X, names = X[:, keep], [names[i] for i in keep]
    return X, y, tuple(names)


def dataset_names(paths: list[Path]) -> list[str]:
    """Dataset names from file names (``name``, ``name-2``, ... when two files share one)."""
    out: list[str] = []
    for p in paths:
        base = p.name.split(".")[0] or "dataset"
        name, i = base, 2
        while name in out:
            name, i = f"{base}-{i}", i + 1
        out.append(name)
    return out


def _start_model(spec: str, device: str) -> Any:
    from dgsr.cli.errors import CLIError
    from dgsr.neural.policy import NeuralPolicy

    if spec == "neural":
        try:
            return NeuralPolicy.from_pretrained(device=device).model
        except FileNotFoundError as err:
            raise CLIError(f"{err}; pass --policy PATH.safetensors") from None
    if spec in ("random", "semantic"):
        raise CLIError(f"the {spec} policy cannot learn; pass --policy neural or a .safetensors checkpoint")
    return NeuralPolicy.from_checkpoint(spec, device=device).model


def run(args: argparse.Namespace) -> int:
    """Handler of ``dgsr search``."""
    if args.policy == "learned" or args.policy.endswith(".json"):
        from dgsr.cli.learned_search import run_learned

        return run_learned(args)
    from dgsr.neural import require_torch

    require_torch("dgsr search")

    from dgsr.cli.errors import CLIError
    from dgsr.online import OnlineConfig, TrainerConfig, run_online
    from dgsr.online.state import STATE_FILE
    from dgsr.runtime.threads import torch_threads

    out = Path(args.out)
    resuming = args.resume and (out / STATE_FILE).is_file()
    if args.resume and not resuming:
        raise CLIError(f"nothing to resume: {out / STATE_FILE} does not exist (drop --resume to start a new run)")
    if args.resume and args.force:
        raise CLIError("--resume and --force contradict each other")
    if not resuming and not args.force and any((out / f).exists() for f in (STATE_FILE, "log.jsonl")):
        raise CLIError(f"{out} already holds a run: pass --resume to continue it, --force to replace it, "
                       "or choose another --out")
    if not resuming and not args.data and args.synthetic <= 0:
        raise CLIError("give one or more data files (or --synthetic N)")
    if args.workers < 1:
        raise CLIError("--workers must be >= 1")
    rng = np.random.default_rng(args.seed)
    datasets, model = [], None
    if not resuming:
        paths = [Path(p) for p in args.data]
        datasets = [load_dataset(p, args.target, rng, n) for p, n in zip(paths, dataset_names(paths))]
        model = _start_model(args.policy, args.device)
    config = OnlineConfig(iterations_per_trial=args.iterations, trial_evaluations=args.trial_evals,
                          trial_time=args.trial_time, learn=not args.frozen, synthetic=args.synthetic,
                          checkpoint_every=args.checkpoint_every, seed=args.seed)
    trainer_config = TrainerConfig(batch_size=args.batch_size, lr=args.lr, steps_per_trial=args.steps_per_trial,
                                   seed=args.seed)

    def show(line: dict) -> None:
        if not args.quiet:
            solved = "solved" if line["solved"] else "      "
            print(f"[trial {line['trial']:>4} {line['elapsed']:>7.0f}s] {line['dataset']:<24} {solved} "
                  f"R2 {line['best_r2']:.4f}  K={line['k']} const={line['constants']} "
                  f"steps={line['trainer_steps']}", flush=True)

    # One core per search, as the benchmark protocol runs them (CONTRACTS §2); for this command only.
    threads = 1 if args.backend == "local" and args.workers == 1 else None
    try:
        with torch_threads(threads):
            result = run_online(datasets, model=model, config=config, trainer_config=trainer_config,
                                backend=args.backend, workers=args.workers, address=args.address, out=out,
                                resume=resuming, max_time=args.time, max_trials=args.trials, device=args.device,
                                on_trial=show, force=args.force)
    except ImportError as err:
        raise CLIError(f"{err}; `pip install ray` for --backend ray") from None
    _summary(result, out)
    return 130 if result.stop_reason == "interrupted" else 0


def _summary(result: Any, out: Path) -> None:
    print(f"\n{result.trials} trials, {result.trainer_steps} trainer steps in {result.elapsed:.0f} s "
          f"(stopped by {result.stop_reason}; {result.requeued} re-queued)")
    for r in result.results:
        if r.selected is None:
            print(f"  {r.name:<24} no valid expression yet")
            continue
        mark = "solved" if r.solved else "      "
        print(f"  {r.name:<24} {mark} R2 {r.selected.r2:.4f} size {r.selected.size:>2}  "
              f"{r.selected.expression.format(list(r.feature_names), precision=4)}")
    print(f"wrote {out / 'results.csv'}, {out / 'results'}/, {out / 'policy.safetensors'}"
          + (" (interrupted: --resume continues)" if result.stop_reason == "interrupted" else ""))
