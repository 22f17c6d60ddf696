"""`python bench/experiments/inner_constants.py [--evals 20000] [--seeds 0,1] [--steps 0,5,10] [--policies random,semantic]`: laws with constants inside nonlinear parts, searched with and without inner-constant fits at equal evaluations.

Each law is sampled on 300 training rows and 300 fresh test rows (uniform inputs, no noise). A
search runs :func:`dgsr.search.run_search` with the given policy and ``inner_fit_steps``; the
figures are the most accurate expression's test R², and whether it recovers the law (test R²
above 1 - 1e-9), and the evaluations and seconds spent. One thread; print a Markdown table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dgsr.bench.protocol import expression_r2
from dgsr.core.budget import Budget
from dgsr.policies import load_policy
from dgsr.search import SearchConfig, run_search

SQRT12 = np.sqrt(12.0)


def friedman1(X: np.ndarray) -> np.ndarray:
    """Friedman-1 without noise on standardised inputs (PMLB standardises the fri_c* columns)."""
    U = X / SQRT12 + 0.5  # back to the U(0, 1) inputs of the law
    return 10 * np.sin(np.pi * U[:, 0] * U[:, 1]) + 20 * (U[:, 2] - 0.5) ** 2 + 10 * U[:, 3] + 5 * U[:, 4]


#: name -> (number of inputs, input range, law)
LAWS = {
    "sin_shifted_product": (3, (-2, 2), lambda X: 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]),
    "inverse_shifted_squares": (2, (-3, 3), lambda X: 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2)),
    "damped_cosine": (2, (-2, 2), lambda X: np.exp(-0.8 * X[:, 0]) * np.cos(2.1 * X[:, 1] + 0.3)),
    "friedman1_standardised": (5, (-np.sqrt(3), np.sqrt(3)), friedman1),
}


def sample(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n_inputs, (low, high), law = LAWS[name]
    X = np.random.default_rng([seed, len(name)]).uniform(low, high, size=(n, n_inputs))
    return X, law(X)


def run(name: str, policy: str, steps: int, evals: float, seed: int, seconds: float | None) -> dict:
    X, y = sample(name, 300, seed)
    X_test, y_test = sample(name, 300, seed + 1000)
    config = SearchConfig(inner_fit_steps=steps)
    start = time.perf_counter()
    if policy == "semantic+param":
        from dgsr.policies.semantic.policy import SemanticPolicy

        searcher = SemanticPolicy(parametric_operands=True)
    else:
        searcher = load_policy(policy)
    result = run_search(X, y, searcher, config=config, rng=seed,
                        budget=Budget(max_evaluations=evals, max_time=seconds, target_r2=1 - 1e-12))
    elapsed = time.perf_counter() - start
    best = max(result.archive.front(), key=lambda e: e.r2)
    test_r2 = expression_r2(best.expression, X_test, y_test, fallback=float(np.mean(y)))
    return {"law": name, "policy": policy, "steps": steps, "seed": seed, "test_r2": test_r2,
            "recovered": test_r2 > 1 - 1e-9, "evaluations": result.n_evaluations, "seconds": elapsed,
            "size": best.size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=float, default=20_000)
    parser.add_argument("--time", type=float, default=None, help="seconds per search (equal time)")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--steps", default="0,5")
    parser.add_argument("--policies", default="random,semantic")
    parser.add_argument("--laws", default=",".join(LAWS))
    args = parser.parse_args(argv)
    evals = args.evals if args.time is None else 1e12
    print("| law | policy | steps | seed | test R² | recovered | evaluations | seconds | size |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.laws.split(","):
        for policy in args.policies.split(","):
            for steps in map(int, args.steps.split(",")):
                for seed in map(int, args.seeds.split(",")):
                    r = run(name, policy, steps, evals, seed, args.time)
                    print(f"| {r['law']} | {r['policy']} | {r['steps']} | {r['seed']} | {r['test_r2']:.6f} | "
                          f"{'yes' if r['recovered'] else 'no'} | {r['evaluations']:,.0f} | {r['seconds']:.1f} | "
                          f"{r['size']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
