"""Standard output that may go away: ``dgsr ... | head`` closes the pipe while we still write."""

from __future__ import annotations

import os
import sys
from typing import Any


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush meets no broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (captured, closed)
        pass


def stdout_console(**kwargs: Any) -> Any:
    """A rich console on stdout whose closed pipe raises ``BrokenPipeError``: rich's own
    reaction is ``SystemExit(1)``, which would skip the command's handler (exit status 141)
    and whatever the command still had to do."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more to write there
            raise BrokenPipeError("stdout was closed")

    return _Console(**kwargs)
