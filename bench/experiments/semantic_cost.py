"""`python bench/experiments/semantic_cost.py`: cost of the semantic policy: library preparation vs number of features, and one expansion (K=16)
compared with the random policy and with evaluating K children, in CPU time on one thread.

    python bench/experiments/semantic_cost.py
"""

from __future__ import annotations

import time

import numpy as np

from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.parser import parse
from dgsr.policies.random import RandomPolicy
from dgsr.policies.semantic.policy import SemanticPolicy

EXPRESSIONS = ["x0", "x0*x1", "x0*x1/x2 + sin(x3)*x4", "sqrt(x0*x1)/(x2 + x3**2) - exp(x4/x0)*x1 + 2.5*x3"]


def _cpu(fn, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def main() -> None:
    rng = np.random.default_rng(0)
    print("| features | library operands | prepare (ms) |")
    print("|---|---|---|")
    for d in (2, 5, 10, 14, 50, 200):
        X = rng.normal(size=(5000, d))
        y = X[:, -1] * X[:, d // 2] + np.sin(X[:, 0])
        policy = SemanticPolicy()
        ctx = policy.prepare(X, y, rng)
        seconds = _cpu(lambda: policy.prepare(X, y, rng), 5)  # noqa: B023 (used at once)
        print(f"| {d} | {len(ctx.library)} | {1000 * seconds:.1f} |")

    X = rng.uniform(1, 3, size=(1000, 5))
    y = X[:, 0] * X[:, 1] / X[:, 2] ** 2 + np.sin(X[:, 3])
    names = [f"x{i}" for i in range(5)]
    exprs = [parse(s, names) for s in EXPRESSIONS]
    semantic, random = SemanticPolicy(), RandomPolicy()
    ctx = semantic.prepare(X, y, rng)
    columns = as_columns(X)

    def propose_semantic() -> None:
        for e in exprs:
            ctx.pending.clear()  # a first expansion of each expression, not a cached one
            semantic.propose(ctx, e, 16, rng)

    def propose_random() -> None:
        for e in exprs:
            random.propose(5, e, 16, rng)

    def evaluate_children() -> None:
        for e in exprs:
            for _ in range(16):
                evaluate_columns(e, columns)

    n = len(exprs)
    print()
    print("| one expansion, K = 16 (mean over expressions of 1 to 21 nodes) | CPU ms |")
    print("|---|---|")
    print(f"| semantic proposal | {1000 * _cpu(propose_semantic, 30) / n:.2f} |")
    print(f"| random proposal | {1000 * _cpu(propose_random, 30) / n:.2f} |")
    print(f"| evaluating the 16 children on 1,000 rows | {1000 * _cpu(evaluate_children, 30) / n:.2f} |")


if __name__ == "__main__":
    main()
