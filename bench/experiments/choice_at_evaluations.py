"""`python bench/experiments/choice_at_evaluations.py 678_visualizing_environmental 140000`: the
estimator's selected formula on a black-box set at fixed evaluations.

The bench's split (seed 0, 75/25), ``SymbolicRegressor(max_time=1000, max_evaluations=N,
random_state=0)`` for each N given, and per N: the test R², whether ``fit`` warned of a pole,
and the selected formula. At fixed evaluations the search is the same from run to run, so the
choice of a timed run can be reproduced at the evaluations it reached (its ``n_evaluations``).

    PYTHONPATH=<tree>/src python bench/experiments/choice_at_evaluations.py 678_visualizing_environmental 140000
"""

from __future__ import annotations

import argparse
import warnings

from dgsr import SymbolicRegressor
from dgsr.bench.datasets import DatasetRef, load_problem, resolve_data_dir
from dgsr.bench.protocol import make_split, r2_score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("evaluations", type=int, nargs="+")
    parser.add_argument("--data", default=None, help="the benchmark data folder (default: as dgsr bench finds it)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    problem = load_problem(DatasetRef("blackbox", args.dataset), resolve_data_dir(args.data), args.seed)
    split = make_split(problem.X, problem.y, args.seed)
    for evaluations in args.evaluations:
        est = SymbolicRegressor(max_time=1000, max_evaluations=evaluations, random_state=args.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(split.X_train, split.y_train)
        pole = any("has a pole" in str(w.message) for w in caught)
        r2 = r2_score(split.y_test, est.predict(split.X_test))
        print(f"{evaluations}: test R² {r2:.3f}{'  (pole warning)' if pole else ''}  {est.sympy()}", flush=True)


if __name__ == "__main__":
    main()
