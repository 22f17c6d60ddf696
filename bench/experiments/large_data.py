"""Time and peak memory of one fit on 10k to 10M rows x 20 columns with a planted law
(issue 50, item 6; PySR's ``batching``). Each size runs in a fresh process, which reports its
peak resident memory (the input array included) and whether the law came back.

    python bench/experiments/large_data.py --rows 1e4,1e5,1e6,1e7 --time 60
    python bench/experiments/large_data.py --rows 1e7 --time 60 --scale 1000   # columns that need rescaling
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
from dgsr import SymbolicRegressor
n, max_time, scale = int(float(sys.argv[1])), float(sys.argv[2]), float(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.uniform(1, 3, size=(n, 20)) * scale
y = 2.5 * X[:, 0] * X[:, 1] / X[:, 2] + X[:, 3]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est = SymbolicRegressor(max_time=max_time, random_state=0).fit(X, y)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": n, "seconds": seconds, "max_time": max_time, "input_bytes": X.nbytes,
                  "peak_bytes": peak, "before_fit_bytes": before, "formula": str(est.sympy(precision=4)),
                  "r2": float(est.score(X[:100000], y[:100000]))}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e4,1e5,1e6,1e7", help="comma-separated row counts")
    parser.add_argument("--time", type=float, default=60.0, help="max_time of each fit")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply X by this (1: no rescaling needed)")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("rows | seconds (max_time) | peak memory / input | formula | R²")
    for rows in args.rows.split(","):
        out = subprocess.run([sys.executable, "-c", _CHILD, rows, str(args.time), str(args.scale)],
                             capture_output=True, text=True, env=env, check=False)
        if out.returncode != 0:
            print(f"{rows}: failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['rows']:,} | {r['seconds']:.1f} ({r['max_time']:g}) | {r['peak_bytes'] / 2**30:.2f} GiB / "
              f"{r['input_bytes'] / 2**30:.2f} GiB = {r['peak_bytes'] / r['input_bytes']:.2f}x | {r['formula']} | "
              f"{r['r2']:.6f}")


if __name__ == "__main__":
    main()
