"""`python bench/experiments/r2_bootstrap.py [--dataset 687_sleuth_ex1605] [--time 10] [--draws 10000]`: how far a small test split decides a test R².

Fits dgsr (``max_time``, seed as the benchmark's) and LinearRegression on a black-box set's
training part (CONTRACTS §3 split), then resamples the test rows with replacement and prints
the 2.5th, 50th and 97.5th percentiles of each model's test R² and of their difference, and
the share of draws in which dgsr's test R² is below 0. On a test part of a dozen rows the
sign of a test R² near the linear model's can be noise; this says how much.

    python bench/experiments/r2_bootstrap.py --dataset 687_sleuth_ex1605 --time 10
"""

from __future__ import annotations

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import argparse
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.bench.protocol import make_split, r2_score


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="687_sleuth_ex1605")
    p.add_argument("--time", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--draws", type=int, default=10_000)
    p.add_argument("--data", default=None)
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    data = resolve_data_dir(args.data)
    ref = next(r for r in list_datasets("blackbox", data) if r.name == args.dataset)
    problem = load_problem(ref, data, seed=args.seed)
    split = make_split(problem.X, problem.y, args.seed)
    est = SymbolicRegressor(max_time=args.time, random_state=args.seed, verbose=False).fit(split.X_train, split.y_train)
    ours = est.predict(split.X_test)
    linear = LinearRegression().fit(split.X_train, split.y_train).predict(split.X_test)
    y = np.asarray(split.y_test, dtype=float)
    print(f"{args.dataset}: {len(split.y_train)} training rows, {len(y)} test rows; dgsr {est.expression_} "
          f"test R² {r2_score(y, ours):.3f}, LinearRegression {r2_score(y, linear):.3f}")
    rng = np.random.default_rng(args.seed)
    a, b = [], []
    for _ in range(args.draws):
        rows = rng.integers(0, len(y), len(y))
        if np.var(y[rows]) > 0:
            a.append(r2_score(y[rows], ours[rows]))
            b.append(r2_score(y[rows], linear[rows]))
    a, b = np.array(a), np.array(b)
    for name, v in (("dgsr", a), ("LinearRegression", b), ("difference", a - b)):
        lo, mid, hi = np.percentile(v, [2.5, 50, 97.5])
        print(f"{name}: test R² 95% interval [{lo:.2f}, {hi:.2f}], median {mid:.3f}")
    print(f"dgsr below 0 in {np.mean(a < 0):.0%} of {len(a):,} draws")


if __name__ == "__main__":
    main()
