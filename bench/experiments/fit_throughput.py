"""`python bench/experiments/fit_throughput.py [--time 10] [--min-rows 300] [--max-rows 1000]`: end-to-end evaluations per second of ``fit``.

Issue 25's speed target counts evaluations per second end to end (CONTRACTS §2: inner-fit and
polish passes as fractions), on one core, at 300-1,000 training rows. This script measures
exactly that: for each black-box set whose training share (CONTRACTS §3 split, seed 0) has
that many rows, one ``SymbolicRegressor(max_time=T, random_state=0).fit`` in this process (one
thread, after a short fit that loads the compiled kernels), timed from the call to its return
(input checks, the search, the polish, the cross-validation: the whole ``fit``; not ``predict``
nor the SymPy simplification of ``equations_``, which is built when first read). Prints each
set's evaluations, seconds and evaluations per second, then the median and mean.

Run it alone on the machine (one core busy), and print the load average beside it: the figure
is the code's speed only when nothing else shares the core. Compare two trees by running it
from each in turn, best one set at a time, alternating, since the speed of a shared machine
drifts by 10-20% within minutes:

    PYTHONPATH=<tree>/src python bench/experiments/fit_throughput.py --time 10 [--datasets NAME]
"""

from __future__ import annotations

import os

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import argparse
import statistics
import time
import warnings

import numpy as np

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.bench.protocol import make_split


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time", type=float, default=10.0, help="max_time of each fit (seconds)")
    p.add_argument("--min-rows", type=int, default=300)
    p.add_argument("--max-rows", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=None, help="data folder (default: as dgsr bench finds it)")
    p.add_argument("--datasets", default=None, help="comma-separated names to keep (default: every set in range)")
    args = p.parse_args()
    data = resolve_data_dir(args.data)
    warnings.filterwarnings("ignore")  # a pole warning per set would bury the table
    warm = np.random.default_rng(0).uniform(1, 2, (50, 2))
    SymbolicRegressor(max_evaluations=300, random_state=0, verbose=False).fit(warm, warm[:, 0] * warm[:, 1])
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| dataset | rows | features | evaluations | fit seconds | evaluations/s |")
    print("|---|---|---|---|---|---|")
    rates = []
    keep = None if args.datasets is None else set(args.datasets.split(","))
    for ref in list_datasets("blackbox", data):
        if keep is not None and ref.name not in keep:
            continue
        problem = load_problem(ref, data, seed=args.seed)
        split = make_split(problem.X, problem.y, args.seed)
        n = len(split.y_train)
        if not args.min_rows <= n <= args.max_rows:
            continue
        est = SymbolicRegressor(max_time=args.time, random_state=args.seed, verbose=False)
        start = time.perf_counter()
        est.fit(split.X_train, split.y_train)
        seconds = time.perf_counter() - start
        rate = est.n_evaluations_ / seconds
        rates.append(rate)
        print(f"| {ref.name} | {n} | {split.X_train.shape[1]} | {est.n_evaluations_:,.0f} | {seconds:.2f} | {rate:,.0f} |",
              flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if rates:
        print(f"{len(rates)} sets: median {statistics.median(rates):,.0f} evaluations/s, "
              f"mean {statistics.mean(rates):,.0f}")


if __name__ == "__main__":
    main()
