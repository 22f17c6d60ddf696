"""Compare search variants at equal evaluations on Feynman problems (deterministic, machine-independent).

Each variant runs ``run_search`` with the random policy on the training rows of each problem
(regenerated as CONTRACTS §3) under the same evaluation budget; the figure is the share of
problems whose best training R² reaches 0.99 (and 0.999999), and the median size of the best.

    python bench/search_variants.py --evals 4000 --problems 20 --variants base,puct2,max
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.budget import Budget
from dgsr.random_policy import RandomPolicy
from dgsr.search import SearchConfig, run_search

VARIANTS: dict[str, dict] = {
    "base": {},
    "puct2": {"p_uct": 2.0},
    "puct0.5": {"p_uct": 0.5},
    "nowiden": {"progressive_widening": 0.0},
    "noscale": {"linear_scaling": False},
    "never": {"constant_fitting": "never"},
    "all": {"constant_fitting": "all"},
    "decay0.9": {"depth_decay": 0.9},
    "iters200": {"iterations_per_trial": 200},
    "widen2": {"progressive_widening": 2.0},
    "widen4": {"progressive_widening": 4.0},
    "k32": {"n_samples": 32},
    "k8": {"n_samples": 8},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--evals", type=float, default=4000)
    p.add_argument("--problems", type=int, default=20)
    p.add_argument("--skip", type=int, default=0, help="start at this Feynman problem (file order)")
    p.add_argument("--variants", default="base")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--names", default="", help="comma-separated Feynman problem names instead of a slice")
    args = p.parse_args()
    data = resolve_data_dir(None)
    refs = list_datasets("feynman", data)
    if args.names:
        wanted = set(args.names.split(","))
        refs = [r for r in refs if r.name in wanted]
    else:
        refs = refs[args.skip:args.skip + args.problems]
    problems = [load_problem(ref, data, seed=args.seed) for ref in refs]
    print(f"{len(problems)} Feynman problems from #{args.skip}, {args.evals:g} evaluations each, seed {args.seed}")
    print("| variant | R² >= 0.99 | R² >= 0.999999 | median size | seconds |")
    print("|---|---|---|---|---|")
    for name in args.variants.split(","):
        config = dataclasses.replace(SearchConfig(), **VARIANTS[name])
        solved = exact = 0
        sizes = []
        start = time.perf_counter()
        for prob in problems:
            X, y = np.asarray(prob.X, dtype=float), np.asarray(prob.y, dtype=float)
            n = int(0.75 * len(y))  # the training share of the protocol's split (rows are i.i.d.)
            X, y = X[:n], y[:n]
            result = run_search(X, y, RandomPolicy(), config=config, rng=args.seed,
                                budget=Budget(max_evaluations=args.evals, target_r2=1 - 1e-9))
            best = result.best
            solved += best is not None and best.r2 >= 0.99
            exact += best is not None and best.r2 >= 0.999999
            good = [e for e in result.archive.front() if e.r2 >= 0.99]
            sizes.append(good[0].size if good else (best.size if best else 0))
        n = len(problems)
        print(f"| {name} | {solved / n:.2f} | {exact / n:.2f} | {statistics.median(sizes):g} | "
              f"{time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
