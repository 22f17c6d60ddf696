"""Export a pre-training run's weights as the shipped policy, with its model card.

    python bench/training/export.py training/ckpt/small [--dst src/dgsr/neural/weights/dgsr-small.safetensors]
        [--command "dgsr pretrain ..."] [--half]

Reads ``RUN/model.safetensors`` (weights + config + training facts in its metadata) and
``RUN/log.jsonl``, writes the weights to ``--dst`` with a ``.sha256`` beside it, and writes
``MODEL_CARD.md`` next to it. A file over the package's 16 MiB limit is refused before anything is
written; ``--half`` stores the weights in float16 (the ``medium`` preset needs it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from dgsr.neural.checkpoint import file_sha256, load_model, save_model
from dgsr.neural.model_config import PRESETS

ROOT = Path(__file__).resolve().parents[1]
#: CONTRACTS: the shipped weights file is at most 16 MiB
SHIP_LIMIT_BYTES = 16 * 2**20


def _thin(rows: list[dict], n: int) -> list[dict]:
    """About ``n`` rows spread over ``rows``, always with the last one."""
    picked = rows[:: max(1, len(rows) // n)]
    return picked + rows[-1:] if rows and picked[-1] is not rows[-1] else picked


#: The batch shares a run can have besides the dismantling corpus, and how the card describes them.
_SHARES = (
    ("teacher_share", ("; a share {} of each batch labelled instead by the semantic-policy teacher "
                       "(`dgsr.training.teacher`: the semantic policy's first choice on dismantling-path and greedy-rollout "
                       "states, a target that depends on the x-y pairing)")),
    ("paths_share", ("; and a share {} drawn from the steps of semantic-search solution paths "
                     "(`dgsr.training.teacher.search_path_examples`: the shortest path to R² >= 0.99 of an MCTS with the "
                     "semantic policy on a generated training problem, collected ahead of time by "
                     "`bench/training/collect_paths.py`)")),
)


def _shares_text(train_cfg: dict) -> str:
    """The card's sentence on the non-dismantling shares of each batch (empty when there are none)."""
    return "".join(text.format(train_cfg[key]) for key, text in _SHARES if train_cfg.get(key))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--dst", type=Path, default=ROOT / "src/dgsr/neural/weights/dgsr-small.safetensors")
    parser.add_argument("--command", default="")
    parser.add_argument("--hardware", default="", help="the machine, in words (default: as the run recorded it)")
    parser.add_argument("--history", default="", help="Markdown: how the run's starting weights were trained")
    parser.add_argument("--limits", default="", help="Markdown: what the weights do and do not do (measured)")
    parser.add_argument("--half", action="store_true", help="store the weights in float16 (half the bytes)")
    args = parser.parse_args(argv)
    model, info = load_model(args.run / "model.safetensors")
    tensors = model.state_dict().values()
    size = sum(t.numel() * (2 if args.half and t.is_floating_point() else t.element_size()) for t in tensors)
    if size > SHIP_LIMIT_BYTES:
        print(f"error: the weights take {size / 2**20:.1f} MiB, over the {SHIP_LIMIT_BYTES / 2**20:.0f} MiB "
              f"limit of a shipped file; {'use a smaller preset' if args.half else 'export with --half'}",
              file=sys.stderr)
        return 2
    # the preset the run started from (training options such as target_symbols may be added to it)
    preset = next((name for name, fields in PRESETS.items()
                   if all(getattr(model.config, k) == v for k, v in fields.items())), "custom")
    records = [json.loads(line) for line in (args.run / "log.jsonl").read_text().splitlines() if line.strip()]
    evals = [r for r in records if "val_loss" in r]
    info = {**info, "exported": dt.date.today().isoformat()}
    digest = save_model(model, args.dst, info=info, write_sha256_file=True, half=args.half)
    n_params = sum(p.numel() for p in model.parameters())
    last = evals[-1] if evals else {}
    train_cfg = info.get("train_config", {})
    curve = "\n".join(f"| {r['step']} | {r['time'] / 60:.0f} | "
                      f"{r['val_action_loss']:.3f} | {r['val_token_acc']:.3f} | {r['val_critic_acc']:.3f} | "
                      f"{r.get('val_data_gap', float('nan')):+.6f} | {r.get('val_teacher_loss', float('nan')):.3f} | "
                      f"{r.get('val_teacher_gap', float('nan')):+.6f} |" for r in _thin(evals, 12))
    encoder = ("one memory token per variable plus one for y" if model.config.encoder == "variables"
               else "one token per data point")
    pointer = ", a variable pointer from decoder states to the variables' tokens" if model.config.variable_pointer else ""
    card = f"""# {args.dst.stem}: pretrained mutation policy and critic

The default policy of `dgsr.SymbolicRegressor(policy="neural")`, loaded with no network from
`dgsr/neural/weights/{args.dst.name}` (config in the file's metadata; tensor SHA-256 in the
metadata is checked on every load, and the file's SHA-256 against `{args.dst.name}.sha256`
where that file is present).

- **Exported**: {info['exported']}
- **Architecture**: `dgsr.neural.model.PolicyModel`, preset `{preset}`: {json.dumps(model.config.to_dict())}
  ({n_params / 1e6:.2f}M parameters, stored in {'float16' if args.half else 'float32'}; point encoder with {encoder}, expression
  encoder cross-attending to it, action decoder cross-attending to both{pointer}, critic head on
  the expression encoding)
- **Training command**: `{args.command or '(not recorded)'}`
- **Hardware**: {args.hardware or info.get('hardware') or '(not recorded)'}
- **Steps**: {info.get('steps')} optimiser steps in all; this run: {records[-1]['step'] - records[0]['step'] + 1 if records else 0}
  steps of {train_cfg.get('batch_size')} examples, {records[-1]['time'] / 60 if records else 0:.0f} minutes
- **History**: {args.history or '(this run only)'}
- **Optimiser**: AdamW (betas 0.9/0.98, weight decay {train_cfg.get('weight_decay')}), peak learning rate
  {train_cfg.get('lr')}, {train_cfg.get('warmup')} warm-up steps then inverse square root, gradient clipping
  at {train_cfg.get('grad_clip')}; loss = action cross-entropy (each target normalised within its token group:
  mantissa / exponent / other, as constrained decoding samples) + {train_cfg.get('critic_weight')} x critic BCE
- **Data**: `{train_cfg.get('data')}` source: `dgsr.training.corpus.example_stream` (random ground truths from
  `dgsr.training.generator`, 5-25 operators, 1-10 variables, Gaussian-mixture inputs, {train_cfg.get('n_points')}
  points; dismantled by `dgsr.training.dismantle.mutation_path` with mutation size ~{train_cfg.get('mutation_size')};
  held-out expressions excluded){_shares_text(train_cfg)}. Critic targets: states on the dismantling path = 1; the same
  states after a random mutation off the path, or random expressions of similar size = 0.
- **Validation** (held-out in-domain problems of `dgsr.training.corpus.load_heldout("in")`, their dismantling
  steps, {train_cfg.get('val_examples')} examples) at step {last.get('step')}: action loss
  {last.get('val_action_loss')}, token accuracy {last.get('val_token_acc')}, whole-action accuracy
  (teacher forced, every token right) {last.get('val_action_acc')}, critic accuracy {last.get('val_critic_acc')}.
- **Tensor SHA-256**: `{digest}`; **file SHA-256**: `{file_sha256(args.dst)}`

Validation over this run (`val_data_gap`: action loss with y shuffled over the points minus with
the true y, nats per token; the teacher columns: held-out problems labelled by the teacher):

| step | minutes | val action loss | val token acc | val critic acc | shuffled-y gap | teacher loss | teacher gap |
|---|---|---|---|---|---|---|---|
{curve}

## Limits
{args.limits}

Trained on the hardware above: a small fraction of the paper's budget (E2E-scale models see
hundreds of millions of examples). Continue training with
`dgsr pretrain --config {preset} --steps N --out DIR --resume` from a run's `ckpt.pt`. On a GPU,
`--config medium` is the largest preset that ships (float16, `bench/training/export.py --half`). Latency and mutation-validity figures: `docs/notes/policy_bench.md`.
"""
    (args.dst.parent / "MODEL_CARD.md").write_text(card)
    print(f"wrote {args.dst} ({args.dst.stat().st_size / 2**20:.1f} MiB) and {args.dst.parent / 'MODEL_CARD.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
