"""`python bench/experiments/data_use.py src/dgsr/neural/weights/dgsr-small.safetensors`: does a policy checkpoint read the data? Validation loss with the true, permuted and noise y.

The held-out in-domain dismantling steps (as ``dgsr pretrain`` validates on) are scored three
ways: with their own data, with each dataset's y shuffled over its points (same values, no
relation to x), and with y replaced by Gaussian noise. A policy that uses y loses accuracy when
it is shuffled; equal losses mean it proposes mutations from the expression (and the number of
variables) alone. Also prints the loss and accuracy per kind of action token.

    python bench/experiments/data_use.py src/dgsr/neural/weights/dgsr-small.safetensors
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn.functional as F

from dgsr.neural.checkpoint import load_model
from dgsr.neural.sampling import token_groups
from dgsr.neural.tokens import vocabulary
from dgsr.training.batches import collate, heldout_examples, with_new_y
from dgsr.training.pretrain import evaluate_batches, teacher_forced
from dgsr.training.pretrain_config import TrainConfig

_GROUPS = token_groups()

KINDS = ("node", "operator", "operand symbol", "constant sign", "constant mantissa", "constant exponent")


def variants(examples: list, seed: int) -> dict[str, list]:
    rng = np.random.default_rng(seed)
    permuted, noise = [], []  # per dataset, in order: its permutation, then its noise

    def draw(y: np.ndarray) -> np.ndarray:
        permuted.append(rng.permutation(y))
        noise.append(rng.normal(size=len(y)))
        return permuted[-1]

    shuffled = with_new_y(examples, draw)
    noisy = iter(noise)
    return {"true y": examples, "y shuffled over the points": shuffled,
            "y replaced by noise": with_new_y(examples, lambda y: next(noisy))}


@torch.no_grad()
def per_kind(model, examples: list, per_example: list | None = None) -> list[tuple[str, int, float, float]]:
    """(kind, tokens, mean loss, accuracy) of teacher-forced action tokens, by kind of token; appends
    each example's summed loss and token count to ``per_example`` when given."""
    v = vocabulary()
    total, count, right = np.zeros(6), np.zeros(6), np.zeros(6)
    for i in range(0, len(examples), 64):
        b = collate(examples[i:i + 64], np.random.default_rng(0), with_negatives=False)
        _, memory, _, _, hidden = teacher_forced(model, b)
        keys = model.variable_keys(memory)  # [B, K, d] or None
        target = b.actions[:, 1:]
        sums = np.zeros((len(target), 2))
        for r, j in (target != v.pad).nonzero().tolist():
            t = int(target[r, j])
            group = int(_GROUPS[t])
            kind = 0 if j == 0 else 1 if j == 1 else 4 if group == 0 else 5 if group == 1 else \
                3 if t in (v.plus, v.minus) else 2
            cols = torch.nonzero(_GROUPS == group).squeeze(1)
            logits = model.output_logits(hidden[r, j][None], cols, None if keys is None else keys[r:r + 1])[0]
            local = int(torch.searchsorted(cols, torch.tensor(t)))
            loss = float(-F.log_softmax(logits, -1)[local])
            total[kind] += loss
            count[kind] += 1
            right[kind] += int(logits.argmax()) == local
            sums[r] += (loss, 1)
        if per_example is not None:
            per_example.extend(map(tuple, sums))
    return [(KINDS[k], int(count[k]), total[k] / max(count[k], 1), right[k] / max(count[k], 1)) for k in range(6)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights")
    p.add_argument("--examples", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, info = load_model(args.weights)
    examples = heldout_examples(TrainConfig(data="corpus", val_examples=args.examples))[: args.examples]
    print(f"{args.weights} (step {info.get('steps', '?')}, encoder {model.config.encoder}), "
          f"{len(examples)} held-out in-domain steps")
    print("| data | action loss | minus the loss with the true y | token accuracy |")
    print("|---|---|---|---|")
    sets = variants(examples, args.seed)
    base = None
    for name, exs in sets.items():
        batches = [collate(exs[i:i + 64], np.random.default_rng([args.seed, 99])) for i in range(0, len(exs), 64)]
        m = evaluate_batches(model, batches, torch.device("cpu"))
        base = m["val_action_loss"] if base is None else base
        print(f"| {name} | {m['val_action_loss']:.6f} | {m['val_action_loss'] - base:+.6f} | "
              f"{m['val_token_acc']:.4f} |")
    print()
    print("| action token | tokens | share of the loss | mean loss (nats) | y shuffled | gap | accuracy |")
    print("|---|---|---|---|---|---|---|")
    true_sums: list = []
    shuffled_sums: list = []
    rows = per_kind(model, examples, true_sums)
    shuffled = per_kind(model, sets["y shuffled over the points"], shuffled_sums)
    loss_sum = sum(n * loss for _, n, loss, _ in rows)
    for (kind, n, loss, acc), (_, _, loss_s, _) in zip(rows, shuffled):
        print(f"| {kind} | {n} | {n * loss / loss_sum:.2f} | {loss:.6f} | {loss_s:.6f} | {loss_s - loss:+.6f} | "
              f"{acc:.3f} |")
    # paired: each dataset's summed loss with y shuffled minus with the true y (a dataset's steps
    # share its data, so datasets are the independent units), per token
    t, u = np.array(true_sums), np.array(shuffled_sums)
    cluster: dict[int, int] = {}
    ids = np.array([cluster.setdefault(id(e.X), len(cluster)) for e in examples])
    diff = np.bincount(ids, weights=u[:, 0] - t[:, 0])
    tokens = t[:, 1].sum()
    gap, se = diff.sum() / tokens, np.sqrt(len(diff) * diff.var(ddof=1)) / tokens
    print(f"\nshuffled-y gap of the action loss: {gap:+.6f} nats per token, 95% interval "
          f"[{gap - 1.96 * se:+.6f}, {gap + 1.96 * se:+.6f}] (paired over {len(diff)} datasets)")


if __name__ == "__main__":
    main()
