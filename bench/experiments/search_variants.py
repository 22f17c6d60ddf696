"""`python bench/experiments/search_variants.py --evals 4000 --problems 20 --variants base,puct2,max`: compare search variants at equal evaluations (deterministic, machine-independent).

Each variant runs ``run_search`` with the random policy on the training rows (the first 75%) of
each problem (Feynman regenerated as CONTRACTS §3, or black-box datasets with at most 10
features) under the same evaluation budget; the figures are the share of problems whose best
training R² reaches 0.99 (and 0.999999), the median size of the smallest expression reaching 0.99
(else of the best), and the median training and test R² of the most accurate expression.

    python bench/experiments/search_variants.py --evals 4000 --problems 20 --variants base,puct2,max
    python bench/experiments/search_variants.py --suite blackbox --evals 20000 --problems 20 --variants base,noterms
    python bench/experiments/search_variants.py --evals 1e9 --time 5 --problems 20 --variants random,semantic
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.bench.protocol import expression_r2
from dgsr.core.budget import Budget
from dgsr.core.pareto import select
from dgsr.estimator.policy_loading import load_policy
from dgsr.search.mcts import SearchConfig, run_search

VARIANTS: dict[str, dict] = {
    "base": {},
    "puct2": {"p_uct": 2.0},
    "puct0.5": {"p_uct": 0.5},
    "nowiden": {"progressive_widening": 0.0},
    "noscale": {"linear_scaling": False},
    "noterms": {"linear_terms": False},
    "never": {"constant_fitting": "never"},
    "all": {"constant_fitting": "all"},
    "decay0.9": {"depth_decay": 0.9},
    "iters200": {"iterations_per_trial": 200},
    "widen2": {"progressive_widening": 2.0},
    "widen4": {"progressive_widening": 4.0},
    "k32": {"n_samples": 32},
    "k8": {"n_samples": 8},
    "semantic": {"policy": "semantic"},
    "random": {"policy": "random"},
    "explore0": {"policy": "semantic", "policy_kwargs": {"random_share": 0.0}},
    "explore50": {"policy": "semantic", "policy_kwargs": {"random_share": 0.5}},
    "nodes12": {"policy": "semantic", "policy_kwargs": {"max_nodes": 12}},
    "flat": {"policy": "semantic", "policy_kwargs": {"size_penalty": 0.0}},
}


def _variant(name: str) -> tuple[dict, object]:
    """Search settings and policy of a variant; ``a+b`` combines variants (e.g. ``semantic+all``)."""
    settings: dict = {}
    for part in name.split("+"):
        settings.update(VARIANTS[part])
    policy = settings.pop("policy", "random")
    kwargs = settings.pop("policy_kwargs", None)
    if kwargs:
        from dgsr.policies.semantic.policy import SemanticPolicy

        return settings, SemanticPolicy(**kwargs)
    return settings, policy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", choices=("feynman", "blackbox"), default="feynman")
    p.add_argument("--evals", type=float, default=4000)
    p.add_argument("--time", type=float, default=None, help="seconds per search as well (equal wall time)")
    p.add_argument("--problems", type=int, default=20)
    p.add_argument("--skip", type=int, default=0, help="start at this Feynman problem (file order)")
    p.add_argument("--variants", default="base")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--selection", default="", help="also report the test R² and size of the front expression "
                   "each of these model_selection rules picks (comma-separated, e.g. best,accuracy)")
    p.add_argument("--names", default="", help="comma-separated Feynman problem names instead of a slice")
    args = p.parse_args()
    data = resolve_data_dir(None)
    refs = list_datasets(args.suite, data)
    if args.names:
        wanted = set(args.names.split(","))
        refs = [r for r in refs if r.name in wanted]
    else:
        refs = refs[args.skip:args.skip + args.problems]
    problems = [p for p in (load_problem(ref, data, seed=args.seed) for ref in refs) if p.X.shape[1] <= 10]
    print(f"{len(problems)} {args.suite} problems from #{args.skip} (at most 10 features), "
          f"{args.evals:g} evaluations each, seed {args.seed}")
    rules = args.selection.split(",") if args.selection else []
    print("| variant | R² >= 0.99 | R² >= 0.999999 | median size | median train R² | median test R² | "
          + "".join(f"test R² ({r}) | size ({r}) | " for r in rules) + "seconds |")
    print("|---|---|---|---|---|---|" + "---|---|" * len(rules) + "---|")
    for name in args.variants.split(","):
        settings, policy_spec = _variant(name)
        config = dataclasses.replace(SearchConfig(), **settings)
        solved = exact = 0
        sizes, train_r2, test_r2 = [], [], []
        by_rule: dict[str, list[tuple[float, int]]] = {r: [] for r in rules}
        start = time.perf_counter()
        for prob in problems:
            X_all, y_all = np.asarray(prob.X, dtype=float), np.asarray(prob.y, dtype=float)
            order = (np.random.default_rng(args.seed).permutation(len(y_all)) if args.suite == "blackbox"
                     else np.arange(len(y_all)))  # PMLB files may be sorted; Feynman rows are i.i.d.
            n = int(0.75 * len(y_all))  # the training share of the protocol's split
            X, y = X_all[order[:n]], y_all[order[:n]]
            result = run_search(X, y, load_policy(policy_spec), config=config, rng=args.seed,
                                budget=Budget(max_evaluations=args.evals, max_time=args.time, target_r2=1 - 1e-9))
            best = result.best
            X_test, y_test, mean = X_all[order[n:]], y_all[order[n:]], float(np.mean(y))
            if best is not None:
                train_r2.append(best.r2)
                test_r2.append(expression_r2(best.expression, X_test, y_test, fallback=mean))
                front = result.archive.front()
                for rule in rules:
                    chosen = front[select(front, rule)]
                    by_rule[rule].append((expression_r2(chosen.expression, X_test, y_test, fallback=mean), chosen.size))
            solved += best is not None and best.r2 >= 0.99
            exact += best is not None and best.r2 >= 0.999999
            good = [e for e in result.archive.front() if e.r2 >= 0.99]
            sizes.append(good[0].size if good else (best.size if best else 0))
        n = len(problems)
        print(f"| {name} | {solved / n:.2f} | {exact / n:.2f} | {statistics.median(sizes):g} | "
              f"{statistics.median(train_r2):.3f} | {statistics.median(test_r2):.3f} | "
              + "".join(f"{statistics.median(r for r, _ in by_rule[rule]):.3f} | "
                        f"{statistics.median(s for _, s in by_rule[rule]):g} | " for rule in rules) +
              f"{time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
