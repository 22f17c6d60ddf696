"""The ``dgsr`` command line: the argument parser and :func:`main`, which dispatches to a subcommand.

Each built-in subcommand is a module of its own: ``dgsr fit`` (:mod:`dgsr.cli.fit`: a symbolic
regressor on a CSV/TSV file, the front printed, ``front.csv``, ``model.json`` and ``model.pkl`` written),
``dgsr predict`` (:mod:`dgsr.cli.predict`: a saved model applied to a table) and ``dgsr example``
(:mod:`dgsr.cli.example`: the bundled datasets). Errors in files, columns or data are printed
as one line (``dgsr: error: ...``, exit status 2), never as a traceback. Exit statuses: 0 done,
1 an unexpected error (a bug: one line too), 2 a usage, file or data error, 130 interrupted
(``dgsr fit`` still writes its best result), 141 the reader of stdout went away (``| head``;
``dgsr fit`` still writes every file), 143 terminated by SIGTERM (as 130: ``dgsr fit`` writes its
best result).

Plug-in commands
----------------
Other modules add subcommands without this file knowing their options. Each module listed in
:data:`PLUGINS` (``command name -> module``) may define::

    def add_subparser(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser("bench", help="...")
        parser.add_argument(...)
        parser.set_defaults(func=run)   # run(args: argparse.Namespace) -> int | None

A subcommand's module (built-in or plug-in) is imported only when its command is run:
``dgsr --help`` and ``dgsr --version`` list the commands from :data:`SUMMARIES` without importing
them (numba, sympy and torch take seconds to load). A plug-in without a summary is imported for
the listing; a module that does not exist yet (ImportError) or has no ``add_subparser``
(``add_subparsers`` is accepted too) is skipped, so the CLI works with any subset installed.
Its handler may raise :class:`~dgsr.cli.errors.CLIError` (or ``ValueError``/``OSError``) for a
one-line error message. A new subcommand is one line in :data:`PLUGINS` (and one in
:data:`SUMMARIES`, to keep ``dgsr --help`` from importing it).
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

from dgsr.cli.errors import CLIError
from dgsr.cli.streams import silence_stdout
from dgsr.neural import TorchMissingError
from dgsr.runtime.interrupts import is_interrupt, raised_as
from dgsr.runtime.termination import Terminated, sigterm_as_interrupt
from dgsr.runtime.warning_display import showing_warnings_with

__all__ = ["BUILTINS", "PLUGINS", "SUMMARIES", "CLIError", "build_parser", "main"]

#: The built-in subcommands, one module each (``add_subparser`` and a handler), in help order.
BUILTINS: dict[str, str] = {
    "fit": "dgsr.cli.fit",
    "predict": "dgsr.cli.predict",
    "example": "dgsr.cli.example",
}
#: Subcommands provided by other modules, imported lazily (see the module docstring).
PLUGINS: dict[str, str] = {
    "bench": "dgsr.bench.cli",
    "compile": "dgsr.cli.compile_kernels",
    "data": "dgsr.cli.data",
    "pretrain": "dgsr.cli.pretrain",
    "search": "dgsr.cli.search",
}
#: One line per command for ``dgsr --help``, so that listing the commands imports none of them
#: (each module's own ``help=`` is what ``dgsr COMMAND --help`` shows).
SUMMARIES: dict[str, str] = {
    "fit": "find formulas that fit a CSV/TSV file",
    "predict": "apply a saved model to a CSV/TSV file",
    "example": "list or show the bundled example datasets",
    "bench": "run the SRBench-style benchmark or write its report",
    "compile": "compile the numerical kernels now (once after installing; e.g. in a container build)",
    "data": "synthetic pre-training data: samples, held-out set",
    "pretrain": "pre-train the neural mutation policy on synthetic data",
    "search": "search several datasets at once while the policy learns (expert iteration)",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dgsr`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything, the subcommand's imports and the parsing included, runs inside the handlers:
    # a Ctrl-C or SIGTERM while scipy loads is one line too, never a traceback.
    with sigterm_as_interrupt():
        try:
            parser = build_parser(argv)
            args = parser.parse_args(argv)
            if getattr(args, "func", None) is None:
                parser.print_help()
                return 0
            with warnings.catch_warnings(), showing_warnings_with(_show_warning):
                status = args.func(args)
            sys.stdout.flush()  # a reader that left is met here, not in the interpreter's last flush
            return int(status or 0)
        except KeyboardInterrupt as err:
            return _interrupted(err)
        except BrokenPipeError:  # `dgsr predict ... | head`: the reader left; stop quietly, as Unix tools do
            silence_stdout()
            return 141  # 128 + SIGPIPE, the status of a Unix tool killed by the broken pipe
        except (CLIError, ValueError, OSError, KeyError, IndexError, pickle.UnpicklingError,
                TorchMissingError) as err:  # torch absent: the one line names the install command
            message = err.args[0] if isinstance(err, KeyError) and err.args else err
            print(f"dgsr: error: {message}", file=sys.stderr)
            return 2
        except Exception as err:  # a bug: still one line (DGSR_TRACEBACK=1 shows where)
            if is_interrupt(err):  # a Ctrl-C that arrived while compiled code was returning
                return _interrupted(err)
            if os.environ.get("DGSR_TRACEBACK"):
                raise
            print(f"dgsr: error: {type(err).__name__}: {err} (set DGSR_TRACEBACK=1 for the traceback)",
                  file=sys.stderr)
            return 1


def _interrupted(err: BaseException) -> int:
    """The one line and the status of a run stopped by Ctrl-C (130) or SIGTERM (143)."""
    if raised_as(err, Terminated):
        print("dgsr: terminated (SIGTERM)", file=sys.stderr)
        return 143  # 128 + SIGTERM
    print("dgsr: interrupted", file=sys.stderr)
    return 130  # 128 + SIGINT


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser: the command that ``argv`` names in full; every command as a one-line
    stub for help, ``--version`` or a typo (nothing heavy imported)."""
    parser = _Parser(prog="dgsr", description="Symbolic regression with DGSR-MCTS.")
    parser.add_argument("--version", action="version", version=f"dgsr {_version()}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in BUILTINS:
        importlib.import_module(BUILTINS[command]).add_subparser(sub)
    elif command in PLUGINS:
        _load_plugin(sub, PLUGINS[command])
    else:  # help, --version, or a typo: list the commands
        for name in (*BUILTINS, *PLUGINS):
            if name in SUMMARIES:
                sub.add_parser(name, help=SUMMARIES[name])
            else:
                _load_plugin(sub, PLUGINS[name])
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


def _show_warning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                  line: Any = None) -> None:
    # Warnings are for the user here, not for a developer: no file and line number.
    print(f"dgsr: warning: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
