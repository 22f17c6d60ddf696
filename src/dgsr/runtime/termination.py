"""SIGTERM as a first Ctrl-C: a batch scheduler's time limit (SIGTERM, then SIGKILL after a
grace period) should end ``dgsr fit`` the way a user's Ctrl-C does, with the best result written.

The handler is installed only for the ``with`` block and the previous one restored after it
(also after an exception), so that a program calling :func:`dgsr.cli.main` keeps its own
handling of SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where a Ctrl-C's ``KeyboardInterrupt`` would be: everything that turns a
    first Ctrl-C into "stop and keep the best so far" treats it the same way."""


@dataclass
class Termination:
    """What :func:`sigterm_as_interrupt` saw: ``received`` turns True at the first SIGTERM."""

    received: bool = False


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[Termination]:
    """While the block runs, SIGTERM raises :class:`Terminated` (in the main thread only: Python
    delivers signals there, and elsewhere a handler cannot be installed)."""
    term = Termination()
    if threading.current_thread() is not threading.main_thread():
        yield term
        return

    def raise_terminated(signum: int, frame: object) -> None:
        term.received = True
        raise Terminated

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield term
    finally:
        # None: a handler installed from C; SIG_DFL is the closest we can put back.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
