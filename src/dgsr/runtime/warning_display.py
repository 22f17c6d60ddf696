"""How warnings are shown, changed for a ``with`` block only.

``warnings.showwarning`` is process-wide; dgsr's command line words the estimator's warnings for
its users by replacing it, and a program calling :func:`dgsr.cli.main` must find its own display
again afterwards, even after an exception.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ShowWarning = Callable[..., Any]


@contextmanager
def showing_warnings_with(show: ShowWarning) -> Iterator[None]:
    """Inside the block, warnings are shown by ``show`` (``warnings.showwarning``'s signature; it
    may call the display in place before the block); the previous display is put back when the
    block ends."""
    previous = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous
