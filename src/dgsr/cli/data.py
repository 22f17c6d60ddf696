"""``dgsr data``: look at the synthetic pre-training data and regenerate the held-out set.

* ``dgsr data sample --n 5 [--seed S] [--mutation-size 10]`` prints generated examples: the
  ground truth, its dismantled mutation sequence and the tokens of each action.
* ``dgsr data heldout --out PATH`` rewrites the held-out file (byte-for-byte identical to the
  shipped one unless the generator changed); ``--check`` compares instead of writing.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np


def add_subparser(subparsers: Any) -> None:
    """Register ``dgsr data`` (plug-in hook of :mod:`dgsr.cli.app`)."""
    parser = subparsers.add_parser("data", help="synthetic pre-training data: samples, held-out set")
    sub = parser.add_subparsers(title="data commands", metavar="ACTION")

    sample = sub.add_parser("sample", help="print generated ground truths with their mutation sequences")
    sample.add_argument("--n", type=int, default=5, help="number of expressions (default 5)")
    sample.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    sample.add_argument("--mutation-size", type=_size, default=10.0,
                        help="target size of B: 1, 10 (default) or inf")
    sample.add_argument("--max-operators", type=int, default=25, help="operators of the raw tree (default 25)")
    sample.add_argument("--points", type=int, default=3, help="data points to show per problem (default 3)")
    sample.set_defaults(func=_sample)

    heldout = sub.add_parser("heldout", help="regenerate the held-out set of 1,000 problems")
    heldout.add_argument("--out", default=None, help="output file (default: the shipped file)")
    heldout.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    heldout.set_defaults(func=_heldout)
    parser.set_defaults(func=lambda args: parser.print_help())


def _size(text: str) -> float:
    value = float(text)
    if not value >= 1:
        raise argparse.ArgumentTypeError("mutation size must be >= 1 (or inf)")
    return value if math.isinf(value) else float(int(value))


def _sample(args: argparse.Namespace) -> int:
    from dgsr.neural.tokens import vocabulary
    from dgsr.training.corpus import expression_key, heldout_keys
    from dgsr.training.dismantle import mutation_path
    from dgsr.training.generator import GeneratorConfig, random_problem

    if args.n < 0 or args.points < 0:
        raise ValueError("--n and --points must be >= 0")
    vocab = vocabulary()
    config = GeneratorConfig(max_operators=max(args.max_operators, 5), min_operators=min(5, args.max_operators))
    rng = np.random.default_rng(args.seed)
    keys = heldout_keys()
    shown = 0
    while shown < args.n:
        problem = random_problem(rng, config, n_points=100)
        expr = problem.expression
        if expression_key(expr) in keys:
            continue
        shown += 1
        print(f"#{shown}  D={problem.X.shape[1]}  size={expr.size}  f* = {expr}")
        print(f"    prefix: {' '.join(vocab.words[i] for i in vocab.encode_expression(expr))}")
        for row in range(min(args.points, len(problem.y))):
            xs = ", ".join(f"{v:.4g}" for v in problem.X[row])
            print(f"    point {row}: x = ({xs})  y = {problem.y[row]:.4g}")
        path = mutation_path(expr, rng, args.mutation_size)
        for step, (state, mutation) in enumerate(path, 1):
            tokens = " ".join(vocab.words[i] for i in vocab.encode_action(mutation))
            print(f"    m{step} (|B|={mutation.size}) on {state}: {mutation}")
            print(f"        tokens: {tokens}")
        print()
    return 0


def _heldout(args: argparse.Namespace) -> int:
    import gzip
    import tempfile
    from pathlib import Path

    from dgsr.training.corpus import heldout_path, write_heldout

    target = Path(args.out) if args.out else heldout_path()
    if not args.check:
        write_heldout(target)
        print(f"wrote {target} ({target.stat().st_size} bytes)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = write_heldout(Path(tmp) / "heldout.jsonl.gz")
        same = gzip.decompress(fresh.read_bytes()) == gzip.decompress(target.read_bytes())
    print(f"{target}: {'identical to' if same else 'DIFFERS from'} a fresh regeneration")
    return 0 if same else 1
