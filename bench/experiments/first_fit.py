"""`python bench/experiments/first_fit.py --time 10 --repeats 2`: a process's first timed fit, with numba's cache cold and warm.

Each run is a fresh Python process that imports dgsr and fits one law with ``max_time`` seconds
(one thread): three processes in a row share one new ``NUMBA_CACHE_DIR``, so the first is a
user's first fit after installing (an empty cache: every kernel it reaches compiles), the second
finds what the first compiled, and the third a cache that the first two filled. Prints, per run:
the fit's wall time, the evaluations the search spent and the training R² of the selected model.
Alternate two versions by pointing ``PYTHONPATH`` at each tree:

    PYTHONPATH=<tree>/src python bench/experiments/first_fit.py --time 10 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = """
import json, time
import numpy as np
t0 = time.perf_counter()
from dgsr import SymbolicRegressor
imported = time.perf_counter() - t0
rng = np.random.default_rng(0)
X = rng.uniform(-2.0, 2.0, size=(300, 3))
y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]
t1 = time.perf_counter()
model = SymbolicRegressor(max_time={time}, random_state=0).fit(X, y)
print(json.dumps({{"import_s": imported, "fit_s": time.perf_counter() - t1,
                  "evaluations": float(model.n_evaluations_), "r2": float(model.score(X, y))}}))
"""


def run_once(seconds: float, cache_dir: str) -> dict:
    """One fresh process's first fit; its JSON line as a dict."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD.format(time=seconds)], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time", type=float, default=10.0, help="max_time of each fit (seconds)")
    parser.add_argument("--repeats", type=int, default=2, help="how many times to run the three processes")
    args = parser.parse_args(argv)
    print("| process on the cache | import (s) | fit wall (s) | evaluations | train R² |")
    print("|---|---|---|---|---|")
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            for label in ("first (empty)", "second", "third"):
                row = run_once(args.time, cache)
                print(f"| {label} | {row['import_s']:.1f} | {row['fit_s']:.1f} | {row['evaluations']:,.0f} | "
                      f"{row['r2']:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
