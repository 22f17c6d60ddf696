"""`python bench/experiments/selection_bench.py --suite sklearn --evals 10000`: model-selection rules at equal evaluations, next to scikit-learn's LinearRegression.

Per dataset (CONTRACTS §3 split: 75/25 seeded, training rows capped at 10,000), two fits of
``SymbolicRegressor(policy=...)`` (random by default) under the same pinned ``max_evaluations`` (no time limit,
one thread):

* one on all training rows; its front is selected from by every front-only rule (``best``,
  ``balanced``, ``accuracy``, ``score``): one search, many selections;
* one with ``model_selection="validation"`` (25% of the training rows held out from the search);
  ``val-1se`` is the estimator's choice, ``val-min`` the lowest validation loss, ``val-best``
  PySR's "best" rule on validation losses (each one's constants refitted on all training rows
  the same way).

Every rule then goes through the estimator's own choice (``choose_entry``: undersampled waves and
poles masked first, on the training rows in the search's units). Figures: median (black-box, the
scikit-learn sets one by one) or mean (Feynman) test R², the share of Feynman problems with test
R² > 0.999999 (exact recovery) and the median size (nodes) of the chosen expression.

    OMP_NUM_THREADS=1 nice -n 10 python bench/experiments/selection_bench.py --suite sklearn --evals 10000
    OMP_NUM_THREADS=1 nice -n 10 python bench/experiments/selection_bench.py --suite feynman --problems 30 --evals 4000
    OMP_NUM_THREADS=1 nice -n 10 python bench/experiments/selection_bench.py --suite blackbox --evals 10000

``--jsonl FILE`` appends one line per dataset (resumable: datasets already there are skipped).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

import dgsr.estimator.display as display_module
from dgsr.bench.datasets import list_datasets, load_problem, resolve_data_dir
from dgsr.bench.protocol import make_split
from dgsr.core.evaluate import as_columns, r2_score
from dgsr.core.pareto import select
from dgsr.estimator.budget_plan import plan_budget
from dgsr.estimator.interrupts import FitLedger
from dgsr.estimator.model_selection import choose_entry
from dgsr.estimator.polish import polish
from dgsr.estimator.regressor import SymbolicRegressor

FRONT_RULES = ("best", "balanced", "accuracy", "score")
RULES = (*FRONT_RULES, "val-1se", "val-min", "val-best", "linear")


def sklearn_problems(seed: int) -> list[tuple[str, pd.DataFrame, np.ndarray]]:
    """Diabetes and Friedman 1-3 (1,000 rows; noise about a tenth of the target's variance)."""
    from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_friedman3

    out = []
    d = load_diabetes()
    out.append(("diabetes", pd.DataFrame(d.data, columns=d.feature_names), d.target.astype(float)))
    for name, maker, noise in (("friedman1", make_friedman1, 1.0), ("friedman2", make_friedman2, 125.0),
                               ("friedman3", make_friedman3, 0.1)):
        X, y = maker(n_samples=1000, noise=noise, random_state=seed)
        out.append((name, pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]), y))
    return out


def test_r2(est: SymbolicRegressor, index: int, X_test: pd.DataFrame, y_test: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(r2_score(y_test, est.predict(X_test, index=index)))


def search_units(est: SymbolicRegressor, X: pd.DataFrame) -> np.ndarray:
    """``X``'s searched columns in the search's units, where ``est._front``'s expressions live
    (what the estimator passes to ``choose_entry``)."""
    return est._scaling.scale_X(X.to_numpy(dtype=float)[:, est._feature_index])


def run_one(name: str, X: pd.DataFrame, y: np.ndarray, args: argparse.Namespace) -> dict:
    from sklearn.linear_model import LinearRegression

    split = make_split(X, y, args.seed)
    row: dict = {"dataset": name, "n_train": len(split.y_train), "n_features": X.shape[1]}
    kwargs = {"policy": args.policy, "max_time": None, "max_evaluations": args.evals, "random_state": args.seed}
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(model_selection="best", **kwargs).fit(split.X_train, split.y_train)
        X_est = search_units(est, split.X_train)
        for rule in FRONT_RULES:
            index = choose_entry(est._front, None, X_est, rule)  # as a fit with model_selection=rule picks
            row[rule] = (test_r2(est, index, split.X_test, split.y_test), est._front[index].size)
        val = SymbolicRegressor(model_selection="validation", **kwargs).fit(split.X_train, split.y_train)
        row["val-1se"] = (test_r2(val, val.best_index_, split.X_test, split.y_test), val._front[val.best_index_].size)
        for rule in ("val-min", "val-best"):
            if val.validation_loss_ is None:  # too few rows for a validation split: the estimator's fallback
                row[rule] = row["val-1se"]
                continue
            losses = [SimpleNamespace(size=e.size, mse=m) for e, m in zip(val._front, val.validation_loss_)]
            index = int(np.argmin(val.validation_loss_)) if rule == "val-min" else select(losses, "best")
            front = list(val._front)
            X_val = search_units(val, split.X_train)
            if index != val.best_index_:  # refit on all training rows, as the estimator does for its choice
                plan = plan_budget(val._fit_config(), len(split.y_train), time.perf_counter())
                refit = polish([front[index].expression], as_columns(X_val),
                               val._scaling.scale_y(split.y_train), np.random.default_rng(args.seed),
                               plan, FitLedger(evaluations=float(val.n_evaluations_)))
                if refit:
                    front[index] = refit[0]
            # The estimator keeps no per-row validation errors, so "as good" in the pole and wave
            # masks falls back to the training-loss definition here.
            index = choose_entry(front, index, X_val, "validation")
            saved, val._front = val._front, front
            row[rule] = (test_r2(val, index, split.X_test, split.y_test), front[index].size)
            val._front = saved
    lin = LinearRegression().fit(split.X_train, split.y_train)
    row["linear"] = (float(r2_score(split.y_test, lin.predict(split.X_test))), 4 * X.shape[1] + 1)
    row["cpu_seconds"] = time.process_time() - start
    return row


def summary(rows: list[dict], label: str, feynman: bool) -> str:
    lines = [f"| {label} ({len(rows)}) | " + " | ".join(RULES) + " |", "|---|" + "---|" * len(RULES)]
    r2 = {rule: [r[rule][0] if math.isfinite(r[rule][0]) else -1e9 for r in rows] for rule in RULES}
    if feynman:
        lines.append("| mean test R² (clipped at 0) | " + " | ".join(
            f"{statistics.mean(max(v, 0.0) for v in r2[rule]):.3f}" for rule in RULES) + " |")
        lines.append("| test R² > 0.999999 | " + " | ".join(
            f"{sum(v > 0.999999 for v in r2[rule]) / len(rows):.2f}" for rule in RULES) + " |")
    lines.append("| median test R² | " + " | ".join(f"{statistics.median(r2[rule]):.3f}" for rule in RULES) + " |")
    if not feynman:
        lines.append("| datasets where it beats linear | " + " | ".join(
            f"{sum(a > b for a, b in zip(r2[rule], r2['linear']))}" for rule in RULES) + " |")
    lines.append("| median size | " + " | ".join(
        f"{statistics.median(r[rule][1] for r in rows):g}" for rule in RULES) + " |")
    return "\n".join(lines)


def per_dataset(rows: list[dict]) -> str:
    lines = ["| dataset | " + " | ".join(RULES) + " |", "|---|" + "---|" * len(RULES)]
    for r in rows:
        lines.append(f"| {r['dataset']} | " + " | ".join(f"{r[rule][0]:.3f} ({r[rule][1]})" for rule in RULES) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", choices=("blackbox", "feynman", "sklearn"), required=True)
    p.add_argument("--evals", type=int, default=10_000)
    p.add_argument("--problems", type=int, default=None, help="first N problems of the suite (file order)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default="random", help="the search policy of every fit (default: random)")
    p.add_argument("--data", default=None, help="benchmark data folder (default: ../shared/data)")
    p.add_argument("--jsonl", type=Path, default=None)
    p.add_argument("--simplify-seconds", type=float, default=0.0,
                   help="SymPy simplification per fit (sizes here are node counts; 0 saves CPU)")
    args = p.parse_args()
    display_module._SIMPLIFY_TOTAL = max(args.simplify_seconds, 1e-3)

    if args.suite == "sklearn":
        problems = [(n, lambda X=X, y=y: (X, y)) for n, X, y in sklearn_problems(args.seed)]
    else:
        data = resolve_data_dir(args.data)
        refs = list_datasets(args.suite, data)[:args.problems]

        def loader(ref):
            prob = load_problem(ref, data, seed=args.seed)
            return prob.X, np.asarray(prob.y, dtype=float)

        problems = [(ref.name, lambda ref=ref: loader(ref)) for ref in refs]
    done = {}
    if args.jsonl is not None and args.jsonl.is_file():
        for line in args.jsonl.read_text().splitlines():
            row = json.loads(line)
            done[row["dataset"]] = {k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
    rows = []
    print(f"{args.suite}: {len(problems)} datasets, {args.evals:,} evaluations per fit, seed {args.seed}, "
          f"policy {args.policy}", flush=True)
    for name, load in problems:
        if name in done:
            rows.append(done[name])
            continue
        X, y = load()
        row = run_one(name, X, y, args)
        rows.append(row)
        print(f"{name}: " + ", ".join(f"{rule} {row[rule][0]:.3f}/{row[rule][1]}" for rule in RULES)
              + f" ({row['cpu_seconds']:.0f} s)", flush=True)
        if args.jsonl is not None:
            with open(args.jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    print()
    print(summary(rows, args.suite, args.suite == "feynman"))
    if args.suite == "sklearn":
        print()
        print(per_dataset(rows))
    print(f"\nCPU seconds: {sum(r['cpu_seconds'] for r in rows):.0f}")


if __name__ == "__main__":
    main()
