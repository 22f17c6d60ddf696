"""Can the point encoder learn to read y on a CPU? Train it alone on an easier task and look.

Only the point encoder and the auxiliary symbol head of a fresh ``small`` model (``--encoder
variables``, the default, or ``points`` with numeric point features) are trained, from scratch, to predict which operators and variables a random
ground truth contains from its 100 points (``dgsr.training.generator.random_problem``, 32 per step). Every
200 steps the held-out loss is printed with the true y and with y shuffled over the points: a
gap means the encoder uses how y relates to x; none means it reads only what shuffling keeps
(the columns present, the marginal of y).

    python bench/point_encoder_probe.py --minutes 10 [--encoder points]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig, symbol_targets
from dgsr.training.batches import encode_point_sets
from dgsr.training.generator import random_problem


def tensors(problems: list, rng: np.random.Generator | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Point tokens, mask and symbol targets; y shuffled over the points when ``rng`` is given."""
    sets = [(p.X, p.y if rng is None else rng.permutation(p.y)) for p in problems]
    points, mask, _ = encode_point_sets(sets)
    return points, mask, torch.tensor([symbol_targets(p.expression) for p in problems])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoder", choices=("variables", "points"), default="variables")
    p.add_argument("--every", type=int, default=200, help="steps between held-out evaluations")
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = PolicyModel(replace(ModelConfig.preset("small"), point_features=True, target_symbols=True,
                                encoder=args.encoder))
    encoder = ("point_", "pair_", "y_mlp.", "y_out.", "column_stats.", "slot.", "absent", "symbol_head")
    optimizer = torch.optim.AdamW([q for name, q in model.named_parameters() if name.startswith(encoder)], lr=args.lr)
    val_rng = np.random.default_rng([args.seed, 999])
    held = [random_problem(val_rng) for _ in range(256)]
    true_y, shuffled_y = tensors(held, None), tensors(held, np.random.default_rng([args.seed, 5]))

    @torch.no_grad()
    def loss_on(batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> float:
        points, mask, target = batch
        return float(F.binary_cross_entropy_with_logits(model.symbol_logits(model.encode_points(points, mask), mask),
                                                        target))

    rng = np.random.default_rng(args.seed)
    start, step = time.time(), 0
    print("| step | minutes | held-out loss, true y | y shuffled | gap |")
    print("|---|---|---|---|---|")
    while time.time() - start < args.minutes * 60:
        points, mask, target = tensors([random_problem(rng) for _ in range(args.batch_size)], None)
        loss = F.binary_cross_entropy_with_logits(model.symbol_logits(model.encode_points(points, mask), mask), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % args.every == 0:
            model.eval()
            a, b = loss_on(true_y), loss_on(shuffled_y)
            model.train()
            print(f"| {step} | {(time.time() - start) / 60:.1f} | {a:.6f} | {b:.6f} | {b - a:+.6f} |", flush=True)


if __name__ == "__main__":
    main()
