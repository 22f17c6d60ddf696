"""`python bench/experiments/profile_fit.py --policy semantic --time 10 --problems 5`: where a fit spends its time: proposal, evaluation, constant fitting, archive, bookkeeping.

Runs ``run_search`` (what ``SymbolicRegressor.fit`` spends its budget on) under cProfile on a few
Feynman problems (CONTRACTS §3 rows, the training share) and splits the wall time by the functions
that do each job; "bookkeeping" is the rest (selection, back-propagation, tree and cache upkeep).
Also prints end-to-end evaluations per second (profiling overhead included, so compare runs of
this script with each other, not with un-profiled timings).

    python bench/experiments/profile_fit.py --policy semantic --time 10 --problems 5
    python bench/experiments/profile_fit.py --policy random --time 10 --problems 5
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np

from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.core.budget import Budget
from dgsr.policies.registry import load_policy
from dgsr.search.mcts import SearchConfig, run_search

# (category, module file suffix, function name): cumulative time of these functions.
CATEGORIES = {
    "proposal": [("semantic_policy.py", "propose"), ("random_policy.py", "propose"),
                 ("neural_policy.py", "propose")],
    "policy prepare": [("semantic_policy.py", "prepare"), ("random_policy.py", "prepare"),
                       ("neural_policy.py", "prepare")],
    "constant fitting": [("constants.py", "fit_constants")],
    "evaluation": [("evaluate.py", "evaluate_columns"), ("search.py", "_score_prediction"),
                   ("search.py", "_score_terms"), ("constants.py", "additive_terms")],
    "archive": [("pareto.py", "add"), ("pareto.py", "accepts")],
}


def _cumulative(stats: pstats.Stats, suffix: str, name: str) -> float:
    total = 0.0
    for (filename, _, func), (_, _, _, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        if filename.endswith(suffix) and func == name:
            total += cumtime
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policy", default="semantic")
    p.add_argument("--time", type=float, default=10.0)
    p.add_argument("--problems", type=int, default=5)
    p.add_argument("--skip", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    data = resolve_data_dir(None)
    refs = list_datasets("feynman", data)[args.skip:args.skip + args.problems]
    totals = dict.fromkeys(CATEGORIES, 0.0)
    wall = evaluations = 0.0
    for ref in refs:
        prob = load_problem(ref, data, seed=args.seed)
        X, y = np.asarray(prob.X, dtype=float), np.asarray(prob.y, dtype=float)
        n = int(0.75 * len(y))
        profiler = cProfile.Profile()
        profiler.enable()
        result = run_search(X[:n], y[:n], load_policy(args.policy), config=SearchConfig(), rng=args.seed,
                            budget=Budget(max_time=args.time))
        profiler.disable()
        stats = pstats.Stats(profiler)
        for cat, funcs in CATEGORIES.items():
            totals[cat] += sum(_cumulative(stats, s, f) for s, f in funcs)
        wall += result.elapsed
        evaluations += result.n_evaluations
    print(f"policy {args.policy}, {len(refs)} Feynman problems, {args.time:g} s each: "
          f"{evaluations / wall:.0f} evaluations/s (profiled)")
    print("| part | seconds | share |")
    print("|---|---|---|")
    accounted = 0.0
    for cat, seconds in totals.items():
        accounted += seconds
        print(f"| {cat} | {seconds:.1f} | {100 * seconds / wall:.0f}% |")
    print(f"| bookkeeping (the rest) | {max(wall - accounted, 0):.1f} | {100 * max(wall - accounted, 0) / wall:.0f}% |")


if __name__ == "__main__":
    main()
