"""Which front entry a longer budget should pick: every entry's test R², and the selection rules on it.

`fit` runs the default ``SymbolicRegressor`` for ``--time`` seconds on each set of a suite's half
(CONTRACTS §3 split and seeds, as `dgsr bench` does) and appends one line per (set, seed) to
``--jsonl``: each front entry's size, training loss and R², test R², the estimator's choice and
the out-of-fold losses of ``model_selection="cv"``. `rules` then reads the file and prints, per
rule, the median over sets of the test R² (mean over seeds first) and the median size: one search,
many selections.

    python bench/experiments/front_rules.py fit --suite blackbox --half develop --other --time 30 --seeds 0,1,2 --jsonl results/front_rules.jsonl
    python bench/experiments/front_rules.py rules results/front_rules.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class _Row:
    """What :func:`dgsr.core.pareto.select` reads of a front entry."""

    size: int
    mse: float
    r2: float
    expression: None = None


def fit(args: argparse.Namespace) -> None:
    from dgsr import SymbolicRegressor
    from dgsr.bench.datasets import DatasetRef, is_friedman, list_datasets, load_problem
    from dgsr.bench.protocol import make_split, r2_score
    from dgsr.bench.runner import in_half

    refs = in_half(list_datasets(args.suite, Path(args.data)), args.half)
    names = [r.name for r in refs if not (args.other and is_friedman(r.name))]
    with open(args.jsonl, "a") as out:
        for name in names:
            for seed in (int(s) for s in args.seeds.split(",")):
                problem = load_problem(DatasetRef(args.suite, name), Path(args.data), seed)
                split = make_split(problem.X, problem.y, seed, noise=0.0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the estimator's advice to users is not the point here
                    est = SymbolicRegressor(max_time=args.time, random_state=seed).fit(split.X_train, split.y_train)
                    eq = est.equations_
                    rows = [{"size": int(eq["complexity"].iloc[i]), "mse": float(eq["loss"].iloc[i]),
                             "r2": float(eq["r2"].iloc[i]),
                             "test": float(r2_score(split.y_test, est.predict(split.X_test, index=i)))}
                            for i in range(len(eq))]
                folds = getattr(est, "validation_loss_", None)
                folds = None if folds is None else [float(v) for v in np.ravel(folds)]
                out.write(json.dumps({"name": name, "seed": seed, "chosen": int(est.best_index_), "folds": folds, "rows": rows}) + "\n")
                out.flush()
                print(name, seed, "chosen size", rows[est.best_index_]["size"], "test", round(rows[est.best_index_]["test"], 3), flush=True)


def rules(args: argparse.Namespace) -> None:
    from dgsr.core.pareto import select

    def lowest_fold_loss(r: dict, front: list[_Row]) -> int:
        """Without out-of-fold losses for every entry (no check ran), the estimator's choice."""
        folds = r["folds"]
        return int(np.argmin(folds)) if folds and len(folds) == len(front) else r["chosen"]

    pickers = {
        "default (cv)": lambda r, front: r["chosen"],
        "lowest training loss": lambda r, front: select(front, "accuracy"),
        "lowest out-of-fold loss": lowest_fold_loss,
        "balanced, unchecked": lambda r, front: select(front, "balanced"),
    }
    picked: dict[str, dict[str, list[tuple[float, int]]]] = {k: defaultdict(list) for k in pickers}
    with open(args.jsonl) as lines:
        records = [json.loads(line) for line in lines]
    for r in records:
        front = [_Row(x["size"], x["mse"], x["r2"]) for x in r["rows"]]
        for rule, pick in pickers.items():
            i = pick(r, front)
            picked[rule][r["name"]].append((r["rows"][i]["test"], r["rows"][i]["size"]))
    for rule, per_set in picked.items():
        means = [statistics.mean(t for t, _ in v) for v in per_set.values()]
        sizes = [s for v in per_set.values() for _, s in v]
        print(f"{rule:24s} median test R² {statistics.median(means):.3f}  median size {statistics.median(sizes):g}  ({len(means)} sets)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--suite", default="blackbox")
    f.add_argument("--half", default="develop")
    f.add_argument("--other", action="store_true", help="leave out the Friedman sets (fri_c*)")
    f.add_argument("--time", type=float, default=30.0)
    f.add_argument("--seeds", default="0,1,2")
    f.add_argument("--data", default="../shared/data")
    f.add_argument("--jsonl", required=True)
    r = sub.add_parser("rules")
    r.add_argument("jsonl")
    args = parser.parse_args()
    if args.command == "fit":
        fit(args)
    else:
        rules(args)


if __name__ == "__main__":
    main()
