"""Writing files so that a crash never leaves half of one: the one home of dgsr's atomic writes.

Every file dgsr writes for a user or for a resume (models, weights, fronts, logs, checkpoints)
goes through :func:`atomic_write`: the content goes to a temporary file in the same folder, which
then replaces the target in one ``os.replace``. A reader sees the old file or the new one, never
a torn one, and an exception (or Ctrl-C) during the write leaves the old file as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def atomic_write(path: str | os.PathLike, write: Callable[[IO[Any]], Any], *, text: bool = False,
                 mode: int = 0o644) -> Path:
    """Write ``path`` through ``write(file_object)`` atomically; returns the path.

    ``text`` opens the temporary file in text mode (newline="" so CSV writers control line
    ends). ``mode`` is applied before the rename (mkstemp makes 0600 files; ours are shared).
    """
    return atomic_write_path(path, lambda tmp: _write_open(tmp, write, text), mode=mode)


def atomic_write_path(path: str | os.PathLike, write: Callable[[str], Any], *, mode: int = 0o644) -> Path:
    """Like :func:`atomic_write` for writers that take a file name (``torch.save``, safetensors)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write a string to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text), text=True)


def _write_open(tmp: str, write: Callable[[IO[Any]], Any], text: bool) -> None:
    with open(tmp, "w" if text else "wb", **({"newline": ""} if text else {})) as fh:
        write(fh)


def safe_file_name(name: str) -> str:
    """``name`` with every character but letters, digits and ``-_.`` replaced by ``_`` (a dataset
    name as a file name; ``dataset`` if nothing is left)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "dataset"
