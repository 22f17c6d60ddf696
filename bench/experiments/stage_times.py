"""`python bench/experiments/stage_times.py [--suite blackbox] [--dataset 612_fri_c1_1000_5] [--evals 30000]`: where a search's time goes, per stage.

Runs ``SymbolicRegressor.fit`` at a fixed number of evaluations (no time limit, so the work is
the same in every run and in every version that gives the same fronts) on one set of a suite
(CONTRACTS §3 rows, the training share; black-box by default), after a short fit that loads the compiled kernels, and
times the search's stages by wrapping their functions with ``perf_counter`` (unprofiled: the
wrappers cost about a microsecond a call). Prints each stage's seconds, calls and microseconds
per call; the search's children are the ``score_child`` calls. Compare two trees by running
this script from each, alternating, on an otherwise idle core:

    PYTHONPATH=<tree>/src python bench/experiments/stage_times.py --evals 30000
"""

from __future__ import annotations

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import argparse
import functools
import importlib
import time
from collections import Counter

import numpy as np

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir

# (module, attribute path, label): the stages, looked up where their callers find them.
STAGES = [
    ("dgsr.search.parallel", "run_search", "search"),
    ("dgsr.search.evaluator", "Evaluator.score_child", "child valuation (inner fit + scoring)"),
    ("dgsr.policies.semantic.policy", "SemanticPolicy.propose", "proposals"),
    ("dgsr.policies.semantic.policy", "SemanticPolicy._ranked", "  ranking"),
    ("dgsr.policies.semantic.policy", "match_operands", "    operand matching"),
    ("dgsr.policies.semantic.policy", "SemanticPolicy._operand_candidates", "    candidate list"),
    ("dgsr.policies.semantic.policy", "position_rows", "    per-position rows"),
    ("dgsr.policies.semantic.policy", "clean_weights", "    target weights"),
    ("dgsr.policies.semantic.policy", "target_monomials", "    power laws per expansion"),
    ("dgsr.policies.semantic.policy", "SemanticPolicy._add", "  building a proposal"),
    ("dgsr.policies.semantic.policy", "RandomPolicy.propose", "  random share"),
    ("dgsr.policies.semantic.policy", "SemanticPolicy.prepare", "policy prepare (per trial)"),
    ("dgsr.search.tree", "Trial._select", "tree selection"),
]


def _wrap(times: Counter, calls: Counter, module: str, path: str, label: str) -> None:
    owner = importlib.import_module(module)
    *parents, name = path.split(".")
    for part in parents:
        owner = getattr(owner, part)
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            times[label] += time.perf_counter() - start
            calls[label] += 1

    setattr(owner, name, timed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="blackbox", help="blackbox, feynman, strogatz or classic")
    p.add_argument("--dataset", default="612_fri_c1_1000_5")
    p.add_argument("--evals", type=int, default=30000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    data = resolve_data_dir(None)
    ref = next(r for r in list_datasets(args.suite, data) if r.name == args.dataset)
    problem = load_problem(ref, data, seed=args.seed)
    X, y = np.asarray(problem.X, dtype=float), np.asarray(problem.y, dtype=float)
    n = int(0.75 * len(y))
    X, y = X[:n], y[:n]
    SymbolicRegressor(max_evaluations=300, max_time=None, random_state=args.seed, verbose=False).fit(X, y)
    times: Counter = Counter()
    calls: Counter = Counter()
    for stage in STAGES:
        _wrap(times, calls, *stage)
    est = SymbolicRegressor(max_evaluations=args.evals, max_time=None, random_state=args.seed, verbose=False)
    est.fit(X, y)
    children = calls["child valuation (inner fit + scoring)"]
    print(f"{args.dataset}: {n} rows, {est.n_evaluations_:,.0f} evaluations, {children:,} children; "
          f"selected {est.expression_}")
    print("| stage | seconds | calls | us per call | us per child |")
    print("|---|---|---|---|---|")
    for _, _, label in STAGES:
        if calls[label]:
            print(f"| {label} | {times[label]:.3f} | {calls[label]:,} | {1e6 * times[label] / calls[label]:.1f} "
                  f"| {1e6 * times[label] / max(children, 1):.1f} |")


if __name__ == "__main__":
    main()
