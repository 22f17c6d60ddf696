"""`python bench/experiments/online_family.py`: does online learning help across a family of related datasets?

A family is one law shape with other constants per dataset (drawn from a seed), e.g. a damped
oscillation ``a*exp(-b*t)*cos(w*t)*x``, which the default search does not solve in 4,000
evaluations. The datasets are searched in turn, at an equal evaluation budget each (so the load
of the machine does not matter), by one learned-prior policy, twice: frozen (the shipped weights
throughout) and online (the weights updated after every trial and carried from dataset to
dataset, as ``dgsr search --policy learned`` does). It prints, per arm and seed: the datasets
whose selected formula reaches R² >= 0.999 on fresh rows; on the later half of the datasets,
where adaptation could pay, the mean evaluations until the training R² reached 0.999 and the
mean test accuracy in decades, ``-log10(1 - R²)``; and the median size.

    python bench/experiments/online_family.py --family damped --datasets 12 --evaluations 4000 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.evaluate import evaluate
from dgsr.core.pareto import select
from dgsr.policies.learned.policy import LearnedPriorPolicy
from dgsr.policies.learned.weights import load_weights
from dgsr.runtime.threads import pin_process_threads
from dgsr.search.mcts import SearchConfig, run_search


def _sigmoid(rng, X):
    a, b, c = rng.uniform(1, 5), rng.uniform(0.5, 2.0), rng.uniform(2, 6)
    return a / (1 + np.exp(-b * (X[:, 0] - c)))


def _saturation(rng, X):
    a, b = rng.uniform(1, 5), rng.uniform(0.2, 1.5)
    return a * (1 - np.exp(-b * X[:, 0])) * X[:, 1]


def _power(rng, X):
    a, p = rng.uniform(0.5, 3), rng.choice([-1.3, -0.7, 0.35, 0.65, 1.4, 2.5])
    return a * X[:, 0] ** p * X[:, 1]


def _morse(rng, X):
    a, b, c = rng.uniform(1, 4), rng.uniform(0.5, 2.0), rng.uniform(0.8, 1.5)
    return a * (1 - np.exp(-b * (X[:, 0] - c))) ** 2 + X[:, 1]


def _damped(rng, X):
    a, b, w = rng.uniform(1, 3), rng.uniform(0.1, 0.5), rng.uniform(1.0, 3.0)
    return a * np.exp(-b * X[:, 0]) * np.cos(w * X[:, 0]) * X[:, 1]


def _lennard_jones(rng, X):
    a, b = rng.uniform(0.5, 2), rng.uniform(0.5, 2)
    return a / X[:, 0] ** 12 - b / X[:, 0] ** 6 + X[:, 1]


FAMILIES = {"sigmoid": (_sigmoid, (0.0, 8.0)), "saturation": (_saturation, (0.1, 6.0)), "power": (_power, (0.5, 4.0)),
            "morse": (_morse, (0.5, 4.0)), "damped": (_damped, (0.0, 8.0)), "lennard_jones": (_lennard_jones, (0.9, 2.0))}


def family(name: str, n: int, seed: int, rows: int = 300) -> list[tuple[np.ndarray, ...]]:
    """``n`` datasets of the family: (X, y) to search and (X, y) of fresh rows to test on."""
    law, (low, high) = FAMILIES[name]
    out = []
    for i in range(n):
        rng = np.random.default_rng([seed, 7, i])
        X = rng.uniform(low, high, size=(2 * rows, 2))
        y = law(rng, X)
        out.append((X[:rows], y[:rows], X[rows:], y[rows:]))
    return out


def run_arm(datasets, online: bool, evaluations: int, seed: int) -> list[dict]:
    policy = LearnedPriorPolicy(load_weights(), online=online)
    results = []
    for i, (X, y, X_test, y_test) in enumerate(datasets):
        result = run_search(X, y, policy, config=SearchConfig(), rng=seed * 1000 + i,
                            budget=Budget(max_evaluations=evaluations))
        front = result.archive.front()
        chosen = front[select(front)]
        pred = evaluate(chosen.expression, X_test)
        r2 = 1 - float(np.mean((y_test - pred) ** 2)) / float(np.var(y_test)) if np.all(np.isfinite(pred)) else -np.inf
        first = next((h["evaluations"] for h in result.history if h["best_r2"] >= 0.999), evaluations)
        results.append({"r2": r2, "size": chosen.size, "to_solve": first, "updates": policy.updates})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="damped")
    parser.add_argument("--datasets", type=int, default=12)
    parser.add_argument("--evaluations", type=int, default=4000)
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    pin_process_threads(1)
    for arm in ("frozen", "online"):
        solved, evals, sizes, decades = [], [], [], []
        for seed in (int(s) for s in args.seeds.split(",")):
            rows = run_arm(family(args.family, args.datasets, seed), arm == "online", args.evaluations, seed)
            later = rows[args.datasets // 2:]  # where adaptation could have paid
            solved.append(sum(r["r2"] >= 0.999 for r in rows))
            evals.append(statistics.mean(r["to_solve"] for r in later))
            decades.append(statistics.mean(-np.log10(max(1 - r["r2"], 1e-12)) for r in later))
            sizes += [r["size"] for r in rows]
        print(f"{arm:>6}: test R2 >= 0.999 on {solved} of {args.datasets} per seed; on the later half, "
              f"evaluations to a training R2 of 0.999 {[round(e) for e in evals]} and test accuracy "
              f"-log10(1 - R2) {[round(float(d), 2) for d in decades]}; median size {statistics.median(sizes)}")


if __name__ == "__main__":
    main()
