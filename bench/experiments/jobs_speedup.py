"""`python bench/experiments/jobs_speedup.py --evals 100000 --jobs 1,2`: wall time of one fit at n_jobs = 1, 2, ... (same seed and max_evaluations, so the same result).

The fit is ``SymbolicRegressor(policy="random", max_time=None)`` on a black-box dataset (or a
generated one); the script prints wall time, CPU time of this process, the speed-up over the
first ``--jobs`` value and whether every fit produced the same front.

    OMP_NUM_THREADS=1 nice -n 10 python bench/experiments/jobs_speedup.py --evals 100000 --jobs 1,2
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
import pandas as pd

from dgsr.estimator.regressor import SymbolicRegressor


def load(name: str, data: str | None) -> tuple[pd.DataFrame, np.ndarray]:
    if name == "synthetic":
        rng = np.random.default_rng(0)
        X = pd.DataFrame(rng.uniform(-2, 2, size=(2000, 5)), columns=[f"x{i}" for i in range(5)])
        return X, np.asarray(X["x0"] * np.cos(X["x1"]) + np.exp(0.3 * X["x2"]) * X["x3"] + rng.normal(0, 0.1, 2000))
    from dgsr.bench.datasets import DatasetRef, load_problem, resolve_data_dir

    prob = load_problem(DatasetRef("blackbox", name), resolve_data_dir(data))
    return prob.X, np.asarray(prob.y, dtype=float)


def _cpu() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="synthetic", help="'synthetic' or a black-box dataset name")
    p.add_argument("--data", default=None)
    p.add_argument("--evals", type=int, default=100_000)
    p.add_argument("--jobs", default="1,2")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    X, y = load(args.dataset, args.data)
    print(f"{args.dataset}: {X.shape[0]} rows x {X.shape[1]} columns, {args.evals:,} evaluations, seed {args.seed}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print("| n_jobs | wall s | speed-up | CPU s (all processes) | evaluations | best training R² | same front as first |")
    print("|---|---|---|---|---|---|---|")
    first = None
    for jobs in (int(j) for j in args.jobs.split(",")):
        wall, cpu = time.perf_counter(), _cpu()
        est = SymbolicRegressor(policy="random", max_time=None, max_evaluations=args.evals, random_state=args.seed,
                                n_jobs=jobs).fit(X, y)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        front = [(e.expression.key(), e.mse) for e in est._front]
        if first is None:
            first = (wall, front)
        print(f"| {jobs} | {wall:.1f} | {first[0] / wall:.2f} | {cpu:.1f} | {est.n_evaluations_:,.0f} | "
              f"{est.equations_['r2'].max():.4f} | {'yes' if front == first[1] else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
