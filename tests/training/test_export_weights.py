"""bench/training/export.py: the shipped-weights export, its half-precision option and the size limit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from dgsr.neural.checkpoint import load_model, save_model
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "training" / "export.py"

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _module():
    spec = importlib.util.spec_from_file_location("dgsr_export_weights", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    run = tmp_path / "run"
    run.mkdir()
    save_model(PolicyModel(ModelConfig.preset("tiny")), run / "model.safetensors",
               info={"steps": 3, "hardware": "one Test GPU 9000, 4 CPU cores, 1 torch threads"})
    (run / "log.jsonl").write_text(json.dumps({"step": 3, "time": 60.0, "val_loss": 1.0, "val_action_loss": 1.0,
                                               "val_token_acc": 0.5, "val_critic_acc": 0.5}) + "\n")
    return run


def test_half_export_writes_float16_weights_and_names_the_preset(run_dir, tmp_path):
    export = _module()
    full, half = tmp_path / "full" / "dgsr-x.safetensors", tmp_path / "half" / "dgsr-x.safetensors"
    full.parent.mkdir()
    half.parent.mkdir()
    assert export.main([str(run_dir), "--dst", str(full)]) == 0
    assert export.main([str(run_dir), "--dst", str(half), "--half"]) == 0
    assert half.stat().st_size < 0.6 * full.stat().st_size
    assert load_model(half)[0].config == load_model(full)[0].config  # the checksums hold
    card = (half.parent / "MODEL_CARD.md").read_text()
    assert card.startswith("# dgsr-x:") and "preset `tiny`" in card and "stored in float16" in card


def test_a_file_over_the_limit_is_refused_before_anything_is_written(run_dir, tmp_path, monkeypatch, capsys):
    export = _module()
    monkeypatch.setattr(export, "SHIP_LIMIT_BYTES", 1000)
    dst = tmp_path / "out" / "w.safetensors"
    dst.parent.mkdir()
    assert export.main([str(run_dir), "--dst", str(dst)]) == 2
    assert "export with --half" in capsys.readouterr().err
    assert list(dst.parent.iterdir()) == []


def test_the_card_names_the_hardware_the_run_recorded_unless_told(run_dir, tmp_path):
    export = _module()
    dst = tmp_path / "out" / "w.safetensors"
    dst.parent.mkdir()
    assert export.main([str(run_dir), "--dst", str(dst)]) == 0
    assert "- **Hardware**: one Test GPU 9000, 4 CPU cores" in (dst.parent / "MODEL_CARD.md").read_text()
    assert export.main([str(run_dir), "--dst", str(dst), "--hardware", "a laptop"]) == 0
    assert "- **Hardware**: a laptop\n" in (dst.parent / "MODEL_CARD.md").read_text()
