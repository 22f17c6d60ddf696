"""``dgsr search --policy learned``: expert iteration with the learned prior, torch-free.

The datasets are searched one after another, each for an equal share of the time left, by one
:class:`~dgsr.policies.learned.policy.LearnedPriorPolicy` that keeps learning after every trial
(``online``; ``--frozen`` turns that off), so later datasets profit from the earlier ones, as
the paper's policy does across its queue. Under ``--out`` it writes ``prior.json`` (the weights,
after every update: usable as ``dgsr fit --policy OUT/prior.json``), ``results/<dataset>.json``,
``results.csv`` and ``log.jsonl``, one line per dataset. ``--resume`` starts from ``prior.json``
and skips the datasets already done.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from dgsr.cli.errors import CLIError
from dgsr.runtime.files import atomic_write_text, safe_file_name

PRIOR_FILE, LOG_FILE = "prior.json", "log.jsonl"


def _check_arguments(args: argparse.Namespace, out: Path) -> None:
    if args.backend != "local" or args.workers != 1 or args.synthetic:
        raise CLIError("--policy learned runs in this process: drop --backend ray, --workers and --synthetic")
    if args.resume and args.force:
        raise CLIError("--resume and --force contradict each other")
    if args.resume and not (out / PRIOR_FILE).is_file():
        raise CLIError(f"nothing to resume: {out / PRIOR_FILE} does not exist (drop --resume to start a new run)")
    if not args.resume and not args.force and any((out / f).exists() for f in (PRIOR_FILE, LOG_FILE)):
        raise CLIError(f"{out} already holds a run: pass --resume to continue it, --force to replace it, "
                       "or choose another --out")
    if not args.data:
        raise CLIError("give one or more data files")


def run_learned(args: argparse.Namespace) -> int:
    """Search every file in turn with one learned-prior policy that keeps learning."""
    from dgsr.cli.search import dataset_names, read_search_table
    from dgsr.policies.learned.policy import LearnedPriorPolicy
    from dgsr.policies.learned.weights import WeightsError, load_weights, save_weights

    out = Path(args.out)
    _check_arguments(args, out)
    out.mkdir(parents=True, exist_ok=True)
    start = out / PRIOR_FILE if args.resume else (None if args.policy == "learned" else Path(args.policy))
    try:
        weights = load_weights(start) if start is not None else load_weights()
    except (FileNotFoundError, WeightsError) as err:
        raise CLIError(str(err)) from None
    policy = LearnedPriorPolicy(weights, online=not args.frozen, checkpoint=out / PRIOR_FILE)
    rng = np.random.default_rng(args.seed)
    paths = [Path(p) for p in args.data]
    done = _done(out) if args.resume else {}
    if not args.resume:
        (out / LOG_FILE).unlink(missing_ok=True)
    todo = [(p, n) for p, n in zip(paths, dataset_names(paths)) if n not in done]
    began = time.monotonic()
    for i, (path, name) in enumerate(todo):
        X, y, names = read_search_table(path, args.target, rng)
        share = max(args.time - (time.monotonic() - began), 0.0) / (len(todo) - i)
        done[name] = _search_one(policy, name, X, y, names, share, args, seed=args.seed + len(done), out=out)
        if not args.quiet:
            r = done[name]
            print(f"[{i + 1}/{len(todo)}] {name:<24} R2 {r['r2']:.4f} size {r['size']:>2}  {r['equation']}  "
                  f"(updates {policy.updates})", flush=True)
    save_weights(out / PRIOR_FILE, policy.weights)
    _write_table(out, done)
    print(f"wrote {out / 'results.csv'}, {out / 'results'}/, {out / PRIOR_FILE} ({policy.updates} online updates)")
    return 0


def _search_one(policy: Any, name: str, X: np.ndarray, y: np.ndarray, names: tuple[str, ...], seconds: float,
                args: argparse.Namespace, *, seed: int, out: Path) -> dict[str, Any]:
    """One dataset's search with the shared policy; its result file and log line; its summary row."""
    from dgsr.core.budget import Budget
    from dgsr.core.pareto import select
    from dgsr.search.mcts import SearchConfig, run_search

    budget = Budget(max_time=seconds, max_evaluations=args.trial_evals)
    result = run_search(X, y, policy, config=SearchConfig(iterations_per_trial=args.iterations), rng=seed,
                        budget=budget)
    front = result.archive.front()
    chosen = front[select(front)] if front else None

    def entry(e: Any) -> dict[str, Any] | None:
        return None if e is None else {"size": e.size, "mse": e.mse, "r2": e.r2,
                                       "equation": e.expression.format(list(names), precision=6)}

    data = {"dataset": name, "trials": result.n_trials, "evaluations": result.n_evaluations,
            "seconds": round(result.elapsed, 2), "online_updates": policy.updates,
            "selected": entry(chosen), "best": entry(result.best), "front": [entry(e) for e in front]}
    folder = out / "results"
    folder.mkdir(exist_ok=True)
    atomic_write_text(folder / f"{safe_file_name(name)}.json", json.dumps(data, indent=1))
    with open(out / LOG_FILE, "a") as fh:
        fh.write(json.dumps({k: v for k, v in data.items() if k != "front"}) + "\n")
    return _summary(data)


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    """A dataset's row of ``results.csv`` from its result (or log line)."""
    sel = data.get("selected") or {"r2": float("nan"), "size": 0, "equation": ""}
    return {"dataset": data["dataset"], "r2": sel["r2"], "size": sel["size"], "equation": sel["equation"],
            "trials": data["trials"]}


def _done(out: Path) -> dict[str, dict[str, Any]]:
    """The datasets a run in ``out`` already finished, from its log."""
    done: dict[str, dict[str, Any]] = {}
    log = out / LOG_FILE
    for line in log.read_text().splitlines() if log.is_file() else []:
        data = json.loads(line)
        done[data["dataset"]] = _summary(data)
    return done


def _write_table(out: Path, done: dict[str, dict[str, Any]]) -> None:
    import pandas as pd

    atomic_write_text(out / "results.csv", pd.DataFrame(list(done.values())).to_csv(index=False))
