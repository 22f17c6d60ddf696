"""`python bench/experiments/blas_threads.py --busy 2`: the semantic policy's operand match on one
BLAS thread against the library's default thread count, on an idle or a busy machine.

Builds the semantic policy's context on a black-box set (its operand library, about 540 operands
on 100 rows), then times :func:`dgsr.policies.semantic.matching.match_operands` on 16 random
targets, alternating one BLAS thread (what ``run_search`` sets since 0.8.7) and BLAS's default,
and prints the median microseconds of each. ``--busy N`` first starts N processes of this script
that spin on one core each (stopped at the end), to stand for other work on the machine. The
matrices are those of a real expansion; only the targets are random, which does not change the
products' cost.

    python bench/experiments/blas_threads.py --dataset 612_fri_c1_1000_5 --calls 300 --busy 0
    python bench/experiments/blas_threads.py --dataset 612_fri_c1_1000_5 --calls 300 --busy 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from dgsr.bench.datasets import DatasetRef, load_problem, resolve_data_dir
from dgsr.policies.semantic.matching import match_operands
from dgsr.policies.semantic.policy import SemanticPolicy


def _spin(stop: multiprocessing.Event) -> None:  # pragma: no cover - a load generator
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _time_calls(targets: np.ndarray, weights: np.ndarray, library, limit: int | None, calls: int) -> list[float]:
    out = []
    with threadpool_limits(limits=limit, user_api="blas"):
        for _ in range(calls):
            start = time.perf_counter()
            match_operands(targets, weights, library, 1.0)
            out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="612_fri_c1_1000_5")
    parser.add_argument("--data", default=None, help="the benchmark data folder (default: as dgsr bench finds it)")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per setting and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two settings")
    parser.add_argument("--targets", type=int, default=16)
    parser.add_argument("--busy", type=int, default=0, help="spinning processes started first")
    args = parser.parse_args()

    problem = load_problem(DatasetRef("blackbox", args.dataset), resolve_data_dir(args.data), 0)
    X, y = problem.X.to_numpy(dtype=np.float64), np.asarray(problem.y, dtype=np.float64)
    context = SemanticPolicy().prepare(X, y, np.random.default_rng(0))
    library = context.library
    rng = np.random.default_rng(1)
    targets = rng.normal(size=(args.targets, library.values.shape[1]))
    weights = np.ones_like(targets)
    default_threads = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    try:
        one, default = [], []
        for _ in range(args.rounds):
            one += _time_calls(targets, weights, library, 1, args.calls)
            default += _time_calls(targets, weights, library, None, args.calls)
    finally:
        stop.set()
        for p in spinners:
            p.join()
    print(f"{args.dataset}: {len(library.expressions)} operands x {library.values.shape[1]} rows, "
          f"{args.targets} targets; {os.cpu_count()} cores, {args.busy} busy processes; "
          f"BLAS default threads {default_threads}; load average {os.getloadavg()[0]:.2f}")
    print(f"match_operands, median of {len(one)} calls: one BLAS thread {1e6 * statistics.median(one):.0f} us, "
          f"default {1e6 * statistics.median(default):.0f} us "
          f"(means {1e6 * statistics.mean(one):.0f} / {1e6 * statistics.mean(default):.0f} us)")


if __name__ == "__main__":
    main()
