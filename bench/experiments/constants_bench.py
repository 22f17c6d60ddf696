"""`python bench/experiments/constants_bench.py [--n 80] [--seed 0]`: constant fitting benchmark: BFGS vs Levenberg-Marquardt vs BFGS + linear scaling.

A fixed, seeded set of random expressions (1-5 constants, true constants from N(0, 1), 1,000 rows
from U(-2, 2)) is fitted from two kinds of starting constants: the true ones perturbed by 30%
relative noise, and all ones. Reported per method: mean final R² (clipped at 0, so one diverged
fit does not dominate), the fraction reaching R² >= 0.99, mean seconds and evaluations per fit,
and R² >= 0.99 fits per second of fitting ("accuracy per second").

    python bench/experiments/constants_bench.py [--n 80] [--seed 0]

One thread (CONTRACTS §2): the thread variables are set before numpy loads.
"""

from __future__ import annotations

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import all_finite, as_columns, evaluate_columns, r2_score
from dgsr.core.expression import Expression
from dgsr.core.linear_terms import linear_scaling, scale_expression
from dgsr.core.operators import BINARY, TRANSCENDENTAL, UNARY

_SAFE_UNARY = tuple(u for u in UNARY if u not in TRANSCENDENTAL)


def random_expression(rng: np.random.Generator, size: int, n_features: int, *,
                      p_constant: float = 0.3, p_unary: float = 0.3,
                      inside_transcendental: bool = False) -> Expression:
    """A random expression of exactly ``size`` nodes obeying the nesting rule (CONTRACTS §1)."""
    if size == 1:
        if rng.random() < p_constant:
            return Expression.constant(float(rng.normal()))
        return Expression.variable(int(rng.integers(n_features)))
    if size == 2 or rng.random() < p_unary:
        op = str(rng.choice(_SAFE_UNARY if inside_transcendental else UNARY))
        child = random_expression(rng, size - 1, n_features, p_constant=p_constant, p_unary=p_unary,
                                  inside_transcendental=inside_transcendental or op in TRANSCENDENTAL)
        return Expression.combine(op, child)
    left = int(rng.integers(1, size - 1))
    kids = [random_expression(rng, s, n_features, p_constant=p_constant, p_unary=p_unary,
                              inside_transcendental=inside_transcendental)
            for s in (left, size - 1 - left)]
    return Expression.combine(str(rng.choice(BINARY)), *kids)


@dataclass(frozen=True)
class Problem:
    truth: Expression
    columns: np.ndarray  # [n_features, n_rows]
    y: np.ndarray


def make_problems(n: int, seed: int, n_rows: int = 1000) -> list[Problem]:
    """``n`` problems with 1-5 constants whose targets are finite and not constant."""
    rng = np.random.default_rng(seed)
    problems: list[Problem] = []
    want = int(rng.integers(1, 6))  # constants uniform in 1..5, not skewed towards few
    while len(problems) < n:
        n_features = int(rng.integers(1, 4))
        expr = random_expression(rng, int(rng.integers(4, 20)), n_features, p_constant=0.4)
        if expr.n_constants != want:
            continue
        expr = expr.with_constants(rng.normal(size=expr.n_constants))
        columns = as_columns(rng.uniform(-2, 2, size=(n_rows, n_features)))
        y = evaluate_columns(expr, columns)
        if not all_finite(y) or np.max(np.abs(y)) > 1e4 or np.std(y) < 1e-3:
            continue
        want = int(rng.integers(1, 6))
        problems.append(Problem(expr, columns, y))
    return problems


def run_method(name: str, start: Expression, problem: Problem, rng: np.random.Generator
               ) -> tuple[float, float, float]:
    """(R² on all rows, seconds, evaluations) of one fit."""
    y = problem.y
    t0 = time.perf_counter()
    if name == "none":
        r2 = r2_score(y, evaluate_columns(start, problem.columns))
        return r2, time.perf_counter() - t0, 1.0
    if name in ("bfgs", "lm"):
        fit = fit_constants(start, problem.columns, y, method=name, rng=rng)
        return fit.r2, fit.seconds, fit.evaluations
    if name == "bfgs+ls":  # fit, then a*f + b in closed form on all rows (one more evaluation)
        fit = fit_constants(start, problem.columns, y, method="bfgs", rng=rng)
        values = evaluate_columns(fit.expression, problem.columns)
        a, b = linear_scaling(values, y)
        r2 = max(fit.r2, r2_score(y, a * values + b))
        return r2, time.perf_counter() - t0, fit.evaluations + 1.0
    if name == "ls+bfgs":  # a*f + b first, then BFGS on all constants including a and b
        values = evaluate_columns(start, problem.columns)
        a, b = linear_scaling(values, y)
        fit = fit_constants(scale_expression(start, a, b), problem.columns, y, method="bfgs", rng=rng)
        return fit.r2, time.perf_counter() - t0, fit.evaluations + 1.0
    raise ValueError(name)


METHODS = ("none", "bfgs", "lm", "bfgs+ls", "ls+bfgs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=80, help="number of random expressions")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    problems = make_problems(args.n, args.seed)
    start_rng = np.random.default_rng(args.seed + 1)
    starts = {
        "perturbed": [p.truth.with_constants(np.asarray(p.truth.constants)
                                             * (1 + 0.3 * start_rng.normal(size=p.truth.n_constants)))
                      for p in problems],
        "ones": [p.truth.with_constants(np.ones(p.truth.n_constants)) for p in problems],
    }
    n_const = [p.truth.n_constants for p in problems]
    print(f"{len(problems)} expressions, sizes {min(p.truth.size for p in problems)}-"
          f"{max(p.truth.size for p in problems)}, constants {min(n_const)}-{max(n_const)} "
          f"(mean {np.mean(n_const):.1f}), 1000 rows, batch 256, time cap 1 s")
    print("| start | method | mean R² (clipped at 0) | median R² | R² >= 0.99 | mean ms / fit "
          "| mean evaluations / fit | R² >= 0.99 fits / s |")
    print("|---|---|---|---|---|---|---|---|")
    for start_name, start_exprs in starts.items():
        for method in METHODS:
            rng = np.random.default_rng(args.seed + 2)
            rows = [run_method(method, s, p, rng) for s, p in zip(start_exprs, problems)]
            r2 = np.array([r for r, _, _ in rows])
            seconds = np.array([s for _, s, _ in rows])
            evals = np.array([e for _, _, e in rows])
            solved = r2 >= 0.99
            clipped = np.where(np.isfinite(r2), np.clip(r2, 0.0, None), 0.0)
            per_s = solved.sum() / seconds.sum() if seconds.sum() > 0 else math.inf
            print(f"| {start_name} | {method} | {clipped.mean():.4f} | {np.median(r2):.4f} | "
                  f"{solved.mean():.3f} | {1e3 * seconds.mean():.2f} | {evals.mean():.2f} | {per_s:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
