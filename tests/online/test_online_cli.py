"""``dgsr search``: several files at once, a result per dataset, the fine-tuned checkpoint, --resume."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from dgsr.cli.app import main
from dgsr.estimator.policy_loading import load_policy
from dgsr.neural.checkpoint import save_model
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig


@pytest.mark.timeout(120, method="thread")
def test_search_command_writes_results_and_resumes(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(60, 2))
    pd.DataFrame({"m": X[:, 0], "v": X[:, 1], "E": X[:, 0] * X[:, 1] ** 2}).to_csv(tmp_path / "energy.csv", index=False)
    pd.DataFrame({"x": X[:, 0], "y": X[:, 0] + 1.0}).to_csv(tmp_path / "line.csv", index=False)
    torch.manual_seed(0)
    ckpt = tmp_path / "start.safetensors"
    save_model(PolicyModel(ModelConfig.preset("tiny")), ckpt)
    out = tmp_path / "run"
    common = ["--iterations", "8", "--trial-evals", "80", "--policy", str(ckpt), "--out", str(out),
              "--steps-per-trial", "1", "--batch-size", "4", "--checkpoint-every", "1"]
    status = main(["search", str(tmp_path / "energy.csv"), str(tmp_path / "line.csv"), "--trials", "2", *common])
    assert status == 0
    text = capsys.readouterr().out
    assert "energy" in text and "line" in text and "2 trials" in text
    energy = json.loads((out / "results" / "energy.json").read_text())
    assert energy["features"] == ["m", "v"] and energy["trials"] == 1
    assert set(pd.read_csv(out / "results.csv")["dataset"]) == {"energy", "line"}
    assert main(["search", "--resume", "--trials", "3", *common]) == 0
    assert "3 trials" in capsys.readouterr().out
    assert len((out / "log.jsonl").read_text().splitlines()) == 3
    policy = load_policy(str(out / "policy.safetensors"))  # the fine-tuned checkpoint works as policy=
    assert policy.info["online_trials"] == 3 and policy.info["online_steps"] == 3


@pytest.mark.timeout(60, method="thread")
def test_search_command_errors_are_one_line(tmp_path, capsys):
    assert main(["search", "--out", str(tmp_path / "r"), "--policy", "random"]) == 2
    assert "data file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]}).to_csv(bad, index=False)
    assert main(["search", str(bad), "--out", str(tmp_path / "r"), "--policy", "random"]) == 2
    assert "numeric" in capsys.readouterr().err
