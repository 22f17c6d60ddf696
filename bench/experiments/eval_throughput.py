"""`python bench/experiments/eval_throughput.py [--n 200] [--seed 0] [--method lm]`: evaluation throughput on 1,000 rows: dgsr without and with constant fitting, and pyoperon.

For random valid expressions of exactly 10, 20 and 30 nodes (finite on the data), prints
(a) ``dgsr.core.evaluate.evaluate_columns`` evaluations per second, (b) ``fit_constants`` fits per
second (with the fractional evaluations each fit counts), and (c) pyoperon's
evaluations per second on the same expressions, one ``Evaluate(dtable, tree, dataset, range)``
call per expression and all of them in one ``EvaluateTrees`` call (one thread), parsed from
an infix string with ``InfixParser`` (Operon evaluates in float32; its variables carry a weight,
so each variable leaf is one multiply more). One thread throughout (CONTRACTS §2).

    python bench/experiments/eval_throughput.py [--n 200] [--seed 0] [--method lm]
"""

from __future__ import annotations

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import argparse
import time

import numpy as np
from constants_bench import random_expression

from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import all_finite, as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, OPERATORS, arity

N_ROWS, N_FEATURES = 1000, 3


def make_expressions(rng: np.random.Generator, size: int, n: int, columns: np.ndarray) -> list[Expression]:
    out: list[Expression] = []
    while len(out) < n:
        expr = random_expression(rng, size, N_FEATURES)
        if expr.size == size and all_finite(evaluate_columns(expr, columns)):
            out.append(expr)
    return out


def _rate(fn, items, min_seconds: float) -> float:
    """Calls of ``fn`` per second over ``items``, repeated for at least ``min_seconds``."""
    calls, start = 0, time.perf_counter()
    while True:
        for item in items:
            fn(item)
        calls += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return calls / elapsed


def operon_infix(expr: Expression) -> str:
    """Fully parenthesised infix for pyoperon's ``InfixParser`` (variables ``X1..``)."""
    stack: list[str] = []
    ci = expr.n_constants
    for s in reversed(expr.symbols):
        if s == CONSTANT:
            ci -= 1
            stack.append(f"({expr.constants[ci]!r})")
        elif s not in OPERATORS:
            stack.append(f"X{int(s[1:]) + 1}")
        elif arity(s) == 1:
            a = stack.pop()
            stack.append({"sq": f"square({a})", "inv": f"(1 / {a})"}.get(s, f"{s}({a})"))
        else:
            a, b = stack.pop(), stack.pop()
            stack.append(f"({a} {OPERATORS[s].infix} {b})")
    return stack[0]


def operon_rate(exprs: list[Expression], X: np.ndarray, ours: list[np.ndarray], min_seconds: float) -> str:
    """Three table cells: per-call and batched evaluations/s, and the share of agreeing values."""
    try:
        import pyoperon as op
    except ImportError:
        return "n/a | n/a | pyoperon not installed"
    dataset = op.Dataset(np.asfortranarray(X))
    names = {v.Name: v.Hash for v in dataset.Variables}
    rows = op.Range(0, X.shape[0])
    dtable = op.DispatchTable()  # built once; the three-argument Evaluate builds one per call
    trees = [op.InfixParser.Parse(operon_infix(e), names) for e in exprs]
    # Check the translation: Operon's float32 values must match ours almost everywhere (they
    # differ on ill-conditioned rows: sin of a huge argument, float32 overflow, 1/(x - x)).
    agree = []
    for tree, values in zip(trees, ours):
        theirs = np.asarray(op.Evaluate(dtable, tree, dataset, rows), dtype=np.float64)
        with np.errstate(all="ignore"):
            agree.append(np.isclose(theirs, values, rtol=1e-3, atol=1e-3).mean())
    if np.mean(agree) < 0.95:
        raise AssertionError(f"pyoperon translation disagrees with dgsr: {np.mean(agree):.3f} of values agree")
    rate = _rate(lambda t: op.Evaluate(dtable, t, dataset, rows), trees, min_seconds)
    # All trees in one call, one thread: Operon's own loop, without per-call binding overhead.
    result = np.zeros((len(trees), X.shape[0]), dtype=np.float32)
    batched = len(trees) * _rate(lambda _: op.EvaluateTrees(trees, dataset, rows, result, 1), [None], min_seconds)
    return f"{rate:,.0f} | {batched:,.0f} | {100 * np.mean(agree):.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="expressions per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default=None, help="constant fitting method (default: library default)")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum timing per cell")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    X = rng.uniform(-2, 2, size=(N_ROWS, N_FEATURES))
    columns = as_columns(X)
    fit_kwargs = {} if args.method is None else {"method": args.method}
    print(f"{args.n} random valid expressions per size, {N_ROWS} rows, {N_FEATURES} features, one thread")
    print("| nodes | mean constants | dgsr evaluate_columns evals/s | dgsr fit_constants fits/s "
          "| evaluations / fit | pyoperon Evaluate evals/s | pyoperon EvaluateTrees evals/s "
          "| Operon values agreeing |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (10, 20, 30):
        exprs = make_expressions(rng, size, args.n, columns)
        ours = [evaluate_columns(e, columns) for e in exprs]
        # Targets from the same structure with constants perturbed by 30%, so fits do real work.
        targets = []
        for e, v in zip(exprs, ours):
            moved = evaluate_columns(e.with_constants(np.asarray(e.constants)
                                                      * (1 + 0.3 * rng.normal(size=e.n_constants))), columns)
            targets.append(moved if all_finite(moved) else v)
        eval_rate = _rate(lambda e: evaluate_columns(e, columns), exprs, args.seconds)
        fits = list(zip(exprs, targets))
        fit_rng = np.random.default_rng(args.seed + 1)
        evaluations: list[float] = []

        def fit(item: tuple[Expression, np.ndarray], fit_rng=fit_rng, evaluations=evaluations) -> None:
            result = fit_constants(item[0], columns, item[1], rng=fit_rng, **fit_kwargs)
            evaluations.append(result.evaluations)

        fit_rate = _rate(fit, fits, args.seconds)
        n_const = np.mean([e.n_constants for e in exprs])
        operon = operon_rate(exprs, X, ours, args.seconds)
        print(f"| {size} | {n_const:.1f} | {eval_rate:,.0f} | {fit_rate:,.0f} | {np.mean(evaluations):.2f} "
              f"| {operon} |", flush=True)


if __name__ == "__main__":
    main()
