"""`python bench/experiments/compare_fronts.py OUT.json [--against BEFORE.json]`: same seeds, same fronts.

Fits ten fixed problems (and a few policy / n_jobs variants) at a fixed evaluation budget through
the public API only, so that it runs unchanged before and after a refactor, and writes each
front (equation, complexity, loss, R²) with a hash of the predictions. With ``--against`` it
exits 1 unless every front is identical to the earlier file's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings

import numpy as np
import pandas as pd

PROBLEMS = {
    "gravity": (3, lambda X: 6.674 * X[:, 0] * X[:, 1] / X[:, 2] ** 2),
    "pendulum": (2, lambda X: 2 * np.pi * np.sqrt(X[:, 0] / X[:, 1])),
    "poly": (2, lambda X: X[:, 0] ** 3 - 2 * X[:, 0] * X[:, 1] + 0.5),
    "sin_shift": (2, lambda X: 2.5 * np.sin(1.3 * X[:, 0]) + X[:, 1]),
    "gauss": (1, lambda X: np.exp(-X[:, 0] ** 2 / 2) / np.sqrt(2 * np.pi)),
    "ratio": (2, lambda X: X[:, 0] / (1 + X[:, 1] ** 2)),
    "log_sum": (2, lambda X: np.log(X[:, 0] + X[:, 1])),
    "kepler": (2, lambda X: np.sqrt(X[:, 0] ** 3 / X[:, 1])),
    "cos_prod": (3, lambda X: X[:, 2] * np.cos(X[:, 0] * X[:, 1])),
    "noisy_linear": (4, lambda X: 3 * X[:, 0] - X[:, 1] + 0.2 * X[:, 2] * X[:, 3]),
}
# (problem, policy, n_jobs, evaluations): every problem with the default policy, then variants.
RUNS = [(name, "semantic", 1, 4000) for name in PROBLEMS] + [
    ("gravity", "random", 1, 4000), ("poly", "random", 1, 4000), ("cos_prod", "random", 1, 4000),
    ("gravity", "neural", 1, 1000), ("ratio", "neural", 1, 1000),
    ("noisy_linear", "random", 2, 60000),
]


def problem_data(name: str, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    n_vars, law = PROBLEMS[name]
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    X = rng.uniform(0.5, 3.0, size=(200, n_vars))
    y = law(X)
    if name.startswith("noisy"):
        y = y + rng.normal(0, 0.05 * np.std(y), size=y.shape)
    return pd.DataFrame(X, columns=[f"v{i}" for i in range(n_vars)]), y


def run_one(name: str, policy: str, n_jobs: int, evaluations: int) -> dict:
    from dgsr import SymbolicRegressor

    X, y = problem_data(name)
    est = SymbolicRegressor(policy=policy, max_evaluations=evaluations, max_time=10_000, random_state=0,
                            n_jobs=n_jobs, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        prediction = np.asarray(est.predict(X), dtype=np.float64)
    front = [[str(row["equation"]), int(row["complexity"]), repr(float(row["loss"])), repr(float(row["r2"]))]
             for _, row in est.equations_.iterrows()]
    return {"key": f"{name}/{policy}/jobs{n_jobs}/{evaluations}", "front": front,
            "selected": str(est.sympy()), "predict_sha1": hashlib.sha1(prediction.tobytes()).hexdigest()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write the fronts to")
    parser.add_argument("--against", help="an earlier output; exit 1 unless every front is identical")
    args = parser.parse_args(argv)
    results = [run_one(*run) for run in RUNS]
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"wrote {len(results)} fronts to {args.out}")
    if not args.against:
        return 0
    with open(args.against) as fh:
        before = {r["key"]: r for r in json.load(fh)}
    differing = [r["key"] for r in results if before.get(r["key"]) != r]
    for key in differing:
        print(f"DIFFERENT: {key}")
    print(f"{len(results) - len(differing)}/{len(results)} fronts identical to {args.against}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
