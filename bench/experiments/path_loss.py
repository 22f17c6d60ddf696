"""`python bench/experiments/path_loss.py --val-paths training/ckpt/gpaths-41.pkl training/ckpt/g3/step-*.safetensors`: held-out solution-path loss of policy checkpoints: does continued training memorise its paths?

Scores each weights file on the steps of path files it was not trained on (the same figure as
``dgsr pretrain --val-paths``: teacher-forced action loss, and its rise when each dataset's y is
shuffled over the points), so snapshots of a run that had no ``--val-paths`` can be compared after
the fact.

    python bench/experiments/path_loss.py --val-paths training/ckpt/gpaths-41.pkl training/ckpt/g3/step-*.safetensors
"""

from __future__ import annotations

import argparse
import re

import torch

from dgsr.neural.checkpoint import load_model
from dgsr.training.batches import path_validation_batches
from dgsr.training.pretrain import evaluate_batches
from dgsr.training.pretrain_config import TrainConfig


def _step(name: str) -> int:
    found = re.findall(r"(\d+)", name)
    return int(found[-1]) if found else -1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("weights", nargs="+", help="safetensors files (sorted by the last number in the name)")
    parser.add_argument("--val-paths", required=True, help="comma-separated held-out path files")
    parser.add_argument("--examples", type=int, default=512, help="path steps scored (spread over the files)")
    parser.add_argument("--points", type=int, default=100)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = TrainConfig(data="generator", val_paths=args.val_paths, val_examples=args.examples,
                         n_points=args.points)
    held, shuffled = path_validation_batches(config), path_validation_batches(config, permute_y=True)
    cpu = torch.device("cpu")
    print(f"held-out path steps: {sum(len(b.states) for b in held)} from {args.val_paths}")
    print("| weights | steps trained | path action loss | shuffled-y gap |")
    print("|---|---|---|---|")
    for file in sorted(args.weights, key=_step):
        model, info = load_model(file)
        loss = evaluate_batches(model, held, cpu)["val_action_loss"]
        gap = evaluate_batches(model, shuffled, cpu)["val_action_loss"] - loss
        print(f"| {file} | {info.get('steps', '?')} | {loss:.4f} | {gap:+.6f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
