"""`python bench/experiments/online_bench.py run --arm finetune|frozen|synthetic|sequential --weights W.safetensors`: expert-iteration benchmark: fine-tuned vs frozen policy, synthetic datasets mixed in or not, 1 vs 2 workers.

    python bench/experiments/online_bench.py run --arm finetune|frozen|synthetic|sequential --weights W.safetensors \
        [--rounds 3] [--iterations 50] [--trial-evals 600] [--seed 0] --out DIR
    python bench/experiments/online_bench.py run --arm throughput --workers 1|2 [--backend ray] --seconds 240 --weights W --out DIR
    python bench/experiments/online_bench.py report DIR [DIR ...]

The fixed set: 6 Feynman problems (200 rows regenerated from ``../shared/data/feynman``'s ranges,
seeded by name) and the first 6 in-domain held-out synthetic problems (``dgsr.training.corpus.load_heldout``,
their 200 rows). Every arm gives each of these 12 datasets the same number of trials (``rounds``)
with the same per-trial cap (``iterations`` MCTS iterations, at most ``trial-evals`` evaluations)
and the same controller seed, so the per-trial hyper-parameter draws match across arms; only
the learning differs. A dataset counts as solved when a trial reaches training R² >= 0.99 (the
paper's criterion). ``synthetic`` adds 4 synthetic datasets to the queue (they get trials too, so
that arm spends more evaluations in all; the user datasets get the same). ``sequential`` is Table
6's "one-at-a-time": a separate run per dataset, each fine-tuned from the starting weights on that
dataset alone. One torch thread.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch

from dgsr.core.evaluate import evaluate
from dgsr.core.parser import parse
from dgsr.neural.checkpoint import load_model
from dgsr.online import Dataset, OnlineConfig, TrainerConfig, run_online, throughput
from dgsr.training.corpus import load_heldout

FEYNMAN = ("feynman_I_14_4", "feynman_II_3_24", "feynman_I_34_1", "feynman_I_18_12", "feynman_I_47_23",
           "feynman_II_38_14")
EQUATIONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "feynman" / "equations.tsv"
ROWS = 200


def feynman_datasets(names: tuple[str, ...] = FEYNMAN, rows: int = ROWS) -> list[Dataset]:
    """Rows drawn uniformly from each problem's ranges, seeded by its name (CONTRACTS §3)."""
    with open(EQUATIONS, newline="") as fh:
        table = {r["name"]: r for r in csv.DictReader(fh, delimiter="\t")}
    out = []
    for name in names:
        r = table[name]
        variables = r["variables"].split(",")
        ranges = [tuple(float(v) for v in s.split(":")) for s in r["ranges"].split(",")]
        rng = np.random.default_rng([zlib.crc32(name.encode()), 0])
        X = np.column_stack([rng.uniform(lo, hi, rows) for lo, hi in ranges])
        y = evaluate(parse(r["formula"], variables), X)
        out.append(Dataset(name, X, y, tuple(variables)))
    return out


def heldout_datasets(n: int = 6) -> list[Dataset]:
    out = []
    for item in load_heldout("in")[:n]:
        p = item.problem()
        out.append(Dataset(f"heldout-{item.name}", p.X, p.y, truth=item.expression))
    return out


def run(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    datasets = feynman_datasets() + heldout_datasets()
    n_user = len(datasets)
    synthetic = 4 if args.arm == "synthetic" else 0
    config = OnlineConfig(iterations_per_trial=args.iterations, trial_evaluations=args.trial_evals, trial_time=120,
                          learn=args.arm != "frozen", synthetic=synthetic, checkpoint_every=6, seed=args.seed)
    trainer = TrainerConfig(batch_size=32, steps_per_trial=args.steps, lr=args.lr, seed=args.seed)
    model, info = load_model(args.weights)
    start = time.time()
    load = os.getloadavg()[0]
    if args.arm == "throughput":
        result = run_online(datasets, model=model, config=config, trainer_config=trainer, workers=args.workers,
                            backend=args.backend, ray_cpus=args.workers if args.backend == "ray" else None,
                            out=args.out, max_time=args.seconds)
    elif args.arm == "sequential":
        result = _one_at_a_time(datasets, args, config, trainer)
    else:
        result = run_online(datasets, model=model, config=config, trainer_config=trainer, out=args.out,
                            max_trials=args.rounds * (n_user + synthetic))
    summary = {"arm": args.arm, "seed": args.seed, "rounds": args.rounds, "iterations": args.iterations,
               "trial_evals": args.trial_evals, "workers": args.workers, "backend": args.backend, "trials": result.trials,
               "trainer_steps": result.trainer_steps, "elapsed": result.elapsed, **throughput(result),
               "weights": str(args.weights), "weights_steps": info.get("steps"), "load_at_start": load,
               "load_at_end": os.getloadavg()[0], "machine": f"{platform.machine()} {os.cpu_count()} cores",
               "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime(start)), "user_datasets": [d.name for d in datasets],
               "log": result.log}
    Path(args.out, "bench.json").write_text(json.dumps(summary, default=float))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("log", "user_datasets")}, default=float))


class _Combined:
    """The results of several runs, read as one (what :func:`run` summarises)."""

    def __init__(self, results: list) -> None:
        self.log = [line for r in results for line in r.log]
        self.trials = sum(r.trials for r in results)
        self.trainer_steps = sum(r.trainer_steps for r in results)
        self.elapsed = sum(r.elapsed for r in results)


def _one_at_a_time(datasets: list[Dataset], args: argparse.Namespace, config: OnlineConfig,
                   trainer: TrainerConfig) -> _Combined:
    """Table 6's "one-at-a-time": each dataset gets its own run, fine-tuned from the starting
    weights on that dataset alone (same trials, caps and seed as the simultaneous run)."""
    results = []
    for d in datasets:
        model, _ = load_model(args.weights)
        results.append(run_online([d], model=model, config=config, trainer_config=trainer,
                                  out=Path(args.out, d.name), max_trials=args.rounds))
    return _Combined(results)


def solved_by_round(summary: dict) -> tuple[list[float], list[float], float]:
    """(share of user datasets solved in round r, share solved by round r, evaluations on user datasets)."""
    names = summary["user_datasets"]
    per: dict[str, list[bool]] = {n: [] for n in names}
    evals = 0.0
    for line in summary["log"]:
        if line["dataset"] in per and len(per[line["dataset"]]) < summary["rounds"]:
            per[line["dataset"]].append(bool(line["solved"]))
            evals += line["evaluations"]
    rounds = summary["rounds"]
    in_round = [float(np.mean([v[r] for v in per.values() if len(v) > r])) for r in range(rounds)]
    cumulative = [float(np.mean([any(v[: r + 1]) for v in per.values()])) for r in range(rounds)]
    return in_round, cumulative, evals


def report(args: argparse.Namespace) -> None:
    summaries = [json.loads(Path(d, "bench.json").read_text()) for d in args.dirs]
    print("| arm | seed | trials | trainer steps | solved in round 1..R | solved by round R | user evals | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for s in summaries:
        if s["arm"] == "throughput":
            continue
        in_round, cumulative, evals = solved_by_round(s)
        print(f"| {s['arm']} | {s['seed']} | {s['trials']} | {s['trainer_steps']} | "
              f"{' / '.join(f'{x:.2f}' for x in in_round)} | {cumulative[-1]:.2f} | {evals:,.0f} | {s['elapsed']:.0f} |")
    _aggregate(summaries)
    print()
    print("| backend | workers | wall s | trials | trials/hour | trainer steps/hour | load avg start/end |")
    print("|---|---|---|---|---|---|---|")
    for s in summaries:
        if s["arm"] == "throughput":
            print(f"| {s.get('backend', 'local')} | {s['workers']} | {s['elapsed']:.0f} | {s['trials']} | {s['trials_per_hour']:.0f} | "
                  f"{s['steps_per_hour']:.0f} | {s['load_at_start']:.1f} / {s['load_at_end']:.1f} |")


def _mean_ci(values: list[float]) -> str:
    """Mean with a 95% Student-t interval over seeds (just the mean for one seed)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return f"{v.mean():.3f} (1 seed)"
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return f"{v.mean():.3f} ± {half:.3f} ({len(v)} seeds)"


def _aggregate(summaries: list[dict]) -> None:
    """Per arm: solved by the last round and in the last round, mean ± 95% CI over seeds; paired differences."""
    by_arm: dict[str, dict[int, tuple[float, float]]] = {}
    for s in summaries:
        if s["arm"] != "throughput":
            in_round, cumulative, _ = solved_by_round(s)
            by_arm.setdefault(s["arm"], {})[s["seed"]] = (cumulative[-1], in_round[-1])
    if not by_arm:
        return
    print()
    print("| arm | solved by last round | solved in last round |")
    print("|---|---|---|")
    for arm, seeds in by_arm.items():
        print(f"| {arm} | {_mean_ci([v[0] for v in seeds.values()])} | {_mean_ci([v[1] for v in seeds.values()])} |")
    base = by_arm.get("frozen", {})
    for arm, seeds in by_arm.items():
        common = sorted(set(seeds) & set(base))
        if arm != "frozen" and common:
            by_last = [seeds[k][0] - base[k][0] for k in common]
            in_last = [seeds[k][1] - base[k][1] for k in common]
            print(f"\n{arm} - frozen, paired by seed: solved by last round {_mean_ci(by_last)}; "
                  f"solved in last round {_mean_ci(in_last)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--arm", choices=("finetune", "frozen", "synthetic", "sequential", "throughput"), required=True)
    r.add_argument("--backend", choices=("local", "ray"), default="local", help="throughput arm only")
    r.add_argument("--weights", required=True)
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--iterations", type=int, default=50)
    r.add_argument("--trial-evals", type=float, default=600)
    r.add_argument("--steps", type=int, default=4, help="trainer steps per trial")
    r.add_argument("--lr", type=float, default=1e-4)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--seconds", type=float, default=240, help="wall time of a throughput arm")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("dirs", nargs="+")
    args = parser.parse_args(argv)
    (run if args.command == "run" else report)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
