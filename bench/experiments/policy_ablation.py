"""`python bench/experiments/policy_ablation.py [--weights PATH] [--domain in|out|feynman] [--problems 20]`: ablation: MCTS with the neural or semantic policy vs. the random policy, at equal evaluations or time.

    python bench/experiments/policy_ablation.py [--weights PATH] [--domain in|out|feynman] [--problems 20]
        [--evals 3000 | --time 10] [--seed 0] [--threads 1] [--policies neural,semantic,random]

Held-out synthetic problems (``dgsr.training.corpus.load_heldout``) or Feynman problems (200 regenerated
rows): the first 150 of each problem's 200 rows are the search data, the last 50 the test rows. A problem counts as solved when the
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

from dgsr.bench.protocol import expression_r2
from dgsr.core.budget import Budget
from dgsr.policies.mixture import MixturePolicy
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.policy import Proposal
from dgsr.training.corpus import load_heldout


class FlatPriors:
    """A policy whose proposals keep their mutations but share the prior equally: tests whether the
    network's sequence probabilities help the search choose among its own K samples."""

    def __init__(self, inner):
        self.inner = inner
        self.has_critic = inner.has_critic
        self.max_variables = inner.max_variables

    def prepare(self, X, y, rng):
        return self.inner.prepare(X, y, rng)

    def propose(self, context, expression, k, rng):
        proposals = self.inner.propose(context, expression, k, rng)
        return [Proposal(p.mutation, 1.0 / len(proposals)) for p in proposals]

    def value(self, context, expressions):
        return self.inner.value(context, expressions)


def run_one(policy, X, y, X_test, y_test, *, evals: float | None, seconds: float | None, seed: int) -> dict:
    budget = Budget(max_evaluations=evals, max_time=seconds, target_r2=0.99)
    t = time.perf_counter()
    result = run_search(X, y, policy, config=SearchConfig(n_samples=16), rng=seed, budget=budget)
    elapsed = time.perf_counter() - t
    best = max(result.archive.front(), key=lambda e: e.r2, default=None)
    test_r2 = expression_r2(best.expression, X_test, y_test) if best is not None else -np.inf
    return {"train_r2": best.r2 if best else -np.inf, "test_r2": float(test_r2), "solved": bool(test_r2 >= 0.99),
            "evaluations": result.n_evaluations, "seconds": elapsed, "size": best.size if best else 0}


def _problems(domain: str, offset: int, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, int | None]]:
    """(X, y, ground-truth size) of 200 rows each: 150 to search, 50 to test."""
    if domain == "feynman":
        from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir

        data = resolve_data_dir(None)
        refs = list_datasets("feynman", data)[offset: offset + count]
        out = []
        for ref in refs:
            prob = load_problem(ref, data, seed=seed)  # rows are i.i.d. draws: the first 200 are a sample
            out.append((np.asarray(prob.X[:200], dtype=float), np.asarray(prob.y[:200], dtype=float), None))
        return out
    return [(np.asarray(item.X), np.asarray(item.y), item.expression.size)
            for item in load_heldout(domain)[offset: offset + count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", default=None, help="neural policy weights (default: the shipped ones)")
    parser.add_argument("--domain", choices=("in", "out", "feynman"), default="in",
                        help="held-out synthetic in/out of domain, or Feynman (regenerated rows, file order)")
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--evals", type=float, default=None)
    parser.add_argument("--time", type=float, default=None, help="seconds per run (equal wall time)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--policies", default="neural,random",
                        help="comma list of: neural (critic values), neural-acc (accuracy values), "
                             "neural-flat (neural-acc with equal priors), semantic, random, "
                             "rerank-semantic / rerank-random (the network re-ranks 64 candidates of that policy), "
                             "mix-semantic / mix-random (half of each expansion's K from neural-acc, half from that policy)")
    parser.add_argument("--offset", type=int, default=0, help="skip this many held-out problems")
    parser.add_argument("--temperature", default=None,
                        help="neural decoding temperature: a number or LOW,HIGH drawn per trial (default: the policy's)")
    args = parser.parse_args(argv)
    if (args.evals is None) == (args.time is None):
        parser.error("give exactly one of --evals and --time")
    names = args.policies.split(",")
    neural_arms = [n for n in names if n.startswith(("neural", "rerank", "mix"))]
    if neural_arms:  # torch only when a neural policy runs
        import torch

        from dgsr.neural.policy import DEFAULT_WEIGHTS, NeuralPolicy, RerankPolicy

        torch.set_num_threads(args.threads)
        weights = args.weights or str(DEFAULT_WEIGHTS)
        decoding = {}
        if args.temperature is not None:
            low, _, high = args.temperature.partition(",")
            decoding["temperature"] = (float(low), float(high)) if high else float(low)

    def neural(**kw):  # the network with this run's weights and decoding settings
        return NeuralPolicy.from_checkpoint(weights, **decoding, **kw)

    makers = {"neural": neural,
              "neural-acc": lambda: neural(use_critic=False),
              "neural-flat": lambda: FlatPriors(neural(use_critic=False)),
              "semantic": SemanticPolicy,
              "random": RandomPolicy,
              "rerank-semantic": lambda: RerankPolicy(neural(), SemanticPolicy(), 64),
              "rerank-random": lambda: RerankPolicy(neural(), RandomPolicy(), 64),
              "mix-semantic": lambda: MixturePolicy([SemanticPolicy(), neural(use_critic=False)], [0.5, 0.5]),
              "mix-random": lambda: MixturePolicy([RandomPolicy(), neural(use_critic=False)], [0.5, 0.5])}
    policies = {name: makers[name]() for name in names}
    problems = _problems(args.domain, args.offset, args.problems, args.seed)
    rows: dict[str, list[dict]] = {name: [] for name in policies}
    for i, (X, y, truth_size) in enumerate(problems):
        for name, policy in policies.items():
            r = run_one(policy, X[:150], y[:150], X[150:], y[150:], evals=args.evals, seconds=args.time,
                        seed=args.seed)
            rows[name].append(r)
            print(json.dumps({"problem": args.offset + i, "policy": name, "truth_size": truth_size, **r}), file=sys.stderr)
    budget = f"{args.evals:.0f} evaluations" if args.evals else f"{args.time:g} s"
    print(f"domain {args.domain}, {len(problems)} problems, {budget} per run, seed {args.seed}, "
          f"{args.threads} thread(s)" + (f", weights {weights}" if neural_arms else ""))
    print("| policy | solved (test R² >= 0.99) | train R² >= 0.99 | median train R² | median test R² | "
          "wins vs random (train R²) | mean evaluations | mean seconds |")
    print("|---|---|---|---|---|---|---|---|")
    baseline = rows.get("random")
    for name, rs in rows.items():
        solved = sum(r["solved"] for r in rs)
        fitted = sum(r["train_r2"] >= 0.99 for r in rs)
        wins = (f"{sum(a['train_r2'] > b['train_r2'] for a, b in zip(rs, baseline))}/{len(rs)}"
                if baseline is not None and name != "random" else "-")
        print(f"| {name} | {solved}/{len(rs)} ({100 * solved / max(len(rs), 1):.0f}%) | {fitted}/{len(rs)} | "
              f"{np.median([r['train_r2'] for r in rs]):.4f} | {np.median([r['test_r2'] for r in rs]):.4f} | "
              f"{wins} | {np.mean([r['evaluations'] for r in rs]):.0f} | "
              f"{np.mean([r['seconds'] for r in rs]):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
