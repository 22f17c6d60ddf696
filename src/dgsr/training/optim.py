"""The optimiser settings that pre-training and online fine-tuning share."""

from __future__ import annotations

import torch
from torch import nn


def adamw(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings only (biases, norms and single vectors are
    not decayed), betas (0.9, 0.98) as for transformers."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98))


def clipped_step(model: nn.Module, optimizer: torch.optim.Optimizer, grad_clip: float,
                 *also_finite: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """Clip the gradients to norm ``grad_clip`` and take the optimiser step, unless the norm (or one
    of ``also_finite``) is not finite: one such step would poison AdamW's moments for good.

    Returns (the gradient norm before clipping, whether the step was taken).
    """
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    finite = bool(torch.isfinite(norm)) and all(bool(torch.isfinite(t)) for t in also_finite)
    if finite:
        optimizer.step()
    return norm, finite
