"""Atomic checkpoints of the whole learning state, so that ``--resume`` continues exactly.

One file (``OUT/state.pt``) holds the trainer's state (weights, model config, optimiser, both
buffers, its RNG and step count) and the controller's (datasets, queue, trials to re-run, best
expressions per dataset, RNG states, trial counters, log). It is written with a temporary file
and a rename (:func:`dgsr.neural.checkpoint.save_training_state`), so a crash during the write leaves
the previous checkpoint intact. Trials in flight when the state is saved are stored as trials to
run again, so nothing is lost; in the one-process backend the state is saved between trials, so
a resumed run makes exactly the decisions the uninterrupted run would have made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from dgsr.neural.checkpoint import load_training_state, save_training_state

FORMAT = "dgsr-online-1"
STATE_FILE = "state.pt"


def save_state(path: str | os.PathLike, *, trainer: dict[str, Any] | None, controller: dict[str, Any],
               extra: dict[str, Any] | None = None) -> Path:
    """Write the learning state atomically; ``trainer`` is None for a frozen-policy run."""
    path = Path(path)
    state = {"format": FORMAT, "trainer": trainer, "controller": controller, "extra": dict(extra or {}),
             "torch_rng": torch.get_rng_state()}
    save_training_state(path, state)
    return path


def load_state(path: str | os.PathLike) -> dict[str, Any]:
    """Read a state written by :func:`save_state` (raises ``FileNotFoundError`` or ``CheckpointError``)."""
    from dgsr.neural.checkpoint import CheckpointError

    state = load_training_state(path, weights_only=False)  # the search's own objects: trusted input
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a dgsr online-learning state")
    return state
