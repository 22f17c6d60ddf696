"""Ctrl-C during ``fit``: the first one ends the fit early with the best result reached so far.

After it the rest of ``fit`` skips polishing and simplification, so that a second Ctrl-C, which
no one catches, aborts at once.
"""

from __future__ import annotations

import warnings
from typing import Any


def note_interrupt(est: Any, where: str, consequence: str, stacklevel: int = 4) -> None:
    """Record a first Ctrl-C on ``est`` (``_interrupted``, ``stop_reason_``) and say so; ``stacklevel``
    counts frames from here to the caller of ``fit``."""
    est._interrupted = True
    est.stop_reason_ = "interrupted"
    warnings.warn(f"Interrupted (Ctrl-C) during {where}: returning the best result reached so far; "
                  f"{consequence} and the equations are not simplified. Press Ctrl-C again to abort.",
                  UserWarning, stacklevel=stacklevel)
