"""The ``dgsr`` command line: the argument parser and :func:`main`, which dispatches to a subcommand.

Each built-in subcommand is a module of its own: ``dgsr fit`` (:mod:`dgsr.cli.fit`: a symbolic
regressor on a CSV/TSV file, the front printed, ``front.csv`` and ``model.pkl`` written),
``dgsr predict`` (:mod:`dgsr.cli.predict`: a saved model applied to a table) and ``dgsr example``
(:mod:`dgsr.cli.example`: the bundled datasets). Errors in files, columns or data are printed
as one line (``dgsr: error: ...``, exit status 2), never as a traceback. Exit statuses: 0 done,
1 an unexpected error (a bug: one line too), 2 a usage, file or data error, 130 interrupted
(``dgsr fit`` still writes its best result), 141 the reader of stdout went away (``| head``).

Plug-in commands
----------------
Other modules add subcommands without this file knowing their options. Each module listed in
:data:`PLUGINS` (``command name -> module``) may define::

    def add_subparser(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser("bench", help="...")
        parser.add_argument(...)
        parser.set_defaults(func=run)   # run(args: argparse.Namespace) -> int | None

A plug-in is imported only when its command is run, or for ``dgsr --help``; a module that does
not exist yet (ImportError) or has no ``add_subparser`` (``add_subparsers`` is accepted
too) is skipped, so the CLI works with any
subset installed. Its handler may raise :class:`~dgsr.cli.errors.CLIError` (or
``ValueError``/``OSError``) for a one-line error message. A new subcommand is one line in
:data:`PLUGINS`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pickle
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from dgsr.cli import example, fit, predict
from dgsr.cli.errors import CLIError
from dgsr.core.interrupts import is_interrupt

__all__ = ["PLUGINS", "CLIError", "build_parser", "main"]

#: The built-in subcommands, one module each (``add_subparser`` and a handler), in help order.
BUILTIN_COMMANDS = (fit, predict, example)
#: Subcommands provided by other modules, imported lazily (see the module docstring).
PLUGINS: dict[str, str] = {
    "bench": "dgsr.bench.cli",
    "compile": "dgsr.cli.compile_kernels",
    "data": "dgsr.cli.data",
    "pretrain": "dgsr.cli.pretrain",
    "search": "dgsr.cli.search",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dgsr`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            status = args.func(args)
        return int(status or 0)
    except KeyboardInterrupt:
        print("dgsr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `dgsr predict ... | head`: the reader left; stop quietly, as Unix tools do
        _silence_stdout()
        return 141  # 128 + SIGPIPE, the status of a Unix tool killed by the broken pipe
    except (CLIError, ValueError, OSError, KeyError, IndexError, pickle.UnpicklingError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"dgsr: error: {message}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: still one line (DGSR_TRACEBACK=1 shows where)
        if is_interrupt(err):  # a Ctrl-C that arrived while compiled code was returning
            print("dgsr: interrupted", file=sys.stderr)
            return 130
        if os.environ.get("DGSR_TRACEBACK"):
            raise
        print(f"dgsr: error: {type(err).__name__}: {err} (set DGSR_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return 1


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser: built-in commands, plus the plug-in that ``argv`` asks for (all for help)."""
    parser = _Parser(prog="dgsr", description="Symbolic regression with DGSR-MCTS.")
    parser.add_argument("--version", action="version", version=f"dgsr {_version()}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for builtin in BUILTIN_COMMANDS:
        builtin.add_subparser(sub)
    command = next((a for a in argv if not a.startswith("-")), None)
    builtin_names = {b.__name__.rsplit(".", 1)[-1] for b in BUILTIN_COMMANDS}
    every = command is None or (command not in PLUGINS and command not in builtin_names)  # help, or a typo
    for name, module in PLUGINS.items():
        if every or command == name:
            _load_plugin(sub, module)
    return parser


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line that points at ``--help`` (not the whole usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dgsr: error: {message} (see `{self.prog} --help`)\n")


def _version() -> str:
    """The version of the code that runs (``dgsr.__version__``, kept equal to pyproject's)."""
    from dgsr import __version__

    return __version__


def _load_plugin(sub: Any, module: str) -> None:
    """Let ``module`` add its subcommand to ``sub``; a module that cannot be imported adds none."""
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return  # not written / not installed yet: the command is simply absent
    hook = getattr(mod, "add_subparser", None) or getattr(mod, "add_subparsers", None)
    if callable(hook):
        hook(sub)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush meets no broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (captured, closed)
        pass


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    # Warnings are for the user here, not for a developer: no file and line number.
    print(f"dgsr: warning: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
