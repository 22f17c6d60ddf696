"""Fit classic-suite laws at a fixed evaluation budget, as the benchmark splits and fits them.

    python bench/experiments/classic_laws.py --evals 20000 --laws jin_6,keijzer_11,vladislavleva_7

Each law of ``dgsr bench --suite classic`` is regenerated (seed 0), split 75/25 as the benchmark
splits it, fitted by the estimator with ``max_evaluations`` (deterministic for the seed, unlike a
time budget) and printed with its test R², wall time and selected formula. Run it from two source
trees (``PYTHONPATH=<tree>/src``) to compare versions at equal evaluations.
"""

from __future__ import annotations

import argparse
import time
import warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--evals", type=int, default=20000)
    parser.add_argument("--laws", required=True, help="comma-separated classic-suite names")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from dgsr import SymbolicRegressor
    from dgsr.bench.datasets import generate_classic
    from dgsr.bench.protocol import make_split, r2_score

    for name in args.laws.split(","):
        problem = generate_classic(name, args.seed)
        split = make_split(problem.X, problem.y, args.seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = SymbolicRegressor(max_evaluations=args.evals, max_time=None, random_state=args.seed,
                                    verbose=False).fit(split.X_train, split.y_train)
        r2 = r2_score(split.y_test, est.predict(split.X_test))
        print(f"{name:18s} {r2:.6f} {time.perf_counter() - start:6.1f}s {est.sympy()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
