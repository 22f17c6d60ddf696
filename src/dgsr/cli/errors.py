"""The one error type of the command line: reported as one line, without a traceback."""

from __future__ import annotations


class CLIError(Exception):
    """An error reported to the user as one line (``dgsr: error: ...``, exit status 2)."""
