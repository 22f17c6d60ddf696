"""Files and folders of the command line: input checks, the output folder check (never over an
input file, never over an earlier run unless ``--force``) and the saved model."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError

#: The files ``dgsr fit`` writes in ``--out``; a folder holding any of them holds a run.
RUN_FILES = ("front.csv", "model.pkl", "front.png")


def check_input_file(path: Path, what: str) -> None:
    """A readable file: CLIError naming the problem (missing, a folder) otherwise."""
    if path.is_dir():
        raise CLIError(f"{path} is a folder, not a {what} file")
    if not path.is_file():
        raise CLIError(f"{what} file not found: {path}")


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (links and relative paths included)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_input_overwrite(target: Path, inputs: Iterable[Path], option: str) -> None:
    """CLIError when writing ``target`` would replace one of the ``inputs`` the user gave."""
    for source in inputs:
        if same_file(target, source):
            raise CLIError(f"{option} {target} is an input file of this command; choose another {option}")


def check_run_folder(folder: Path, inputs: Iterable[Path], force: bool) -> None:
    """Refuse an output folder that holds an earlier run (unless ``force``), or whose run files
    would replace an input file (even with ``force``)."""
    inputs = list(inputs)
    for name in RUN_FILES:
        refuse_input_overwrite(folder / name, inputs, "--out")
    held = [name for name in RUN_FILES if (folder / name).exists()]
    if held and not force:
        raise CLIError(f"--out {folder} already holds a run ({', '.join(held)}): pass --force to replace it, "
                       "or choose another --out")


def check_writable_folder(folder: Path, option: str) -> None:
    """Create ``folder`` if needed and check that a file can be written in it (CLIError if not)."""
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"{option} {folder} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".dgsr-write-test"):
            pass
    except OSError as err:
        raise CLIError(f"cannot write in {option} folder {folder}: {err.strerror or err}") from None


def load_fitted_model(path: Path) -> Any:
    """Unpickle a fitted :class:`~dgsr.SymbolicRegressor` written by ``dgsr fit``, with a clear
    error for anything else (not to be confused with :func:`dgsr.neural.checkpoint.load_model`,
    which reads policy weights)."""
    from dgsr.estimator.regressor import SymbolicRegressor

    check_input_file(path, "model")
    not_model = f"{path} is not a model written by `dgsr fit`"
    with open(path, "rb") as fh:
        if fh.read(1) != b"\x80":  # every pickle of protocol 2 or later starts so; text never does
            raise CLIError(f"{not_model} (it is not a pickle)")
        fh.seek(0)
        try:
            est = pickle.load(fh)
        except Exception as err:  # noqa: BLE001 (a damaged or foreign pickle fails in many ways)
            raise CLIError(f"{not_model} ({type(err).__name__}: {err})") from None
    if not isinstance(est, SymbolicRegressor) or not hasattr(est, "expression_"):
        raise CLIError(f"{path} does not hold a fitted dgsr SymbolicRegressor")
    return est
