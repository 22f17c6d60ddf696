"""Collect semantic-search solution paths for pre-training (``dgsr pretrain --paths``).

    python bench/training/collect_paths.py --seed 1 --minutes 30 --out training/ckpt/paths-1.pkl

Draws training problems (held-out expressions excluded), runs the MCTS with the semantic policy
on each (2,000 evaluations), and keeps the shortest path to R² >= 0.99 of every solved problem
(:func:`dgsr.training.teacher.search_path_examples`); with ``--check-points N`` only when the solution also
fits N fresh rows of the problem; with ``--partial-r2 R`` a failed search also gives the path to its
most accurate expression when that reaches R² >= R. The file is rewritten every ``--save-every`` solved
problems, so a run stopped early keeps what it found. Run one process per core with different seeds.
``--positive-inputs 0.5`` shifts half of the problems' inputs to be positive (masses, lengths,
rates: common in science, absent from the paper's input distribution).
"""

from __future__ import annotations

import argparse
import sys
import time

from dgsr.training.generator import DEFAULT_CONFIG, GeneratorConfig
from dgsr.training.teacher import SEARCH_EVALUATIONS, collect_search_paths, save_search_paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--problems", type=int, default=None)
    parser.add_argument("--evals", type=int, default=SEARCH_EVALUATIONS)
    parser.add_argument("--out", required=True)
    parser.add_argument("--save-every", type=int, default=50)
    parser.add_argument("--check-points", type=int, default=0,
                        help="draw this many more rows per problem; keep a path only if its solution fits them too")
    parser.add_argument("--partial-r2", type=float, default=None,
                        help="also keep the path to the best expression of a failed search when it reaches this "
                             "R² (on the check rows too)")
    parser.add_argument("--positive-inputs", type=float, default=DEFAULT_CONFIG.positive_inputs,
                        help="share of problems whose inputs are shifted positive (GeneratorConfig.positive_inputs)")
    args = parser.parse_args(argv)
    if args.minutes is None and args.problems is None:
        parser.error("give --minutes or --problems")
    paths, tried, start = [], 0, time.perf_counter()
    seconds = None if args.minutes is None else 60 * args.minutes
    for index, examples in collect_search_paths(args.seed, n_problems=args.problems, seconds=seconds,
                                                evaluations=args.evals, check_points=args.check_points,
                                                partial_r2=args.partial_r2,
                                                config=GeneratorConfig(positive_inputs=args.positive_inputs)):
        paths.append(examples)
        tried = index + 1
        if len(paths) % args.save_every == 0:
            save_search_paths(args.out, paths)
            print(f"{len(paths)} kept of {tried} tried, {sum(map(len, paths))} steps, "
                  f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    save_search_paths(args.out, paths)
    print(f"done: {len(paths)} paths kept, {sum(map(len, paths))} steps, "
          f"{time.perf_counter() - start:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
