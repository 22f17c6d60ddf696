"""`python bench/experiments/profile_fit.py --method dgsr --time 10 --problems 5 [--suite blackbox --match fri_c]`: where a 10 s fit spends its time: proposal, evaluation, inner and outer constant fitting, archive, bookkeeping.

Runs ``SymbolicRegressor.fit`` of a bench method (``dgsr`` is the estimator's defaults; a variant
name such as ``dgsr-noparam-inner0`` changes them as ``dgsr bench`` does) under cProfile on a few
problems of a suite (Feynman by default; CONTRACTS §3 rows, the training share), one thread, and splits the wall time by
the functions that do each job; "bookkeeping" is the rest (selection, back-propagation, tree and
cache upkeep, final model selection). Also prints end-to-end evaluations per second of the fit
(profiling overhead included, so compare runs of this script with each other, not with
un-profiled timings).

    python bench/experiments/profile_fit.py --method dgsr --time 10 --problems 5
    python bench/experiments/profile_fit.py --method dgsr-noparam-inner0 --time 10 --problems 5
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import cProfile
import pstats
import time

import numpy as np

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.bench.methods import dgsr_options
from dgsr.policies.semantic.policy import SemanticPolicy

# (category, module path suffix, function name): cumulative time of these functions.
CATEGORIES = {
    "proposal": [("semantic/policy.py", "propose"), ("policies/random.py", "propose"),
                 ("neural/policy.py", "propose")],
    "policy prepare": [("semantic/policy.py", "prepare"), ("policies/random.py", "prepare"),
                       ("neural/policy.py", "prepare")],
    "inner constant fits": [("core/inner_fit.py", "fit_inner_constants")],
    "constant fitting (the search's best, inner fits' LM, polishing)": [("core/constants.py", "fit_constants")],
    "evaluation": [("core/evaluate.py", "evaluate_columns"), ("search/evaluator.py", "_score_prediction"),
                   ("search/evaluator.py", "_score_compiled"),
                   ("search/evaluator.py", "_score_terms"), ("core/constants.py", "additive_terms")],
    "archive": [("core/pareto.py", "add"), ("core/pareto.py", "accepts")],
}


def _is(key: tuple, suffix: str, name: str) -> bool:
    return key[0].endswith(suffix) and key[2] == name


def _exclusive(stats: pstats.Stats, suffix: str, name: str) -> float:
    """Cumulative time of the function, less what it spent in direct calls to the functions of
    other categories (an inner fit calls the constant fitter and the evaluator), so the
    categories do not overlap."""
    table = stats.stats  # type: ignore[attr-defined]
    others = [(s, f) for funcs in CATEGORIES.values() for s, f in funcs if (s, f) != (suffix, name)]
    total = 0.0
    for key, (_, _, _, cumtime, _) in table.items():
        if not _is(key, suffix, name):
            continue
        total += cumtime
        for callee, (_, _, _, _, callers) in table.items():
            if any(_is(callee, s, f) for s, f in others) and key in callers:
                total -= callers[key][3]
    return total


def estimator(method: str, seconds: float, seed: int) -> SymbolicRegressor:
    """The estimator ``dgsr bench`` runs for ``method``, limited to ``seconds``."""
    options = dgsr_options(method)
    if options is None:
        raise SystemExit(f"not a dgsr method name: {method}")
    parametric = options.pop("parametric_operands", None)
    if parametric is not None:
        options["policy"] = SemanticPolicy(parametric_operands=parametric)
    return SymbolicRegressor(max_time=seconds, random_state=seed, verbose=False, **options)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--method", default="dgsr")
    p.add_argument("--time", type=float, default=10.0)
    p.add_argument("--problems", type=int, default=5)
    p.add_argument("--skip", type=int, default=0)
    p.add_argument("--suite", default="feynman", help="feynman, blackbox or strogatz")
    p.add_argument("--match", default="", help="only datasets whose name contains this")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    data = resolve_data_dir(None)
    refs = [r for r in list_datasets(args.suite, data) if args.match in r.name][args.skip:args.skip + args.problems]
    totals = dict.fromkeys(CATEGORIES, 0.0)
    wall = evaluations = rows = 0.0
    for ref in refs:
        prob = load_problem(ref, data, seed=args.seed)
        X, y = np.asarray(prob.X, dtype=float), np.asarray(prob.y, dtype=float)
        n = int(0.75 * len(y))
        rows += min(n, 1000) / len(refs)  # the search scores on at most 1,000 rows (SearchConfig.max_rows)
        est = estimator(args.method, args.time, args.seed)
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        est.fit(X[:n], y[:n])
        profiler.disable()
        wall += time.perf_counter() - start
        stats = pstats.Stats(profiler)
        for cat, funcs in CATEGORIES.items():
            totals[cat] += sum(_exclusive(stats, s, f) for s, f in funcs)
        evaluations += est.n_evaluations_
    print(f"{args.method}, {len(refs)} {args.suite} problems ({rows:.0f} search rows on average), {args.time:g} s "
          f"each: {evaluations / wall:.0f} evaluations/s end to end (profiled)")
    print("| part | seconds | share |")
    print("|---|---|---|")
    accounted = 0.0
    for cat, seconds in totals.items():
        accounted += seconds
        print(f"| {cat} | {seconds:.1f} | {100 * seconds / wall:.0f}% |")
    print(f"| bookkeeping (the rest) | {max(wall - accounted, 0):.1f} | {100 * max(wall - accounted, 0) / wall:.0f}% |")


if __name__ == "__main__":
    main()
