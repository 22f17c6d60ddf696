"""Resume files and model files: checksums, log truncation, seeding (issue 11, items 6, 7, 9, 10)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from dgsr.neural.checkpoint import (
    CheckpointError,
    load_model,
    load_training_state,
    read_metadata,
    save_model,
    save_training_state,
)
from dgsr.neural.model import ModelConfig, PolicyModel
from dgsr.training.pretrain import TrainConfig, train

pytestmark = [pytest.mark.timeout(90, method="thread"), pytest.mark.usefixtures("torch_one_thread")]

TINY = TrainConfig(model="tiny", batch_size=6, warmup=2, eval_every=2, checkpoint_every=2, val_examples=4,
                   n_points=20, data="generator")


def _steps(path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def test_same_seed_gives_identical_pretraining_runs(tmp_path):
    torch.manual_seed(1)  # different global state before each run: train must seed itself
    a = train(TINY, tmp_path / "a", 2, device="cpu", progress=False)
    torch.manual_seed(2)
    b = train(TINY, tmp_path / "b", 2, device="cpu", progress=False)
    drop = {"time"}
    la = [{k: v for k, v in json.loads(x).items() if k not in drop} for x in (tmp_path / "a" / "log.jsonl").open()]
    lb = [{k: v for k, v in json.loads(x).items() if k not in drop} for x in (tmp_path / "b" / "log.jsonl").open()]
    assert la == lb and a["loss"] == b["loss"]


def test_resume_drops_log_rows_after_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    train(TINY, out, 2, device="cpu", progress=False)  # checkpoint at step 2
    with open(out / "log.jsonl", "a") as fh:  # a crash after logging steps 3-4, before their checkpoint
        fh.write(json.dumps({"step": 3, "loss": 1.0}) + "\n" + json.dumps({"step": 4, "loss": 1.0}) + "\n")
        fh.write('{"step": 5, "lo')  # torn last line
    train(TINY, out, 4, resume=True, device="cpu", progress=False)
    assert _steps(out / "log.jsonl") == [1, 2, 3, 4]


def test_a_new_run_refuses_a_folder_holding_a_run(tmp_path):
    out = tmp_path / "run"
    train(TINY, out, 1, device="cpu", progress=False)
    with pytest.raises(FileExistsError, match="--resume"):
        train(TINY, out, 2, device="cpu", progress=False)


def test_corrupted_training_checkpoint_is_refused_on_resume(tmp_path):
    out = tmp_path / "run"
    train(TINY, out, 2, device="cpu", progress=False)
    data = bytearray((out / "ckpt.pt").read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit in the middle of the weights
    (out / "ckpt.pt").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        train(TINY, out, 3, resume=True, device="cpu", progress=False)


def test_training_state_is_loaded_weights_only_unless_trusted(tmp_path):
    path = tmp_path / "state.pt"
    save_training_state(path, {"step": 3, "obj": _Opaque()})
    with pytest.raises(CheckpointError, match="objects other than tensors"):
        load_training_state(path)
    assert load_training_state(path, weights_only=False)["step"] == 3
    save_training_state(path, {"step": 4, "w": torch.ones(2)})
    assert load_training_state(path)["step"] == 4


class _Opaque:
    pass


def test_model_metadata_is_covered_by_the_checksum(tmp_path):
    path = tmp_path / "m.safetensors"
    config = ModelConfig.preset("tiny")
    save_model(PolicyModel(config), path)
    load_model(path)  # intact: loads
    meta = read_metadata(path)
    cfg = json.loads(meta["dgsr_config"])
    cfg["n_heads"] = 1 if cfg["n_heads"] != 1 else 2  # same tensor shapes, a different model
    meta["dgsr_config"] = json.dumps(cfg)
    save_file(load_file(str(path)), str(path), metadata=meta)
    with pytest.raises(CheckpointError, match="metadata checksum"):
        load_model(path)
