"""The transformer policy: token vocabulary, model, constrained sampling, the Policy wrapper and
weight files. torch is imported here, in :mod:`dgsr.training` and in :mod:`dgsr.online` only.

torch is an optional dependency (the ``dgsr[neural]`` extra): this package's ``__init__`` imports
none of it, so the torch-free modules (``tokens``, ``model_config``) serve ``dgsr data`` without
it, and :func:`require_torch` turns its absence into one error that says how to install it.
"""

from __future__ import annotations

import importlib.util
import sys

#: How to get torch; named by every error about its absence.
INSTALL_HINT = ('pip install "dgsr[neural]" (or first a torch build for your machine, e.g. '
                "pip install torch==2.13.0 for the CPU, see https://pytorch.org/get-started/locally/)")


class TorchMissingError(ImportError):
    """A feature that needs torch (the neural policy, fine-tuning, pre-training, expert iteration)
    was asked for, and torch is not installed."""


def require_torch(feature: str) -> None:
    """Raise :class:`TorchMissingError` naming ``feature`` and the fix when torch is not importable.

    Looks torch up without importing it: callers import it right after, and a check must not
    spend the seconds torch takes to load.
    """
    if "torch" in sys.modules:
        return
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken install or a blocked import: treat as absent
        found = False
    if not found:
        raise TorchMissingError(f"{feature} needs PyTorch, which is not installed: {INSTALL_HINT}", name="torch")
