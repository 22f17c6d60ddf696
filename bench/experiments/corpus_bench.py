"""`python bench/experiments/corpus_bench.py`: pre-training corpus benchmark: throughput, rejections, size distributions, cheap vs SymPy simplification.

    python bench/experiments/corpus_bench.py                 # about 3 minutes on one core
    python bench/experiments/corpus_bench.py --quick         # about 30 s (smaller samples, no SymPy)

Rates are per core: examples (or problems) per second of this process's CPU time, so that other
jobs on a shared machine do not distort them. Results are printed as Markdown.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from dgsr.runtime.threads import default_to_one_thread  # light: imports no numpy

default_to_one_thread()  # before numpy loads

import numpy as np

from dgsr.core.evaluate import evaluate
from dgsr.core.operators import OPERATORS
from dgsr.search.mutations import validity_violation
from dgsr.training.corpus import ExampleEncoder, example_stream, expression_key, heldout_keys, load_heldout
from dgsr.training.dismantle import dismantle
from dgsr.training.generator import (
    GeneratorConfig,
    acceptable_targets,
    canonicalize,
    random_tree,
    sample_inputs,
    sympy_simplify,
)

SIZES = (1, 10, math.inf)


def pct(values, qs=(10, 50, 90)) -> str:
    if not values:
        return "-"
    return " / ".join(f"{np.percentile(values, q):.0f}" for q in qs)


def n_ops(expr) -> int:
    return sum(1 for s in expr.symbols if s in OPERATORS)


def throughput(seconds: float) -> None:
    print("## Throughput (one core)\n")
    print("| mutation size | examples/s | encoded examples/s | problems/s | steps per problem |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        row = []
        for encode in (False, True):
            stream = example_stream(0, mutation_size=size)
            encode_example = ExampleEncoder()
            next(stream)
            problems, n, last = 0, 0, None
            start = time.process_time()
            while time.process_time() - start < seconds:
                for ex in islice(stream, 50):
                    if encode:
                        encode_example(ex)
                    if ex.target is not last:  # the steps of one problem come together
                        problems, last = problems + 1, ex.target
                    n += 1
            elapsed = time.process_time() - start
            row.append((n / elapsed, problems / elapsed, n / max(problems, 1)))
        (raw, problems, steps), (enc, _, _) = row
        label = "inf" if math.isinf(size) else f"{size:g}"
        print(f"| {label} | {raw:,.0f} | {enc:,.0f} | {problems:,.0f} | {steps:.1f} |")
    print()


def generator_stats(n_problems: int, seed: int) -> list:
    """Mirror of random_problem's loop, counting why draws are rejected."""
    config = GeneratorConfig()
    rng = np.random.default_rng(seed)
    reasons: collections.Counter = collections.Counter()
    accepted = []
    raw_sizes, n_vars_used, dims = [], [], []
    start = time.process_time()
    while len(accepted) < n_problems:
        d = int(rng.integers(1, config.max_variables + 1))
        X = sample_inputs(rng, 100, d)
        while True:
            tree = random_tree(rng, int(rng.integers(config.min_operators, config.max_operators + 1)), d, config)
            reasons["drawn"] += 1
            expr = canonicalize(tree)
            if expr is None:
                reasons["undefined constant part"] += 1
                continue
            if not expr.variables:
                reasons["no variable left"] += 1
                continue
            if validity_violation(expr):
                reasons["invalid"] += 1
                continue
            y = evaluate(expr, X)
            if not np.all(np.isfinite(y)):
                reasons["non-finite on inputs"] += 1
                continue
            if not acceptable_targets(y, config.max_abs_value):
                reasons["too large or constant"] += 1
                continue
            break
        accepted.append(expr)
        raw_sizes.append(tree.size)
        n_vars_used.append(len(expr.variables))
        dims.append(d)
    elapsed = time.process_time() - start
    drawn = reasons.pop("drawn")
    print(f"## Generator ({n_problems} problems, {n_problems / elapsed:,.0f} problems/s on one core)\n")
    print(f"Raw trees drawn per accepted problem: {drawn / n_problems:.2f}. Rejections (share of draws):\n")
    for why, count in reasons.most_common():
        print(f"- {why}: {count / drawn:.1%}")
    sizes = [e.size for e in accepted]
    print(f"\nSize (nodes) p10/p50/p90: raw tree {pct(raw_sizes)}, after canonicalisation {pct(sizes)}; "
          f"mean {np.mean(raw_sizes):.1f} -> {np.mean(sizes):.1f}; max {max(sizes)}.")
    print(f"Operators p10/p50/p90: {pct([n_ops(e) for e in accepted])}.")
    print(f"Variables used / D: mean {np.mean(n_vars_used):.2f} of {np.mean(dims):.2f}.")
    print(f"Constants per expression: mean {np.mean([e.n_constants for e in accepted]):.2f}.")
    hist = np.histogram(sizes, bins=[1, 6, 11, 21, 31, 41, 51, 61])[0] / len(sizes)
    print("Size histogram: " + ", ".join(f"{lo}-{hi - 1}: {h:.0%}" for lo, hi, h in
                                        zip([1, 6, 11, 21, 31, 41, 51], [6, 11, 21, 31, 41, 51, 61], hist)))
    presence = {op: np.mean([op in e.symbols for e in accepted]) for op in OPERATORS}
    print("Share of expressions containing each operator: "
          + ", ".join(f"{op} {p:.0%}" for op, p in sorted(presence.items(), key=lambda t: -t[1])))
    keys = heldout_keys()
    hits = sum(expression_key(e) in keys for e in accepted)
    print(f"\nStream expressions whose key is a held-out key (excluded): {hits} of {len(accepted)}.\n")
    return accepted


def mutation_stats(exprs: list, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"## Mutation sizes ({len(exprs)} expressions)\n")
    print("| setting | mean size of B | p10/p50/p90 | unary share | mutations per expression (mean, max) |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        sizes, lengths = [], []
        for e in exprs:
            muts = dismantle(e, rng, size)
            sizes += [m.size for m in muts]
            lengths.append(len(muts))
        label = "@inf" if math.isinf(size) else f"@{size:g}"
        unary = np.mean([s == 0 for s in sizes])
        print(f"| {label} | {np.mean(sizes):.2f} | {pct(sizes)} | {unary:.0%} | {np.mean(lengths):.1f}, {max(lengths)} |")
    print()


def sympy_comparison(n: int, seed: int, timeout: float) -> None:
    """The cheap canonicaliser against SymPy simplify on the same raw trees."""
    rng = np.random.default_rng(seed)
    config = GeneratorConfig()
    rows = []
    while len(rows) < n:
        d = int(rng.integers(1, 11))
        tree = random_tree(rng, int(rng.integers(5, 26)), d, config)
        cheap = canonicalize(tree)
        if cheap is None or not cheap.variables:
            continue
        start = time.perf_counter()
        sym = sympy_simplify(tree, timeout=timeout)
        rows.append((tree.size, cheap.size, None if sym is None else sym.size, time.perf_counter() - start))
    times = [r[3] for r in rows]
    ok = [r for r in rows if r[2] is not None]
    print(f"## Cheap canonicaliser vs SymPy simplify ({n} raw trees, SymPy capped at {timeout:g} s)\n")
    print(f"- SymPy time per expression: median {statistics.median(times):.2f} s, "
          f"p90 {np.percentile(times, 90):.2f} s, max {max(times):.2f} s "
          f"(cheap canonicaliser: {cheap_time(rng) * 1e6:.0f} us)")
    print(f"- SymPy over the cap or not expressible in Table 1 (skipped): {1 - len(ok) / n:.0%}")
    print(f"- mean size: raw {np.mean([r[0] for r in ok]):.1f}, cheap {np.mean([r[1] for r in ok]):.1f}, "
          f"SymPy {np.mean([r[2] for r in ok]):.1f}")
    smaller = np.mean([r[2] < r[1] for r in ok])
    larger = np.mean([r[2] > r[1] for r in ok])
    ratio = np.mean([r[2] / r[1] for r in ok])
    print(f"- SymPy result smaller than the cheap one: {smaller:.0%}; larger: {larger:.0%}; "
          f"mean size ratio SymPy/cheap {ratio:.2f}\n")


def cheap_time(rng: np.random.Generator) -> float:
    trees = [random_tree(rng, int(rng.integers(5, 26)), 5) for _ in range(500)]
    start = time.process_time()
    for t in trees:
        canonicalize(t)
    return (time.process_time() - start) / len(trees)


def heldout_stats() -> None:
    print("## Held-out set (src/dgsr/data/heldout.jsonl.gz)\n")
    for domain in ("in", "out"):
        items = load_heldout(domain)
        sizes = [it.expression.size for it in items]
        ops = [n_ops(it.expression) for it in items]
        print(f"- {domain}-domain: {len(items)} problems, size p10/p50/p90 {pct(sizes)} (max {max(sizes)}), "
              f"operators p10/p50/p90 {pct(ops)} (max {max(ops)}), n_points {items[0].n_points}")
    print()


def mutation_corpus(seed: int, transform: Callable[[Any], Any] | None = None) -> Any:
    """:func:`example_stream` as a torch ``IterableDataset``, deterministic per (seed, worker id):
    each ``DataLoader`` worker streams from its own generator seeded with ``(seed, worker_id)``, and
    ``transform`` (e.g. an :class:`ExampleEncoder`) runs in the worker. (Only this benchmark feeds a
    ``DataLoader``; training draws its batches directly, :mod:`dgsr.training.batches`.)"""
    import torch.utils.data

    class MutationCorpus(torch.utils.data.IterableDataset):
        def __iter__(self) -> Iterator[Any]:
            info = torch.utils.data.get_worker_info()
            stream = example_stream((seed, 0 if info is None else info.id), exclude=heldout_keys())
            return stream if transform is None else map(transform, stream)

    return MutationCorpus()


def loader_throughput(workers: int, seconds: float) -> None:
    import torch
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)
    ds = mutation_corpus(0, transform=ExampleEncoder())
    # batches of 64 (a list, as a padding collate would receive them): one message per batch
    loader = DataLoader(ds, batch_size=64, num_workers=workers, collate_fn=list)
    it = iter(loader)
    next(it)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        n += len(next(it))
    print(f"## DataLoader, {workers} workers, encoded examples: {n / (time.perf_counter() - start):,.0f} per "
          f"second of wall time (shared machine, load {os.getloadavg()[0]:.1f})\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--problems", type=int, default=3000)
    parser.add_argument("--sympy", type=int, default=100, help="raw trees for the SymPy comparison (0: skip)")
    parser.add_argument("--sympy-timeout", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers (0: skip)")
    args = parser.parse_args(argv)
    seconds = 3.0
    if args.quick:
        args.problems, args.sympy, seconds = 500, 0, 1.0
    print(f"# Corpus benchmark (python {sys.version.split()[0]}, numpy {np.__version__})\n")
    throughput(seconds)
    exprs = generator_stats(args.problems, args.seed)
    mutation_stats(exprs[:1000], args.seed)
    heldout_stats()
    if args.workers:
        loader_throughput(args.workers, seconds * 2)
    if args.sympy:
        sympy_comparison(args.sympy, args.seed, args.sympy_timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
