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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dgsr.core.expression import Expression
from dgsr.core.operators import arity
from dgsr.neural.checkpoint import load_model, load_training_state, save_model, save_training_state
from dgsr.neural.model import ModelConfig, PolicyModel, symbol_targets
from dgsr.neural.sampling import pad_ids, token_groups
from dgsr.neural.tokens import vocabulary
from dgsr.policies.random import RandomPolicy
from dgsr.search.mutations import Mutation


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (defaults sized for a 2-core CPU)."""

    model: str = "small"  # ModelConfig preset
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 300
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    critic_weight: float = 0.5  # the action loss is the main job; the critic is refined by search
    eval_every: int = 250
    checkpoint_every: int = 250
    val_examples: int = 512
    seed: int = 0
    mutation_size: float = 10
    n_points: int = 100
    #: weight of the mantissa tokens in the action loss: a dismantled constant is a random draw
    #: (near-uniform loss of ~9 nats, a quarter of the total), and the search refits constants
    mantissa_weight: float = 1.0
    #: weight of the auxiliary "which symbols does the ground truth contain" loss (0 = off)
    aux_weight: float = 0.0
    #: "corpus" (dgsr.training.corpus.example_stream) or "generator" (dgsr.training.generator + dgsr.training.dismantle
    #: directly); "auto" resolves to the first available when training starts and is recorded.
    data: str = "auto"
    #: point encoder of a new model ("variables" or "points"; "" = the preset's)
    encoder: str = ""
    #: dismantling steps taken from each generated problem (0 = its whole path): fewer steps per
    #: problem put more distinct datasets in each batch, which is what the point encoder learns from
    steps_per_problem: int = 0
    #: share of each batch labelled by the semantic-policy teacher (:mod:`dgsr.training.teacher`) instead of
    #: the dismantling corpus: targets that depend on the x-y pairing (issue 13, item 3)
    teacher_share: float = 0.0
    #: comma-separated files of semantic-search solution paths (:func:`dgsr.training.teacher.collect_search_paths`,
    #: ``bench/training/collect_paths.py``) and the share of each batch drawn from their steps
    paths: str = ""
    paths_share: float = 0.0
    #: comma-separated path files held out of training: their steps' action loss is logged at each
    #: evaluation (``val_paths_loss``; and with y shuffled, ``val_paths_gap``): continued training
    #: on a few thousand paths can memorise them, and this is the figure that shows it.
    val_paths: str = ""

    def __post_init__(self) -> None:
        for name in ("teacher_share", "paths_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.teacher_share + self.paths_share > 1.0:
            raise ValueError(f"teacher_share + paths_share must be at most 1, got "
                             f"{self.teacher_share} + {self.paths_share}")
        if self.paths_share > 0 and not self.paths:
            raise ValueError("paths_share > 0 needs path files (paths=...)")
        shared = set(filter(None, self.paths.split(","))) & set(filter(None, self.val_paths.split(",")))
        if shared:
            raise ValueError(f"a path file cannot be both trained on and held out: {sorted(shared)}")


@dataclass(frozen=True)
class Example:
    """One supervised example (the fields of ``dgsr.training.corpus.TrainingExample`` that training uses)."""

    X: np.ndarray
    y: np.ndarray
    state: Expression
    mutation: Mutation


@dataclass(frozen=True)
class Batch:
    """Collated examples; examples of one dataset share one encoding of its points."""

    points: torch.Tensor  # [U, P, POINT_WIDTH] the U distinct datasets
    point_mask: torch.Tensor  # [U, P] True = real point
    dataset: torch.Tensor  # [B] index into the U datasets
    states: torch.Tensor  # [B, T]
    actions: torch.Tensor  # [B, L+1]: <bos> action <eos> <pad>...
    negatives: torch.Tensor  # [B, T'] off-path expressions (critic label 0)
    symbols: torch.Tensor | None = None  # [B, len(SYMBOLS)] multi-hot of the ground truth, when known

    def to(self, device: torch.device) -> Batch:
        return Batch(*(None if t is None else t.to(device)
                       for t in (self.points, self.point_mask, self.dataset, self.states, self.actions,
                                 self.negatives, self.symbols)))


# ---------------------------------------------------------------------- data
def resolve_data(config: TrainConfig) -> TrainConfig:
    """``config`` with ``data="auto"`` replaced by the source available now (fixed for resumes)."""
    if config.data != "auto":
        return config
    try:
        from dgsr.training.corpus import example_stream  # noqa: F401
        source = "corpus"
    except ImportError:
        source = "generator"
    return replace(config, data=source)


def _example_stream(seed: int, config: TrainConfig) -> Iterator[Any]:
    if resolve_data(config).data == "generator":
        return _fallback_stream(seed, config)
    from dgsr.training.corpus import example_stream

    return example_stream(seed, mutation_size=config.mutation_size, n_points=config.n_points,
                          steps_per_problem=config.steps_per_problem or None)


def _fallback_stream(seed: int, config: TrainConfig) -> Iterator[Example]:
    """Generator + dismantling directly (used only where :mod:`dgsr.training.corpus` is absent)."""
    from dgsr.training.dismantle import mutation_path
    from dgsr.training.generator import random_problem

    rng = np.random.default_rng(seed)
    while True:
        problem = random_problem(rng, n_points=config.n_points)
        for state, mutation in mutation_path(problem.expression, rng, config.mutation_size):
            yield Example(problem.X, problem.y, state, mutation)


@lru_cache(maxsize=2)
def _path_steps(files: str) -> tuple[Any, ...]:
    """Every step of the solution paths in the comma-separated ``files`` (loaded once per process)."""
    from dgsr.training.teacher import load_search_paths

    steps = tuple(step for path in load_search_paths(*files.split(",")) for step in path)
    if not steps:
        raise ValueError(f"no solution-path steps in {files}")
    return steps


def batch_examples(config: TrainConfig, step: int) -> list[Any]:
    """The training examples of ``step``: a pure function of ``(config.seed, step)`` (and the path
    files); a share ``config.teacher_share`` of them comes from the semantic-policy teacher
    (:mod:`dgsr.training.teacher`), a share ``config.paths_share`` from semantic-search solution paths."""
    n_teacher = round(config.batch_size * config.teacher_share)
    n_paths = round(config.batch_size * config.paths_share)  # > 0 only with path files (__post_init__)
    stream = _example_stream(int(np.random.SeedSequence([config.seed, step]).generate_state(1)[0]), config)
    examples = [next(stream) for _ in range(max(config.batch_size - n_teacher - n_paths, 0))]
    if n_paths:
        steps = _path_steps(config.paths)
        picks = np.random.default_rng([config.seed, step, 3]).integers(len(steps), size=n_paths)
        examples += [steps[i] for i in picks]
    if n_teacher:
        from dgsr.training.teacher import STEPS_PER_PROBLEM, teacher_stream

        taught = teacher_stream(int(np.random.SeedSequence([config.seed, step, 2]).generate_state(1)[0]),
                                mutation_size=config.mutation_size, n_points=config.n_points,
                                steps_per_problem=config.steps_per_problem or STEPS_PER_PROBLEM)
        examples += [next(taught) for _ in range(n_teacher)]
    return examples


def _random_expression_like(expr: Expression, n_features: int, rng: np.random.Generator) -> Expression:
    from dgsr.training.generator import random_tree

    n_ops = max(1, sum(1 for s in expr.symbols if arity(s) > 0))
    for _ in range(20):
        candidate = random_tree(rng, n_ops, n_features)
        if candidate.size <= 60:
            return candidate
    return Expression.variable(int(rng.integers(n_features)))


def negative_for(example: Any, rng: np.random.Generator) -> Expression:
    """An off-path expression for the critic: a wrong mutation of the state, or a random expression."""
    n_features = example.X.shape[1]
    if rng.random() < 0.5:
        target = example.target if hasattr(example, "target") else None
        for proposal in RandomPolicy().propose(n_features, example.state, 4, rng):
            if proposal.mutation == example.mutation:
                continue
            from dgsr.search.mutations import apply_mutation

            child = apply_mutation(example.state, proposal.mutation)
            if target is None or child.key() != target.key():
                return child
    return _random_expression_like(example.state, n_features, rng)


def encode_point_sets(datasets: list[tuple[np.ndarray, np.ndarray]]
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(points [U, P, W], mask [U, P], dataset index [B]) for B ``(X, y)`` pairs, padded to the
    longest; pairs that share the same ``X`` array are encoded once (consecutive examples of one
    dismantling path, or of one search trial, share their data)."""
    v = vocabulary()
    index_of: dict[int, int] = {}
    encoded, dataset = [], []
    for X, y in datasets:
        if id(X) not in index_of:
            index_of[id(X)] = len(encoded)
            encoded.append(v.encode_points(X, y))
        dataset.append(index_of[id(X)])
    n = max(p.shape[0] for p in encoded)
    points = np.full((len(encoded), n, encoded[0].shape[1]), v.pad, dtype=np.int64)
    mask = np.zeros((len(encoded), n), dtype=bool)
    for i, p in enumerate(encoded):
        points[i, :p.shape[0]] = p
        mask[i, :p.shape[0]] = True
    return torch.from_numpy(points), torch.from_numpy(mask), torch.tensor(dataset)


def collate(examples: list[Any], rng: np.random.Generator, *, with_negatives: bool = True) -> Batch:
    """Token tensors of a list of examples (points padded to the longest dataset)."""
    v = vocabulary()
    points, mask, dataset = encode_point_sets([(e.X, e.y) for e in examples])
    states = pad_ids([v.encode_expression(e.state) for e in examples], v.pad)
    actions = pad_ids([[v.bos] + v.encode_action(e.mutation) for e in examples], v.pad)
    negs = [negative_for(e, rng) for e in examples] if with_negatives else [e.state for e in examples]
    negatives = pad_ids([v.encode_expression(x) for x in negs], v.pad)
    symbols = None
    if all(getattr(e, "target", None) is not None for e in examples):
        symbols = torch.tensor([symbol_targets(e.target) for e in examples])
    return Batch(points, mask, dataset, states, actions, negatives, symbols)


# ---------------------------------------------------------------------- loss
_GROUPS = token_groups()


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
    groups = _GROUPS.to(target.device)
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


# ---------------------------------------------------------------------- validation
def with_new_y(examples: list[Any], new_y: Callable[[np.ndarray], np.ndarray]) -> list[Example]:
    """``examples`` with each dataset's y replaced by ``new_y(y)``, called once per dataset (examples
    that share an ``X`` array share their data) so a dataset's examples keep sharing it."""
    replaced: dict[int, np.ndarray] = {}
    for e in examples:
        if id(e.X) not in replaced:
            replaced[id(e.X)] = new_y(np.asarray(e.y))
    return [Example(e.X, replaced[id(e.X)], e.state, e.mutation) for e in examples]


def validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False) -> list[Batch]:
    """Held-out examples (``dgsr.training.corpus.load_heldout`` when available), collated once.

    ``permute_y`` shuffles each dataset's y over its points (same marginal, no relation to x): the
    loss gap between the two sets measures how much the policy uses the data (0 = it ignores y).
    """
    return _collated(_heldout_examples(config)[: config.val_examples], config, size, permute_y)


def _collated(examples: list[Any], config: TrainConfig, size: int, permute_y: bool) -> list[Batch]:
    """Validation batches of ``size`` examples (y shuffled over each dataset's points when ``permute_y``)."""
    if permute_y:
        examples = with_new_y(examples, np.random.default_rng([config.seed, 98]).permutation)
    rng = np.random.default_rng([config.seed, 99])
    return [collate(examples[i:i + size], rng) for i in range(0, len(examples), size)]


def teacher_validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False,
                               n_examples: int = 256) -> list[Batch]:
    """Held-out in-domain problems labelled by the semantic-policy teacher (:mod:`dgsr.training.teacher`).

    The labels are computed on the true y; ``permute_y`` then shuffles y over the points, so the
    loss gap says how much the model's imitation of the teacher rests on the x-y pairing.
    """
    return _collated(_teacher_heldout_examples(config.n_points, config.mutation_size, n_examples), config,
                     size, permute_y)


def path_validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False) -> list[Batch]:
    """Up to ``config.val_examples`` steps of the held-out ``config.val_paths`` files, spread evenly
    over them (so every file and problem kind is represented), collated once."""
    steps = _path_steps(config.val_paths)
    picks = np.unique(np.linspace(0, len(steps) - 1, min(config.val_examples, len(steps))).round().astype(int))
    return _collated([steps[i] for i in picks], config, size, permute_y)


def _teacher_heldout_examples(n_points: int, mutation_size: float, n_examples: int) -> list[Any]:
    from dgsr.training.corpus import load_heldout
    from dgsr.training.teacher import teacher_examples, teacher_policy

    teacher, rng, out = teacher_policy(), np.random.default_rng(8), []
    for problem in load_heldout("in"):
        X, y = problem.X[:n_points], problem.y[:n_points]
        out += [Example(e.X, e.y, e.state, e.mutation)
                for e in teacher_examples(X, y, problem.expression, rng, teacher=teacher,
                                          mutation_size=mutation_size)]
        if len(out) >= n_examples:
            break
    return out[:n_examples]


def _heldout_examples(config: TrainConfig) -> list[Any]:
    try:
        from dgsr.training.corpus import load_heldout

        held = load_heldout("in")  # in-domain: the distribution training draws from
        examples = _examples_from_heldout(held, config)
        if examples:
            return examples
    except (ImportError, FileNotFoundError, TypeError, AttributeError):
        pass
    # A stream seed that training never uses (training seeds come from SeedSequence([seed, step])).
    stream = _example_stream(10**9 + config.seed, config)
    return [next(stream) for _ in range(config.val_examples)]


def _examples_from_heldout(held: Any, config: TrainConfig) -> list[Any]:
    """Examples from whatever :func:`dgsr.training.corpus.load_heldout` returns (examples or problems)."""
    from dgsr.training.dismantle import mutation_path

    items = list(held.values()) if isinstance(held, dict) else list(held)
    if items and isinstance(items[0], list):
        items = [x for sub in items for x in sub]
    out: list[Any] = []
    rng = np.random.default_rng([config.seed, 7])
    for item in items:
        if hasattr(item, "state") and hasattr(item, "mutation"):
            out.append(item)
        elif hasattr(item, "expression") and hasattr(item, "X"):
            X, y = item.X[: config.n_points], item.y[: config.n_points]
            out += [Example(X, y, s, m) for s, m in mutation_path(item.expression, rng, config.mutation_size)]
        if len(out) >= config.val_examples:
            break
    return out


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
          max_seconds: float | None = None, init: str | Path | None = None) -> dict[str, Any]:
    """Train until ``steps`` total steps (or ``max_seconds``); returns the last logged record.

    ``resume`` continues exactly from ``out/ckpt.pt`` (checksum verified; ``log.jsonl`` is cut
    back to the checkpoint's step, so the steps redone after a crash are logged once). ``init``
    (when not resuming) starts from a model file's weights (e.g. the shipped ones) with a fresh
    optimizer, at the step recorded in the file, so the data stream continues where that run
    stopped instead of repeating it. A new run seeds torch from ``config.seed`` (weight
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
        torch.manual_seed(config.seed)  # weight init and dropout: equal seeds give equal runs
    if resume and ckpt_path.is_file():
        state = load_training_state(ckpt_path)
        config = TrainConfig(**state["train_config"])
        model = PolicyModel(ModelConfig.from_dict(state["model_config"])).to(dev)
        model.load_state_dict(state["model"])
        optimizer = _optimizer(model, config)
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        torch.set_rng_state(state["torch_rng"])
        _truncate_log(log_path, step)
    elif init is not None:
        config = resolve_data(config)
        model, info = init_model(init, _wanted_model(config, model_config), dev)
        model.train()
        optimizer = _optimizer(model, config)
        step = int(info.get("steps", 0))
        for group in optimizer.param_groups:
            group["initial_lr"] = config.lr  # what LambdaLR expects when it starts mid-schedule
    else:
        config = resolve_data(config)
        model = PolicyModel(_wanted_model(config, model_config)).to(dev)
        optimizer = _optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, config), last_epoch=step - 1)
    val = validation_batches(config)
    val_permuted = validation_batches(config, permute_y=True)
    val_teacher = teacher_validation_batches(config)
    val_teacher_permuted = teacher_validation_batches(config, permute_y=True)
    val_paths = (path_validation_batches(config), path_validation_batches(config, permute_y=True)) \
        if config.val_paths else None
    start, record = time.time(), {}
    model.train()
    while step < steps:
        if max_seconds is not None and time.time() - start > max_seconds:
            break
        rng = np.random.default_rng([config.seed, step, 1])
        batch = collate(batch_examples(config, step), rng).to(dev)
        parts = losses(model, batch, config.critic_weight, mantissa_weight=config.mantissa_weight,
                       aux_weight=config.aux_weight)
        optimizer.zero_grad(set_to_none=True)
        parts["loss"].backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        if torch.isfinite(grad_norm):  # a non-finite gradient would poison AdamW's moments: skip it
            optimizer.step()
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
            taught_permuted = evaluate_batches(model, val_teacher_permuted, dev, config.critic_weight)["val_action_loss"]
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
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in kept))
    os.replace(tmp, path)


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


def _optimizer(model: PolicyModel, config: TrainConfig) -> torch.optim.AdamW:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.98))


def _checkpoint(out: Path, model: PolicyModel, optimizer: torch.optim.Optimizer, config: TrainConfig,
                step: int, record: dict) -> None:
    save_training_state(out / "ckpt.pt", {
        "step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "model_config": model.config.to_dict(), "train_config": asdict(config),
        "torch_rng": torch.get_rng_state(), "last_record": record})
    info = {"steps": step, "examples": step * config.batch_size, "train_config": asdict(config),
            **{k: v for k, v in record.items() if k.startswith("val_")}}
    save_model(model, out / "model.safetensors", info=info)


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


# ---------------------------------------------------------------------- CLI plug-in
def add_subparser(subparsers: Any) -> None:
    """``dgsr pretrain``: see the module docstring."""
    p = subparsers.add_parser("pretrain", help="pre-train the neural mutation policy on synthetic data",
                              description="Pre-train the mutation policy and critic on the synthetic corpus.")
    p.add_argument("--config", default="small",
                   help="model preset: small (CPU), medium (GPU; ships within 16 MiB in half precision), large (GPU), tiny")
    p.add_argument("--steps", type=int, required=True, help="total optimisation steps (a resume continues to it)")
    p.add_argument("--out", required=True, help="folder for ckpt.pt, model.safetensors and log.jsonl")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if it exists")
    p.add_argument("--init", default=None, metavar="WEIGHTS",
                   help="start from a model file (e.g. the shipped weights) with a fresh optimizer")
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", choices=("auto", "corpus", "generator"), default="auto",
                   help="example source (default: dgsr.training.corpus when installed)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--eval-every", type=int, default=TrainConfig.eval_every)
    p.add_argument("--val-examples", type=int, default=TrainConfig.val_examples, help="held-out examples")
    p.add_argument("--points", type=int, default=TrainConfig.n_points, help="points per dataset")
    p.add_argument("--mutation-size", type=float, default=TrainConfig.mutation_size,
                   help="largest operand B of a dismantling step (paper Table 4: 1, 10 or inf)")
    p.add_argument("--mantissa-weight", type=float, default=TrainConfig.mantissa_weight,
                   help="weight of constant mantissa tokens in the action loss")
    p.add_argument("--aux-weight", type=float, default=TrainConfig.aux_weight,
                   help="weight of the auxiliary 'symbols of the ground truth' loss (adds its head; 0 = off)")
    p.add_argument("--steps-per-problem", type=int, default=TrainConfig.steps_per_problem,
                   help="dismantling steps per generated problem (0 = its whole path; fewer = more datasets per batch)")
    p.add_argument("--encoder", choices=("variables", "points"), default="",
                   help="point encoder (default: the preset's, 'variables'; 'points' = the paper's one token "
                        "per data point); with --init, a file with another encoder keeps all its other weights")
    p.add_argument("--teacher-share", type=float, default=TrainConfig.teacher_share,
                   help="share of each batch labelled by the semantic-policy teacher (0-1; dgsr.training.teacher)")
    p.add_argument("--paths", default="", metavar="FILES",
                   help="comma-separated semantic-search solution-path files (bench/training/collect_paths.py)")
    p.add_argument("--paths-share", type=float, default=TrainConfig.paths_share,
                   help="share of each batch drawn from the --paths steps (0-1)")
    p.add_argument("--val-paths", default="", metavar="FILES",
                   help="comma-separated path files held out of training: their action loss is logged at "
                        "each evaluation (val_paths_loss, and val_paths_gap with y shuffled)")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (with a checkpoint) after this long")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``dgsr pretrain``."""
    if args.threads:
        torch.set_num_threads(args.threads)  # a CLI process of its own: setting it globally is fine
    ModelConfig.preset(args.config)  # fail early on an unknown name
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--eval-every", args.eval_every),
                        ("--val-examples", args.val_examples), ("--points", args.points)):
        if value < 1:
            raise ValueError(f"{flag} must be a positive integer, got {value}")
    if not args.lr > 0:
        raise ValueError(f"--lr must be positive, got {args.lr}")
    if not 0.0 <= args.teacher_share <= 1.0:
        raise ValueError(f"--teacher-share must be in [0, 1], got {args.teacher_share}")
    config = TrainConfig(model=args.config, batch_size=args.batch_size, lr=args.lr, seed=args.seed, data=args.data,
                         eval_every=args.eval_every, checkpoint_every=args.eval_every,
                         val_examples=args.val_examples, n_points=args.points,
                         mutation_size=args.mutation_size, mantissa_weight=args.mantissa_weight,
                         aux_weight=args.aux_weight, encoder=args.encoder,
                         steps_per_problem=args.steps_per_problem, teacher_share=args.teacher_share,
                         paths=args.paths, paths_share=args.paths_share, val_paths=args.val_paths)
    record = train(config, args.out, args.steps, resume=args.resume, device=args.device,
                   max_seconds=None if args.max_minutes is None else args.max_minutes * 60, init=args.init)
    print(json.dumps(record))
    return 0
