"""`python bench/experiments/inner_constants.py [--evals 20000] [--seeds 0,1] [--steps 0,5,10] [--policies random,semantic] [--methods dgsr,operon-strong --time 10]`: laws with constants inside nonlinear parts, searched with and without inner-constant fits.

Each law is sampled on 300 training rows and 300 fresh test rows (uniform inputs, no noise).

Search mode (the default): :func:`dgsr.search.run_search` with the given policy and
``inner_fit_steps``, at equal evaluations (or ``--time``); the figures are the most accurate
front expression's test R², whether it recovers the law (test R² above 1 - 1e-9), and the
evaluations and seconds spent.

Method mode (``--methods``): each named ``dgsr bench`` method (``dgsr`` = the estimator's
defaults, ``dgsr-noparam-inner0`` = 0.2's, ``operon-strong`` = CONTRACTS §3's Operon) fits the law
as the benchmark runs it, at ``--time`` seconds, with its own model selection; the figures are
the selected model's test R² and size. One thread; prints a Markdown table either way.

    python bench/experiments/inner_constants.py --evals 20000 --steps 0,3,8 --seeds 0,1,2 --policies semantic,semantic+param
    python bench/experiments/inner_constants.py --methods dgsr-noparam-inner0,dgsr,operon-strong --time 10 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dgsr.bench.protocol import expression_r2
from dgsr.core.budget import Budget
from dgsr.estimator.policy_loading import load_policy
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


def run_method(name: str, method: str, seconds: float, seed: int) -> dict:
    """One ``dgsr bench`` method on law ``name`` at ``seconds``: its selected model's test R² and size."""
    import pandas as pd

    from dgsr.bench.methods import RunBudget, get_method, limit_threads
    from dgsr.bench.protocol import Split, model_size, r2_score

    limit_threads()
    X, y = sample(name, 300, seed)
    X_test, y_test = sample(name, 300, seed + 1000)
    columns = [f"x{i}" for i in range(X.shape[1])]
    split = Split(pd.DataFrame(X, columns=columns), y, pd.DataFrame(X_test, columns=columns), y_test)
    start = time.perf_counter()
    result = get_method(method).fn(split, RunBudget(time=seconds, evaluations=None, seed=seed))
    elapsed = time.perf_counter() - start
    test_r2 = r2_score(y_test, result.predictions)
    size = model_size(result.model) if result.model is not None else -1
    return {"law": name, "method": method, "seed": seed, "test_r2": test_r2, "recovered": test_r2 > 1 - 1e-9,
            "seconds": elapsed, "size": size}


def main_methods(args: argparse.Namespace) -> int:
    print("| law | method | seconds allowed | seed | test R² | recovered | size |")
    print("|---|---|---|---|---|---|---|")
    for name in args.laws.split(","):
        for seed in map(int, args.seeds.split(",")):
            for method in args.methods.split(","):  # adjacent in time: alike under the machine's load
                r = run_method(name, method, args.time, seed)
                print(f"| {r['law']} | {r['method']} | {args.time:g} | {r['seed']} | {r['test_r2']:.6f} | "
                      f"{'yes' if r['recovered'] else 'no'} | {r['size']} |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=float, default=20_000)
    parser.add_argument("--time", type=float, default=None, help="seconds per search (equal time)")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--steps", default="0,5")
    parser.add_argument("--policies", default="random,semantic")
    parser.add_argument("--laws", default=",".join(LAWS))
    parser.add_argument("--methods", default=None, help="dgsr bench method names (method mode; needs --time)")
    args = parser.parse_args(argv)
    if args.methods is not None:
        if args.time is None:
            parser.error("--methods needs --time")
        return main_methods(args)
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
