"""Files and folders of the command line: input checks, the output folder check (never over an
input file, never over an earlier run unless ``--force``) and the saved model."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from dgsr.cli.errors import CLIError

#: The files ``dgsr fit`` writes in ``--out``; a folder holding any of them holds a run.
RUN_FILES = ("front.csv", "model.json", "model.pkl", "front.png")


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


def check_run_folder(folder: Path, inputs: Iterable[Path], force: bool, names: Iterable[str] = RUN_FILES) -> None:
    """Refuse an output folder that holds an earlier run (unless ``force``), or whose run files
    (``names``, besides those of a run of one target) would replace an input file (even with ``force``)."""
    inputs, names = list(inputs), list(dict.fromkeys([*RUN_FILES, *names]))
    for name in names:
        refuse_input_overwrite(folder / name, inputs, "--out")
    held = [name for name in names if (folder / name).exists()]
    if held and not force:
        raise CLIError(f"--out {folder} already holds a run ({', '.join(held)}): pass --force to replace it, "
                       "or choose another --out")


def check_out_given(text: str, option: str = "--out") -> None:
    """Refuse an empty ``--out``: ``Path("")`` is the current folder, which no one means by it."""
    if not text.strip():
        raise CLIError(f"{option} is empty: give a path, or leave {option} out for the default")


def check_writable_folder(folder: Path, option: str) -> None:
    """Check, before a long computation, that files can later be written in ``folder``, without
    creating it: a run that fails or is stopped before it writes leaves no empty folder behind."""
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"{option} {folder} exists and is not a folder")
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:  # made when the files are written
        missing = missing.parent
    if missing.parent.exists() and not missing.parent.is_dir():
        raise CLIError(f"cannot write in {option} folder {folder}: {missing.parent} is a file, not a folder")
    try:
        if folder.exists():
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".dgsr-write-test"):
                pass
        else:  # the first folder to make: made and removed at once, a real test where access() is not (root)
            missing.mkdir()
            missing.rmdir()
    except OSError as err:
        raise CLIError(f"cannot write in {option} folder {folder}: {err.strerror or err}") from None


def check_output_file(path: Path, inputs: Iterable[Path], force: bool, option: str = "--out") -> None:
    """Refuse an output file that is a folder, an input of the command (even with ``force``), or
    an existing file (unless ``force``), each with one line naming ``path``."""
    refuse_input_overwrite(path, inputs, option)
    if path.is_dir():
        raise CLIError(f"{option} {path} is a folder; give a file name, such as {path / 'predictions.csv'}")
    if path.exists() and not force:
        raise CLIError(f"{option} {path} already exists: pass --force to replace it, or choose another {option}")
    check_writable_folder(path.parent, option)


def write_output(path: Path, write: Callable[[IO[Any]], Any], *, text: bool = False) -> None:
    """Write ``path`` atomically (:func:`dgsr.runtime.files.atomic_write`); an OSError (disk full, a
    folder in the way) becomes one line that names ``path``, not the temporary file."""
    from dgsr.runtime.files import atomic_write

    try:
        atomic_write(path, write, text=text)
    except OSError as err:
        raise CLIError(f"cannot write {path}: {err.strerror or err}") from None


def load_fitted_model(path: Path) -> Any:
    """A fitted :class:`~dgsr.SymbolicRegressor` from a file written by ``dgsr fit``: the JSON
    model file (``model.json``, :meth:`~dgsr.SymbolicRegressor.from_file`) or the pickle
    (``model.pkl``), told apart by their first byte, with a clear error for anything else (not to
    be confused with :func:`dgsr.neural.checkpoint.load_model`, which reads policy weights)."""
    from dgsr.estimator.model_file import ModelFileError
    from dgsr.estimator.regressor import SymbolicRegressor

    check_input_file(path, "model")
    with open(path, "rb") as fh:
        first = fh.read(64).lstrip()[:1]
    if first == b"{":  # a JSON object: the model file, whose reader names the problem itself
        try:
            return SymbolicRegressor.from_file(path)
        except ModelFileError as err:
            raise CLIError(str(err)) from None
    not_model = f"{path} is not a model written by `dgsr fit`"
    if first != b"\x80":  # every pickle of protocol 2 or later starts so; text never does
        raise CLIError(f"{not_model} (neither a JSON model file nor a pickle)")
    with open(path, "rb") as fh:
        try:
            est = pickle.load(fh)
        except Exception as err:  # noqa: BLE001 (a damaged or foreign pickle fails in many ways)
            raise CLIError(f"{not_model} ({type(err).__name__}: {err})") from None
    if not isinstance(est, SymbolicRegressor) or not hasattr(est, "expression_"):
        raise CLIError(f"{path} does not hold a fitted dgsr SymbolicRegressor")
    return est
