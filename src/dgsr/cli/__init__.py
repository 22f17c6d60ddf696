"""The ``dgsr`` command line: one module per subcommand, :func:`main` dispatches."""

from dgsr.cli.app import main

__all__ = ["main"]
