"""Ablation: MCTS with the neural policy vs. the random policy, at equal evaluations or equal time.

    python bench/policy_ablation.py [--weights PATH] [--domain in|out] [--problems 20]
        [--evals 3000 | --time 10] [--seed 0] [--threads 1]

Held-out synthetic problems (``dgsr.corpus.load_heldout``): the first 150 of each problem's 200
rows are the search data, the last 50 the test rows. A problem counts as solved when the
search's most accurate expression reaches R² >= 0.99 on the test rows (the search stops early at
training R² 0.99). Both policies get the same search settings, seed and budget; one thread.
Prints a Markdown table and a JSON line per problem on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from dgsr.budget import Budget
from dgsr.corpus import load_heldout
from dgsr.evaluate import evaluate, r2_score
from dgsr.neural_policy import DEFAULT_WEIGHTS, NeuralPolicy
from dgsr.random_policy import RandomPolicy
from dgsr.search import SearchConfig, run_search


def run_one(policy, X, y, X_test, y_test, *, evals: float | None, seconds: float | None, seed: int) -> dict:
    budget = Budget(max_evaluations=evals, max_time=seconds, target_r2=0.99)
    t = time.perf_counter()
    result = run_search(X, y, policy, config=SearchConfig(n_samples=16), rng=seed, budget=budget)
    elapsed = time.perf_counter() - t
    best = max(result.archive.front(), key=lambda e: e.r2, default=None)
    test_r2 = -np.inf
    if best is not None:
        pred = evaluate(best.expression, X_test)
        test_r2 = r2_score(y_test, pred) if np.all(np.isfinite(pred)) else -np.inf
    return {"train_r2": best.r2 if best else -np.inf, "test_r2": float(test_r2), "solved": bool(test_r2 >= 0.99),
            "evaluations": result.n_evaluations, "seconds": elapsed, "size": best.size if best else 0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", default=str(DEFAULT_WEIGHTS))
    parser.add_argument("--domain", choices=("in", "out"), default="in")
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--evals", type=float, default=None)
    parser.add_argument("--time", type=float, default=None, help="seconds per run (equal wall time)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if (args.evals is None) == (args.time is None):
        parser.error("give exactly one of --evals and --time")
    torch.set_num_threads(args.threads)
    policies = {"neural": NeuralPolicy.from_checkpoint(args.weights), "random": RandomPolicy()}
    problems = load_heldout(args.domain)[: args.problems]
    rows: dict[str, list[dict]] = {name: [] for name in policies}
    for i, item in enumerate(problems):
        X, y = np.asarray(item.X), np.asarray(item.y)
        for name, policy in policies.items():
            r = run_one(policy, X[:150], y[:150], X[150:], y[150:], evals=args.evals, seconds=args.time,
                        seed=args.seed)
            rows[name].append(r)
            print(json.dumps({"problem": i, "policy": name, "truth_size": item.expression.size, **r}), file=sys.stderr)
    budget = f"{args.evals:.0f} evaluations" if args.evals else f"{args.time:g} s"
    print(f"domain {args.domain}, {len(problems)} problems, {budget} per run, seed {args.seed}, "
          f"{args.threads} thread(s), weights {args.weights}")
    print("| policy | solved (test R² >= 0.99) | train R² >= 0.99 | median train R² | median test R² | "
          "wins on train R² | mean evaluations | mean seconds |")
    print("|---|---|---|---|---|---|---|---|")
    other = dict(zip(rows, reversed(list(rows))))
    for name, rs in rows.items():
        solved = sum(r["solved"] for r in rs)
        fitted = sum(r["train_r2"] >= 0.99 for r in rs)
        wins = sum(a["train_r2"] > b["train_r2"] for a, b in zip(rs, rows[other[name]]))
        print(f"| {name} | {solved}/{len(rs)} ({100 * solved / max(len(rs), 1):.0f}%) | {fitted}/{len(rs)} | "
              f"{np.median([r['train_r2'] for r in rs]):.4f} | {np.median([r['test_r2'] for r in rs]):.4f} | "
              f"{wins}/{len(rs)} | {np.mean([r['evaluations'] for r in rs]):.0f} | "
              f"{np.mean([r['seconds'] for r in rs]):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
