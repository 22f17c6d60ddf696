"""Files and folders of the command line: the output folder check and the saved model."""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError


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

    if not path.is_file():
        raise CLIError(f"model file not found: {path}")
    with open(path, "rb") as fh:
        try:
            est = pickle.load(fh)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as err:
            raise CLIError(f"{path} is not a model written by `dgsr fit` ({err})") from None
    if not isinstance(est, SymbolicRegressor) or not hasattr(est, "expression_"):
        raise CLIError(f"{path} does not hold a fitted dgsr SymbolicRegressor")
    return est
