"""`python bench/experiments/time_budget.py [--time 2] [--jobs 1,2,-1]`: wall time of a timed fit with worker processes.

Fits one 300-row law with the default policy under ``max_time`` for each ``n_jobs`` and prints
the wall time of ``fit`` (worker start-up, polish and display included) and the stop reason.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dgsr import SymbolicRegressor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=2.0)
    parser.add_argument("--jobs", default="1,2,-1")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(300, 3))
    y = X[:, 0] * np.sin(X[:, 1]) + X[:, 2] ** 2
    print("| n_jobs | max_time (s) | fit wall time (s) | stop reason |")
    print("|---|---|---|---|")
    for jobs in map(int, args.jobs.split(",")):
        start = time.perf_counter()
        est = SymbolicRegressor(max_time=args.time, n_jobs=jobs, random_state=0, verbose=False).fit(X, y)
        print(f"| {jobs} | {args.time:g} | {time.perf_counter() - start:.2f} | {est.stop_reason_} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
