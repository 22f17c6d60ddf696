"""Does a point encoder learn the x-y pairing? The "which variable" probe of issue 13.

Each problem has 2-10 columns (``dgsr.training.generator.sample_inputs``) and y = 2 f(x_k) + 0.5 for one
column k and f among sin, cos, square, tanh, exp, identity, abs; the task is to name k (chance
about 0.214). Only the point encoder of a fresh ``small`` model and a linear head are trained
(32 problems per step, AdamW 1e-3, one thread). Every 100 steps: held-out accuracy, loss, and the
loss with y shuffled over the points (same marginals, no pairing) minus the loss with the true y.

    python bench/encoder_saddle.py --encoder shipped-init --steps 400   # the old std-0.02 / zero-last-layer start
    python bench/encoder_saddle.py --encoder points --steps 400         # one token per point, default init
    python bench/encoder_saddle.py --encoder variables --steps 400      # the per-variable encoder
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.training.batches import encode_point_sets
from dgsr.training.generator import sample_inputs

SHAPES = (np.sin, np.cos, np.square, np.tanh, lambda x: np.exp(np.clip(x, -5, 5)), lambda x: x, np.abs)


def task(rng: np.random.Generator, n: int) -> tuple[list, torch.Tensor, torch.Tensor]:
    sets, labels, dims = [], [], []
    for _ in range(n):
        d = int(rng.integers(2, 11))
        k = int(rng.integers(d))
        X = sample_inputs(rng, 100, d)
        sets.append((X, 2 * SHAPES[int(rng.integers(len(SHAPES)))](X[:, k]) + 0.5))
        labels.append(k)
        dims.append(d)
    return sets, torch.tensor(labels), torch.tensor(dims)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--encoder", choices=("shipped-init", "points", "variables"), default="variables")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    per_variable = args.encoder == "variables"
    config = replace(ModelConfig.preset("small"), point_features=True,
                     encoder="variables" if per_variable else "points")
    model = PolicyModel(config)
    if args.encoder == "shipped-init":  # as the shipped file was initialised and extended
        for module in model.point_num:
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)
        nn.init.zeros_(model.point_num[2].weight)
    head = nn.Linear(config.d_model, 1 if per_variable else 10)
    encoder = ("point_", "pair_", "y_mlp.", "y_out.", "column_stats.", "slot.", "absent")
    params = [q for name, q in model.named_parameters() if name.startswith(encoder)] + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)

    def logits(sets: list, dims: torch.Tensor) -> torch.Tensor:
        points, mask, _ = encode_point_sets(sets)
        memory = model.encode_points(points, mask)
        if per_variable:  # one score per variable token
            z = head(memory[:, :10]).squeeze(-1)
        else:  # mean over the point tokens
            w = mask[..., None].float()
            z = head((memory * w).sum(1) / w.sum(1))
        return z.masked_fill(torch.arange(10)[None] >= dims[:, None], -1e9)

    held, held_labels, held_dims = task(np.random.default_rng(999), 256)
    shuffle = np.random.default_rng(5)
    held_shuffled = [(X, shuffle.permutation(y)) for X, y in held]
    print(f"encoder {args.encoder}; chance {np.mean([1 / d for d in range(2, 11)]):.3f}")
    print("| step | seconds | accuracy | loss | loss, y shuffled | gap |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(args.seed)
    start = time.time()
    for step in range(1, args.steps + 1):
        sets, labels, dims = task(rng, 32)
        loss = F.cross_entropy(logits(sets, dims), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            with torch.no_grad():
                a, b = logits(held, held_dims), logits(held_shuffled, held_dims)
                la, lb = F.cross_entropy(a, held_labels).item(), F.cross_entropy(b, held_labels).item()
                acc = (a.argmax(1) == held_labels).float().mean().item()
            print(f"| {step} | {time.time() - start:.0f} | {acc:.3f} | {la:.6f} | {lb:.6f} | {lb - la:+.6f} |",
                  flush=True)


if __name__ == "__main__":
    main()
