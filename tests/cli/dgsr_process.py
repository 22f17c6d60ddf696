"""``dgsr`` run in a fresh process as the user runs it, on this checkout's sources."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import dgsr

SRC = str(Path(dgsr.__file__).resolve().parents[1])


def dgsr_command() -> list[str]:
    """``dgsr`` as the user runs it: the console script beside this interpreter, else its entry point."""
    script = shutil.which("dgsr", path=os.path.dirname(sys.executable))
    if script:
        return [script]
    return [sys.executable, "-c", "import sys; from dgsr.cli import main; sys.exit(main(sys.argv[1:]))"]


def dgsr_env() -> dict[str, str]:
    """This environment with this checkout's sources first and no traceback switch."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DGSR_TRACEBACK", None)
    return env


def run_dgsr(*argv: str, cwd: Any, timeout: float = 280, **kwargs: Any) -> subprocess.CompletedProcess:
    """``dgsr argv...`` in a fresh process, its output captured as text."""
    return subprocess.run([*dgsr_command(), *argv], check=False, capture_output=True, text=True, cwd=cwd,
                          env=dgsr_env(), timeout=timeout, **kwargs)


def run_python(code: str, timeout: float = 200) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh process on this checkout's sources, its output captured as text."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, "PYTHONPATH": SRC})
