"""Online updates of the mutation policy M_theta and the critic C_psi (Section 3.2 of the paper).

Each step draws a batch with **equal shares** of mutation and critic samples and weighs the two
objectives **equally**: ``loss = action cross-entropy + critic BCE``. To avoid forgetting
(the paper follows AlphaStar and HTPS here), part of the mutation share is always drawn from
the supervised pre-training corpus (:func:`dgsr.training.corpus.example_stream`); while the mutation
buffer is still empty the whole mutation share comes from the corpus.

The action loss is the pre-training one (:func:`dgsr.training.pretrain.grouped_action_loss` on batches
from :func:`dgsr.training.batches.collate`); the critic loss is a binary cross-entropy against the soft
targets of the critic buffer (1.0 on solution paths, else the MCTS value estimate). The synthetic
examples of step ``s`` are a pure function of ``(seed, s)`` and the buffer draws come from the
trainer's own generator, so a resumed trainer continues exactly (:meth:`OnlineTrainer.state_dict`).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.sampling import pad_ids
from dgsr.neural.tokens import vocabulary
from dgsr.training.batches import collate, encode_point_sets
from dgsr.training.optim import adamw, clipped_step
from dgsr.training.pretrain import grouped_action_loss, teacher_forced

from .buffers import CriticItem, ExpertBuffers


@dataclass(frozen=True)
class TrainerConfig:
    """Settings of the online trainer.

    Attributes
    ----------
    batch_size:
        Samples per step: half mutation samples, half critic samples (Section 3.2).
    synthetic_share:
        Share of the mutation half drawn from the pre-training corpus (0 turns the mixing off).
    lr, weight_decay, grad_clip:
        AdamW settings; the learning rate is below pre-training's: this is fine-tuning.
    steps_per_trial:
        Optimiser steps after each completed trial.
    seed:
        Seeds the buffer draws and the synthetic examples.
    n_points, mutation_size:
        Points per synthetic dataset and the dismantling operand size (as in pre-training).
    """

    batch_size: int = 32
    synthetic_share: float = 0.5
    lr: float = 1e-4
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    steps_per_trial: int = 4
    seed: int = 0
    n_points: int = 100
    mutation_size: float = 10

    def __post_init__(self) -> None:
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be >= 2, got {self.batch_size}")
        if not 0.0 <= self.synthetic_share <= 1.0:
            raise ValueError(f"synthetic_share must be in [0, 1], got {self.synthetic_share}")


@dataclass(frozen=True)
class TrainBatch:
    """The samples of one step: policy examples (buffer + corpus) and critic items."""

    mutation_examples: list[Any]
    critic_items: list[CriticItem]
    n_synthetic: int


def synthetic_examples(seed: int, step: int, n: int, *, n_points: int = 100, mutation_size: float = 10) -> list[Any]:
    """``n`` pre-training examples for step ``step``: a pure function of ``(seed, step)``."""
    if n <= 0:
        return []
    from dgsr.training.corpus import example_stream

    stream = example_stream([seed, 7_919, step], n_points=n_points, mutation_size=mutation_size)
    return [next(stream) for _ in range(n)]


def action_loss(model: PolicyModel, examples: list[Any], rng: np.random.Generator,
                device: torch.device) -> torch.Tensor:
    """Pre-training's grouped action cross-entropy on ``examples`` (objects with X, y, state, mutation)."""
    batch = collate(examples, rng, with_negatives=False).to(device)
    _, memory, _, _, hidden = teacher_forced(model, batch)  # hidden [B, L, d]
    loss, _, _ = grouped_action_loss(model, hidden, batch.actions[:, 1:], keys=model.variable_keys(memory))
    return loss


def critic_loss(model: PolicyModel, items: list[CriticItem], device: torch.device) -> torch.Tensor:
    """Binary cross-entropy of the critic's logits against the soft targets in [0, 1]."""
    points, mask, dataset = (t.to(device) for t in encode_point_sets([(it.points.X, it.points.y) for it in items]))
    memory = model.encode_points(points, mask)[dataset]
    point_mask = mask[dataset]
    v = vocabulary()
    tokens = pad_ids([v.encode_expression(it.expression) for it in items], v.pad, device)  # [B, T]
    h = model.encode_expression(tokens, memory, point_mask)
    logits = model.value(h, tokens)  # [B]
    targets = torch.tensor([it.target for it in items], dtype=logits.dtype, device=device)
    return F.binary_cross_entropy_with_logits(logits, targets)


class OnlineTrainer:
    """Owns the model being fine-tuned, its optimiser and the two buffers.

    Parameters
    ----------
    model:
        The policy/critic model (updated in place; searches in the same process see every step).
    config:
        :class:`TrainerConfig`.
    buffers:
        The expert-iteration buffers (new ones by default).
    device:
        Torch device of the updates.
    """

    def __init__(self, model: PolicyModel, config: TrainerConfig | None = None, *,
                 buffers: ExpertBuffers | None = None, device: str | torch.device = "cpu"):
        self.config = config or TrainerConfig()
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.buffers = buffers if buffers is not None else ExpertBuffers()
        self.optimizer = adamw(model, self.config.lr, self.config.weight_decay)
        self.rng = np.random.default_rng([self.config.seed, 4_231])
        self.steps = 0
        self.skipped = 0  # steps whose gradient was not finite

    @property
    def version(self) -> int:
        """Weights version: the number of optimiser steps taken."""
        return self.steps

    def make_batch(self) -> TrainBatch:
        """Equal mutation and critic shares; corpus examples fill the mutation share's synthetic part."""
        c = self.config
        half = c.batch_size // 2
        n_buffer = 0 if not len(self.buffers.mutations) else half - round(half * c.synthetic_share)
        n_synth = half - n_buffer if c.synthetic_share > 0 else 0
        mutation = self.buffers.mutations.sample(n_buffer, self.rng)
        synth = synthetic_examples(c.seed, self.steps, n_synth, n_points=c.n_points, mutation_size=c.mutation_size)
        critic = self.buffers.critic.sample(half, self.rng)
        return TrainBatch(list(mutation) + synth, critic, len(synth))

    def losses(self, batch: TrainBatch, rng: np.random.Generator | None = None) -> dict[str, torch.Tensor]:
        """``loss`` (= action + critic, equal weights), ``action_loss`` and ``critic_loss``."""
        rng = rng if rng is not None else np.random.default_rng(0)
        zero = torch.zeros((), device=self.device)
        action = action_loss(self.model, batch.mutation_examples, rng, self.device) \
            if batch.mutation_examples else zero
        critic = critic_loss(self.model, batch.critic_items, self.device) if batch.critic_items else zero
        return {"loss": action + critic, "action_loss": action, "critic_loss": critic}

    @torch.no_grad()
    def evaluate(self, batch: TrainBatch) -> dict[str, float]:
        """The losses of ``batch`` without updating anything."""
        was_training = self.model.training
        self.model.eval()
        out = {k: float(v) for k, v in self.losses(batch).items()}
        self.model.train(was_training)
        return out

    def step(self, batch: TrainBatch | None = None) -> dict[str, float]:
        """One optimiser step on ``batch`` (default: a new one); returns the losses before it."""
        batch = batch if batch is not None else self.make_batch()
        if not batch.mutation_examples and not batch.critic_items:
            return {}
        self.model.train()
        try:
            parts = self.losses(batch)
            self.optimizer.zero_grad(set_to_none=True)
            parts["loss"].backward()
            norm, stepped = clipped_step(self.model, self.optimizer, self.config.grad_clip, parts["loss"])
            self.skipped += not stepped
        finally:
            self.model.eval()  # the searches sharing this model sample in eval mode
        self.steps += 1
        return {k: float(v.detach()) for k, v in parts.items()} | {"grad_norm": float(norm)}

    def train(self, n_steps: int | None = None) -> dict[str, float]:
        """``n_steps`` steps (default ``config.steps_per_trial``); the mean of their losses."""
        n = self.config.steps_per_trial if n_steps is None else n_steps
        records = [r for r in (self.step() for _ in range(n)) if r]
        if not records:
            return {}
        return {k: float(np.mean([r[k] for r in records])) for k in records[0]}

    def weights(self) -> tuple[int, dict[str, torch.Tensor]]:
        """``(version, CPU state dict)``: what search workers load between trials."""
        return self.version, {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """A copy (nothing shared with the live trainer) of everything :meth:`load_state_dict` needs."""
        return {"model": {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()},
                "model_config": self.model.config.to_dict(),
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "rng": self.rng.bit_generator.state, "steps": self.steps, "skipped": self.skipped,
                "config": asdict(self.config), "buffers": self.buffers.state_dict()}  # items are immutable

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]
        self.steps = int(state["steps"])
        self.skipped = int(state.get("skipped", 0))
        self.buffers.load_state_dict(state["buffers"])

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], device: str | torch.device = "cpu") -> OnlineTrainer:
        """A trainer rebuilt from :meth:`state_dict` (model, optimiser, buffers, RNG, step)."""
        model = PolicyModel(ModelConfig.from_dict(state["model_config"]))
        buffers = ExpertBuffers()
        trainer = cls(model, TrainerConfig(**state["config"]), buffers=buffers, device=device)
        trainer.load_state_dict(state)
        return trainer
