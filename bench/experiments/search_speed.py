"""`python bench/experiments/search_speed.py --evals 15000 --repeats 1`: the search's evaluations per CPU second.

Runs ``SymbolicRegressor.fit`` with ``max_evaluations`` (and no time limit that could bind) on a
few black-box sets (the first two ``fri_c`` sets and the first two others, CONTRACTS §3 rows,
the training share), one thread, and times only the first search (``run_search``, CPU time of
this process) together with the evaluations it spent (under ``model_selection="cv"`` the search
on all rows gets part of the budget), not the fold searches, the polish or the simplification.
Prints each set's best evaluations per CPU second over ``--repeats`` and their geometric mean.
``--all-searches``: every search of the fit instead (the fold searches too, each with its own
operand library), at the fit's end. Also prints the CPU time the semantic policy spent building
its operand libraries (``build_library``) within the timed searches.
Compare two versions by running it from each tree, alternating: CPU time depends far less on
the machine's load than wall time does.

    PYTHONPATH=<tree>/src python bench/experiments/search_speed.py --evals 15000 --repeats 1
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time

import numpy as np

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import is_friedman, list_datasets, load_problem, resolve_data_dir
from dgsr.policies.semantic import policy as semantic_policy
from dgsr.search import parallel


class _SearchDone(Exception):
    """Raised after the timed search, to skip the estimator's post-processing."""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--evals", type=int, default=15000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--all-searches", action="store_true", help="time every search of the fit, not the first")
    args = p.parse_args()
    data = resolve_data_dir(None)
    refs = list_datasets("blackbox", data)
    chosen = [r for r in refs if is_friedman(r.name)][:2] + [r for r in refs if not is_friedman(r.name)][:2]
    problems = []
    for ref in chosen:
        prob = load_problem(ref, data, seed=args.seed)
        X, y = np.asarray(prob.X, dtype=float), np.asarray(prob.y, dtype=float)
        n = int(0.75 * len(y))
        problems.append((ref.name, X[:n], y[:n]))

    seconds: list[tuple[float, float]] = []
    search = parallel.run_search

    def timed_search(*a, **k):
        start = time.process_time()
        result = search(*a, **k)
        seconds.append((time.process_time() - start, result.n_evaluations))
        if not args.all_searches:
            raise _SearchDone
        return result

    parallel.run_search = timed_search
    library_seconds: list[float] = []
    build_library = semantic_policy.build_library

    def timed_library(*a, **k):
        start = time.process_time()
        try:
            return build_library(*a, **k)
        finally:
            library_seconds.append(time.process_time() - start)

    semantic_policy.build_library = timed_library
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, X, y in problems:
            est = SymbolicRegressor(max_evaluations=args.evals, max_time=10 ** 6, random_state=args.seed,
                                    verbose=False)
            try:
                est.fit(X, y)
            except _SearchDone:
                pass
            sec, ev = (sum(values) for values in zip(*seconds))
            library = sum(library_seconds)
            seconds.clear()
            library_seconds.clear()
            rate = ev / sec
            best[name] = max(best.get(name, 0.0), rate)
            print(f"  {name}: {sec:.2f} s, {ev:.0f} evaluations, {rate:.0f}/s; operand libraries {library:.2f} s "
                  f"({library / sec:.0%})", flush=True)
    for name, r in best.items():
        print(f"{name}: {r:.0f} evaluations/s")
    import statistics
    print(f"geometric mean {statistics.geometric_mean(best.values()):.0f} evaluations/s")


if __name__ == "__main__":
    main()
