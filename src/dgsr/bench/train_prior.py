"""Train the learned prior and value by expert iteration on dgsr's own searches (issue 51).

    python -m dgsr.bench.train_prior --out src/dgsr/policies/learned/prior.json

Each round searches every training problem with the current weights, recording the expansions
on the path to each trial's best expression and the nodes' values
(:class:`~dgsr.policies.learned.policy.LearnedPriorPolicy` with ``record=True``); then the weights
are fitted to all examples gathered so far (rounds aggregate, as expert iteration does), and the
next round searches with them. The problems are the *develop* half of the laws catalogue (never
its confirm half, nor Feynman or SRBench, which the comparison uses) and synthetic laws from
dgsr's generator. Searches have an evaluation budget, not a time budget, so what they record
depends on the machine's load only through the search's few time caps (a constant fit's second,
SymPy's simplification); the training itself is deterministic for a seed. The defaults take
about 5 minutes on 2 cores; every round also reports the losses on every fifth problem's
examples of nets trained on the others (``validation``).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

import numpy as np

from dgsr.policies.learned.training import Examples, initial_weights, train
from dgsr.policies.learned.weights import LearnedWeights, save_weights

_MAX_ROWS = 1000  # rows per training problem (the search's own max_rows)


@dataclass(frozen=True)
class TrainingProblem:
    name: str
    X: np.ndarray
    y: np.ndarray


def training_problems(n_synthetic: int, seed: int) -> list[TrainingProblem]:
    """The develop half of the laws catalogue (noise as the entry says) and ``n_synthetic``
    generator problems, all deterministic in ``seed``."""
    from dgsr.bench.laws import generate_law, laws_in_half
    from dgsr.bench.protocol import make_split
    from dgsr.training.generator import GenerationError, random_problem

    problems = []
    for law in laws_in_half("develop"):
        problem = generate_law(law.name, seed)
        split = make_split(problem.X, problem.y, seed, noise=law.noise, max_train=_MAX_ROWS)
        problems.append(TrainingProblem(law.name, split.X_train.to_numpy(np.float64), split.y_train))
    rng = np.random.default_rng([seed, 51])
    while len(problems) < len(laws_in_half("develop")) + n_synthetic:
        try:
            p = random_problem(rng, n_points=300)
        except GenerationError:
            continue
        problems.append(TrainingProblem(f"synthetic_{len(problems)}", p.X, p.y))
    return problems


def _search(args: tuple[TrainingProblem, LearnedWeights, int, int]) -> Examples:
    """One recorded search (in a worker process): its examples."""
    from dgsr.core.budget import Budget
    from dgsr.policies.learned.policy import LearnedPriorPolicy
    from dgsr.runtime.threads import pin_process_threads
    from dgsr.search.mcts import SearchConfig, run_search

    pin_process_threads(1)
    problem, weights, evaluations, seed = args
    policy = LearnedPriorPolicy(weights, record=True)
    run_search(problem.X, problem.y, policy, config=SearchConfig(), rng=seed,
               budget=Budget(max_evaluations=evaluations))
    return policy.examples


def expert_iteration(problems: list[TrainingProblem], *, rounds: int, evaluations: int, epochs: int, seed: int,
                     jobs: int, log=print) -> tuple[LearnedWeights, dict]:
    """``rounds`` rounds of search-then-train from :func:`initial_weights`; returns the weights and a report."""
    weights = initial_weights(seed)
    gathered, train_part, held_out = Examples(), Examples(), Examples()
    report: dict = {"rounds": []}
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) if jobs > 1 else None
    with pool or contextlib.nullcontext():
        for r in range(rounds):
            start = time.monotonic()
            tasks = [(p, weights, evaluations, seed * 100_003 + i) for i, p in enumerate(problems)]
            searched = pool.map(_search, tasks, chunksize=1) if pool else map(_search, tasks)
            for i, found in enumerate(searched):
                gathered.extend(found)
                (held_out if i % 5 == 4 else train_part).extend(found)
            report["validation"] = validation(train_part, held_out, epochs=epochs, seed=seed)
            fitted = train(weights, gathered, epochs=epochs, seed=seed + r)
            fitted["search_seconds"] = round(time.monotonic() - start, 1)
            report["rounds"].append({k: (round(float(v), 5) if isinstance(v, float | np.floating) else v)
                                     for k, v in fitted.items()})
            log(f"round {r + 1}/{rounds}: {report['rounds'][-1]}; held out: {report['validation']}")
    return weights, report


def validation(train_part: Examples, held_out: Examples, *, epochs: int, seed: int) -> dict[str, float]:
    """Losses on ``held_out`` (every fifth problem's examples, of all rounds so far) of the
    starting weights and of weights trained from them on ``train_part`` (the other problems'):
    whether what the nets learn carries to problems they were not trained on."""
    from dgsr.policies.learned.network import listwise_loss, value_loss

    def losses(w: LearnedWeights) -> dict[str, float]:
        out = {}
        if held_out.groups:
            out["prior"] = round(float(listwise_loss(w.prior, held_out.groups)[0]), 5)
        if held_out.value_targets and w.value is not None:
            out["value"] = round(value_loss(w.value, np.array(held_out.value_features),
                                            np.array(held_out.value_targets))[0], 5)
        return out

    start = initial_weights(seed)
    fitted = start.copy()
    train(fitted, train_part, epochs=epochs, seed=seed)
    return {**{f"held_out_{k}_start": v for k, v in losses(start).items()},
            **{f"held_out_{k}_trained": v for k, v in losses(fitted).items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dgsr.bench.train_prior", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="weights file to write (.json)")
    parser.add_argument("--rounds", type=int, default=2, help="expert-iteration rounds (default: 2)")
    parser.add_argument("--evaluations", type=int, default=3000,
                        help="evaluations per search, about a 10 s fit's (default: 3000)")
    parser.add_argument("--synthetic", type=int, default=60, help="generator problems besides the laws (default: 60)")
    parser.add_argument("--epochs", type=int, default=10, help="passes over the examples per round (default: 10)")
    parser.add_argument("--problems", type=int, default=None, help="use only the first N problems (a quick try)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="searches in parallel (default: 2)")
    args = parser.parse_args(argv)
    problems = training_problems(args.synthetic, args.seed)[:args.problems]
    print(f"{len(problems)} training problems; {args.rounds} rounds of {args.evaluations} evaluations each")
    weights, report = expert_iteration(problems, rounds=args.rounds, evaluations=args.evaluations,
                                       epochs=args.epochs, seed=args.seed, jobs=args.jobs)
    weights.info = {"trained_by": f"python -m dgsr.bench.train_prior --rounds {args.rounds} --evaluations "
                                  f"{args.evaluations} --synthetic {args.synthetic} --epochs {args.epochs} "
                                  f"--seed {args.seed}",
                    "problems": len(problems), "training_data": "laws catalogue, develop half; generator laws",
                    **report}
    save_weights(args.out, weights)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
