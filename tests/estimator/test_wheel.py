"""The wheel carries the shipped weights, examples and held-out data, and the weights load from it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(240, method="thread")
def test_wheel_contains_and_loads_the_shipped_weights(tmp_path):
    # Built as `pip install .` builds it (isolated build environment from the package index).
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("dgsr-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for needed in ("dgsr/neural/weights/dgsr-small.safetensors", "dgsr/neural/weights/dgsr-small.safetensors.sha256",
                       "dgsr/neural/weights/MODEL_CARD.md", "dgsr/examples/gravity.csv", "dgsr/data/heldout.jsonl.gz",
                       "dgsr/bench/data/feynman/equations.tsv", "dgsr/bench/data/pmlb/MANIFEST.tsv",
                       "dgsr/policies/learned/prior.json"):
            assert needed in names, needed
        zf.extractall(tmp_path / "site")
    # Load the weights from the unpacked wheel, in a fresh interpreter that cannot see the checkout.
    site = tmp_path / "site"
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); "
            "import dgsr, pathlib; from dgsr.neural.policy import NeuralPolicy; "
            "p = NeuralPolicy.from_pretrained(); "
            "from dgsr.policies.learned.policy import LearnedPriorPolicy; LearnedPriorPolicy(); "
            f"assert pathlib.Path(dgsr.__file__).is_relative_to({str(site)!r}), dgsr.__file__; print('ok')")
    # -I: isolated mode, so neither the checkout (cwd, PYTHONPATH) nor an editable install can leak in.
    out = subprocess.run([sys.executable, "-I", "-c", code], check=False, capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
