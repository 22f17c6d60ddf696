"""Supervised pre-training of the mutation policy and a first critic (Section 3.3, Appendix A).

``dgsr pretrain --config small --steps N --out DIR [--resume]`` trains with cross-entropy on
(dataset, state, next mutation) examples of the synthetic corpus (:mod:`dgsr.training.corpus`: random
ground truths dismantled into mutation paths). The critic gets a sensible start from binary
cross-entropy: positives are states on a dismantling path; negatives are the same states after a
random mutation that leaves the path, and random expressions of similar size.

* AdamW, linear warm-up then inverse-square-root decay (no horizon: training can continue
  across sessions), gradient clipping;
* the batch of step ``s`` is a pure function of ``(seed, s)``, so a resumed run sees exactly the
  data the uninterrupted run would have seen (exact resume);
* validation loss and accuracy on held-out examples every ``eval_every`` steps;
* atomic checkpoints ``DIR/ckpt.pt`` (model, optimizer, scheduler, RNG, step) and the weights as
  ``DIR/model.safetensors``; a JSONL log ``DIR/log.jsonl``; a progress line on stderr.
* CUDA when available, else CPU.

Two more example sources can take a share of each batch, both labelled with data-dependent
targets (issue 13): the semantic-policy teacher's choices (``--teacher-share``) and the steps of
semantic-search solution paths collected ahead of time (``--paths FILES --paths-share S``;
:mod:`dgsr.training.teacher`). ``--val-paths FILES`` scores path files held out of training at each
evaluation.

This module holds the losses and the loop; the settings are :class:`~dgsr.training.pretrain_config.TrainConfig`,
the examples and batches come from :mod:`dgsr.training.batches`, and the command line is
:mod:`dgsr.cli.pretrain`.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from dgsr.neural.checkpoint import load_model, load_training_state, save_model, save_training_state
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.sampling import token_groups
from dgsr.neural.tokens import vocabulary
from dgsr.runtime.files import atomic_write_text
from dgsr.training.batches import (
    Batch,
    path_validation_batches,
    teacher_validation_batches,
    validation_batches,
)
from dgsr.training.optim import adamw, clipped_step
from dgsr.training.prefetch import BatchPrefetcher
from dgsr.training.pretrain_config import TrainConfig, resolve_data


# ---------------------------------------------------------------------- loss
@cache
def _token_groups() -> torch.Tensor:
    # built on first use, not at import: the vocabulary is not needed to import this module
    return token_groups()


def grouped_action_loss(model: PolicyModel, hidden: torch.Tensor, target: torch.Tensor,
                        mantissa_weight: float = 1.0, keys: torch.Tensor | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cross-entropy of ``target`` [B, L] within its token group from decoder states ``hidden`` [B, L, d]
    (mantissa tokens weighted by ``mantissa_weight``; ``keys`` [B, K, d], the examples' variable-pointer
    keys from :meth:`PolicyModel.variable_keys`, add the pointer's scores to x0..x9).

    Returns (mean loss, per-position correctness [B, L] (pads count as right), valid mask [B, L]).
    """
    pad = vocabulary().pad
    keep = target != pad
    groups = _token_groups().to(target.device)
    flat_h, flat_t = hidden[keep], target[keep]  # [N, d], [N]
    flat_keys = None if keys is None else keys[:, None].expand(-1, target.shape[1], -1, -1)[keep]  # [N, K, d]
    tgroup = groups[flat_t]
    total = hidden.new_zeros(())
    right_flat = torch.zeros_like(flat_t, dtype=torch.bool)
    for g in range(3):
        sel = tgroup == g
        if not sel.any():
            continue
        cols = torch.nonzero(groups == g).squeeze(1)  # token ids of the group, ascending
        keys_g = flat_keys[sel] if g == 2 and flat_keys is not None else None
        logits = model.output_logits(flat_h[sel], cols, keys_g)  # [n_g, |group|]
        local = torch.searchsorted(cols, flat_t[sel])
        total = total + F.cross_entropy(logits, local, reduction="sum") * (mantissa_weight if g == 0 else 1.0)
        right_flat[sel] = logits.argmax(-1) == local
    right = torch.ones_like(target, dtype=torch.bool)
    right[keep] = right_flat
    return total / keep.sum().clamp_min(1), right, keep


def teacher_forced(model: PolicyModel, batch: Batch
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The forward pass on ``batch`` with its actions as decoder input: (point encodings of the U
    distinct datasets [U, P, d], their copy per example [B, P, d], its point mask [B, P],
    expression encodings h [B, T, d], decoder states [B, L, d] predicting ``batch.actions[:, 1:]``)."""
    per_dataset = model.encode_points(batch.points, batch.point_mask)
    memory = per_dataset[batch.dataset]
    point_mask = batch.point_mask[batch.dataset]
    h = model.encode_expression(batch.states, memory, point_mask)
    mem, mem_mask = model.decoder_memory(memory, h, batch.states, vocabulary().pad, point_mask)
    return per_dataset, memory, point_mask, h, model.decode_hidden(batch.actions[:, :-1], mem, mem_mask)


def losses(model: PolicyModel, batch: Batch, critic_weight: float = 0.5, *, mantissa_weight: float = 1.0,
           aux_weight: float = 0.0) -> dict[str, torch.Tensor]:
    """Action cross-entropy, critic BCE, their weighted sum, token and whole-action accuracy (and the
    auxiliary symbol loss when ``aux_weight`` > 0 and the model has the head)."""
    per_dataset, memory, point_mask, h, hidden = teacher_forced(model, batch)
    target = batch.actions[:, 1:]
    action, right, keep = grouped_action_loss(model, hidden, target, mantissa_weight, model.variable_keys(memory))
    h_neg = model.encode_expression(batch.negatives, memory, point_mask)
    values = torch.cat([model.value(h, batch.states), model.value(h_neg, batch.negatives)])
    labels = torch.cat([torch.ones(len(target)), torch.zeros(len(target))]).to(values.device)
    critic = F.binary_cross_entropy_with_logits(values, labels)
    with torch.no_grad():
        token_acc = right[keep].float().mean() if keep.any() else torch.tensor(0.0)
        seq_acc = right.all(dim=1).float().mean()
        critic_acc = ((values > 0).float() == labels).float().mean()
    out = {"loss": action + critic_weight * critic, "action_loss": action, "critic_loss": critic,
           "token_acc": token_acc, "action_acc": seq_acc, "critic_acc": critic_acc}
    if aux_weight > 0 and model.config.target_symbols and batch.symbols is not None:
        logits = model.symbol_logits(per_dataset, batch.point_mask)[batch.dataset]  # [B, S]
        aux = F.binary_cross_entropy_with_logits(logits, batch.symbols.to(logits.dtype))
        out["loss"] = out["loss"] + aux_weight * aux
        out["aux_loss"] = aux
    return out


def lr_at(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then inverse square root (Vaswani et al.), as a factor of ``config.lr``."""
    s = step + 1
    return min(s / config.warmup, math.sqrt(config.warmup / s))


@torch.no_grad()
def evaluate_batches(model: PolicyModel, batches: list[Batch], device: torch.device,
                     critic_weight: float = 0.5, aux_weight: float = 0.0) -> dict[str, float]:
    """Example-weighted mean of :func:`losses` over ``batches`` (action loss unweighted, so runs
    with different mantissa weights compare)."""
    model.eval()
    totals: dict[str, float] = {}
    count = 0
    for batch in batches:
        n = len(batch.states)
        for k, v in losses(model, batch.to(device), critic_weight, aux_weight=aux_weight).items():
            totals[k] = totals.get(k, 0.0) + float(v) * n
        count += n
    model.train()
    return {f"val_{k}": v / max(count, 1) for k, v in totals.items()}


# ---------------------------------------------------------------------- training loop
def train(config: TrainConfig, out: str | Path, steps: int, *, resume: bool = False,
          device: str | None = None, model_config: ModelConfig | None = None, progress: bool = True,
          max_seconds: float | None = None, init: str | Path | None = None,
          workers: int = 0) -> dict[str, Any]:
    """Train until ``steps`` total steps (or ``max_seconds``); returns the last logged record.

    ``resume`` continues exactly from ``out/ckpt.pt`` (checksum verified; ``log.jsonl`` is cut
    back to the checkpoint's step, so the steps redone after a crash are logged once). ``init``
    (when not resuming) starts from a model file's weights (e.g. the shipped ones) with a fresh
    optimizer, at the step recorded in the file, so the data stream continues where that run
    stopped instead of repeating it. ``workers`` processes build the coming steps' batches ahead of
    time (:class:`~dgsr.training.prefetch.BatchPrefetcher`); the run is the same for any count. A new run seeds torch from ``config.seed`` (weight
    initialisation, dropout), so equal seeds give identical runs; it refuses an ``out`` that
    already holds a run (``FileExistsError``) rather than mixing two runs' logs.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    ckpt_path = out / "ckpt.pt"
    log_path = out / "log.jsonl"
    step = 0
    if not (resume and ckpt_path.is_file()):
        if ckpt_path.exists() or log_path.exists():
            raise FileExistsError(f"{out} already holds a pre-training run (ckpt.pt or log.jsonl): pass "
                                  "--resume to continue it, or choose another --out")
        # Weight initialisation and dropout draw from torch's global generator (module constructors
        # take none), so this entry point seeds it, and a resume restores it below: passing a
        # torch.Generator instead would change every number a given seed produces.
        torch.manual_seed(config.seed)
    if resume and ckpt_path.is_file():
        state = load_training_state(ckpt_path)
        config = TrainConfig(**state["train_config"])
        model = PolicyModel(ModelConfig.from_dict(state["model_config"])).to(dev)
        model.load_state_dict(state["model"])
        optimizer = adamw(model, config.lr, config.weight_decay)
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        torch.set_rng_state(state["torch_rng"])  # the global generator again (see above): exact resume
        _truncate_log(log_path, step)
    elif init is not None:
        config = resolve_data(config)
        model, info = init_model(init, _wanted_model(config, model_config), dev)
        model.train()
        optimizer = adamw(model, config.lr, config.weight_decay)
        step = int(info.get("steps", 0))
        for group in optimizer.param_groups:
            group["initial_lr"] = config.lr  # what LambdaLR expects when it starts mid-schedule
    else:
        config = resolve_data(config)
        model = PolicyModel(_wanted_model(config, model_config)).to(dev)
        optimizer = adamw(model, config.lr, config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, config), last_epoch=step - 1)
    val = validation_batches(config)
    val_permuted = validation_batches(config, permute_y=True)
    val_teacher = teacher_validation_batches(config)
    val_teacher_permuted = teacher_validation_batches(config, permute_y=True)
    val_paths = (path_validation_batches(config), path_validation_batches(config, permute_y=True)) \
        if config.val_paths else None
    start, record = time.time(), {}
    model.train()
    with BatchPrefetcher(config, step, workers) as coming:
        while step < steps:
            if max_seconds is not None and time.time() - start > max_seconds:
                break
            batch = next(coming).to(dev)
            parts = losses(model, batch, config.critic_weight, mantissa_weight=config.mantissa_weight,
                           aux_weight=config.aux_weight)
            optimizer.zero_grad(set_to_none=True)
            parts["loss"].backward()
            grad_norm, _ = clipped_step(model, optimizer, config.grad_clip)
            scheduler.step()
            step += 1
            record = {"step": step, "time": round(time.time() - start, 2), "lr": scheduler.get_last_lr()[0],
                      "grad_norm": float(grad_norm), **{k: round(float(v.detach()), 5) for k, v in parts.items()}}
            if step % config.eval_every == 0 or step == steps:
                held_out = evaluate_batches(model, val, dev, config.critic_weight, config.aux_weight)
                record.update({k: round(v, 6) for k, v in held_out.items()})
                permuted = evaluate_batches(model, val_permuted, dev, config.critic_weight)
                record["val_data_gap"] = round(permuted["val_action_loss"] - held_out["val_action_loss"], 6)
                taught = evaluate_batches(model, val_teacher, dev, config.critic_weight)["val_action_loss"]
                taught_permuted = evaluate_batches(model, val_teacher_permuted, dev,
                                                   config.critic_weight)["val_action_loss"]
                record["val_teacher_loss"] = round(taught, 6)
                record["val_teacher_gap"] = round(taught_permuted - taught, 6)
                if val_paths is not None:
                    held, shuffled = (evaluate_batches(model, b, dev, config.critic_weight)["val_action_loss"]
                                      for b in val_paths)
                    record["val_paths_loss"] = round(held, 6)
                    record["val_paths_gap"] = round(shuffled - held, 6)
            with open(log_path, "a") as fh:
                fh.write(json.dumps(record) + "\n")
            if progress:
                _progress(record, steps)
            if step % config.checkpoint_every == 0 or step == steps:
                _checkpoint(out, model, optimizer, config, step, record)
    if step % config.checkpoint_every and step != steps:
        _checkpoint(out, model, optimizer, config, step, record)
    if progress:
        print(file=sys.stderr)
    return record


def _truncate_log(path: Path, step: int) -> None:
    """Keep the log lines up to ``step`` (the checkpoint's): later ones are redone by the resume.
    A torn last line (a crash mid-write) is dropped too."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            if int(json.loads(line)["step"]) <= step:
                kept.append(line)
        except (ValueError, KeyError, TypeError):
            continue
    atomic_write_text(path, "".join(f"{line}\n" for line in kept))


def _wanted_model(config: TrainConfig, model_config: ModelConfig | None) -> ModelConfig:
    wanted = model_config or ModelConfig.preset(config.model)
    if config.encoder:
        wanted = replace(wanted, encoder=config.encoder)
    return replace(wanted, target_symbols=True) if config.aux_weight > 0 else wanted


#: parameters of each point encoder (what changes when a file is continued with another encoder)
_ENCODER_PARTS = {"variables": ("pair_mlp.", "pair_out.", "pair_moments.", "y_mlp.", "y_out.", "column_stats.", "slot.", "absent"),
                  "points": ("point_tok.", "point_proj.", "point_num.")}


def init_model(path: str | Path, target: ModelConfig, device: torch.device) -> tuple[PolicyModel, dict]:
    """The model file at ``path``, adapted to ``target``'s point encoder and optional parts.

    * A symbol head or a point-feature layer the file lacks is added; the point-feature layer
      starts as a no-op (last layer at zero), so the trained weights' outputs are unchanged.
    * A different point encoder (e.g. the shipped one-token-per-point file continued with the
      ``"variables"`` encoder) replaces the file's: the new encoder starts from its own
      initialisation and every other weight (self-attention over the memory, expression encoder,
      decoder, critic, embeddings) is kept.
    """
    model, info = load_model(path, device=device)
    old = model.config
    new = replace(old, point_features=old.point_features or target.point_features,
                  target_symbols=old.target_symbols or target.target_symbols, encoder=target.encoder,
                  pair_width=target.pair_width if target.encoder != old.encoder else old.pair_width,
                  variable_pointer=target.encoder == "variables" and (old.variable_pointer or target.variable_pointer))
    if new == old:
        return model, info
    extended = PolicyModel(new).to(device)
    allowed_missing = ("symbol_head", "point_num.", "pointer.")
    allowed_unexpected: tuple[str, ...] = ()
    if new.encoder != old.encoder:
        allowed_missing += _ENCODER_PARTS[new.encoder]
        allowed_unexpected = _ENCODER_PARTS[old.encoder]
    elif new.encoder == "points" and new.point_features and not old.point_features:
        torch.nn.init.zeros_(extended.point_num[2].weight)  # a no-op until trained
        torch.nn.init.zeros_(extended.point_num[2].bias)
    if new.variable_pointer and not old.variable_pointer:
        torch.nn.init.zeros_(extended.pointer.weight)  # a no-op until trained: outputs unchanged
    missing, unexpected = extended.load_state_dict(model.state_dict(), strict=False)
    if any(not k.startswith(allowed_missing) for k in missing) or \
            any(not k.startswith(allowed_unexpected) for k in unexpected):
        raise ValueError(f"cannot extend {path}: missing {missing}, unexpected {unexpected}")
    return extended, info


def _checkpoint(out: Path, model: PolicyModel, optimizer: torch.optim.Optimizer, config: TrainConfig,
                step: int, record: dict) -> None:
    save_training_state(out / "ckpt.pt", {
        "step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "model_config": model.config.to_dict(), "train_config": asdict(config),
        "torch_rng": torch.get_rng_state(), "last_record": record})
    info = {"steps": step, "examples": step * config.batch_size, "train_config": asdict(config),
            "hardware": describe_hardware(next(model.parameters()).device),
            **{k: v for k, v in record.items() if k.startswith("val_")}}
    save_model(model, out / "model.safetensors", info=info)


def describe_hardware(device: torch.device) -> str:
    """The machine a run trained on, in words, for the model card (the device and the CPU cores)."""
    cores = f"{os.cpu_count() or 1} CPU cores, {torch.get_num_threads()} torch threads"
    if device.type == "cuda":
        return f"one {torch.cuda.get_device_name(device)}, {cores}"
    return f"CPU only, {cores}"


def _progress(record: dict, steps: int) -> None:
    width = 30
    done = int(width * record["step"] / max(steps, 1))
    val = (f" val {record['val_action_loss']:.3f} gap {record['val_data_gap']:+.6f}"
           if "val_data_gap" in record else "")
    if "val_paths_loss" in record:
        val += f" paths {record['val_paths_loss']:.3f}"
    line = (f"\r[{'#' * done}{'.' * (width - done)}] {record['step']}/{steps} loss {record['loss']:.3f} "
            f"tok {record['token_acc']:.3f} act {record['action_acc']:.3f} crit {record['critic_acc']:.2f}"
            f"{val} {record['time']:.0f}s")
    print(line, end="", file=sys.stderr, flush=True)
