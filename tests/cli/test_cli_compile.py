"""``dgsr compile``, run as users run it: compiles into an empty cache once, then only loads."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dgsr
from dgsr.core.kernels import compiler

SRC = str(Path(dgsr.__file__).resolve().parents[1])


def _run(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    script = shutil.which("dgsr", path=os.path.dirname(sys.executable))
    command = [script] if script else [sys.executable, "-c",
                                       "import sys; from dgsr.cli import main; sys.exit(main(sys.argv[1:]))"]
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("DGSR_NO_JIT", None)  # the caller's setting only
    env.update(env_extra)
    return subprocess.run([*command, "compile"], env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.timeout(900)
@pytest.mark.skipif(not compiler.AVAILABLE, reason="the compiled kernels are off (no numba or DGSR_NO_JIT)")
def test_compile_fills_an_empty_cache_and_a_second_run_only_loads(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _run({"NUMBA_CACHE_DIR": str(cache)})
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.startswith("compiled the numerical kernels in "), first.stdout
    assert any(cache.rglob("*.nbi"))  # numba's index files: the kernels are on disk
    second = _run({"NUMBA_CACHE_DIR": str(cache)})
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.startswith("the numerical kernels were compiled already: loaded in "), second.stdout


def test_compile_says_so_when_the_kernels_are_off():
    done = _run({"DGSR_NO_JIT": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the compiled kernels are off" in done.stdout
