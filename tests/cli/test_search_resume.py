"""``dgsr search`` checkpoints: by time as well as by trials, never overwriting a run's log
without --force, and --resume without a state is an error (issue 11, item 5)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from dgsr.cli.app import main
from dgsr.neural.checkpoint import save_model
from dgsr.neural.model import ModelConfig, PolicyModel
from dgsr.online import Dataset, OnlineConfig, TrainerConfig, run_online
from dgsr.online.state import load_state

pytestmark = pytest.mark.timeout(120, method="thread")

CONFIG = OnlineConfig(iterations_per_trial=8, trial_evaluations=80, k_range=(4, 6), constant_modes=("never",),
                      checkpoint_every=1000, n_points=40, seed=3)
TRAIN = TrainerConfig(batch_size=6, steps_per_trial=1, lr=1e-3, seed=3)


def _datasets() -> list[Dataset]:
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(60, 2))
    return [Dataset("prod", X, X[:, 0] * X[:, 1], ("a", "b"))]


def _run(out, config=CONFIG, **kwargs):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    return run_online(_datasets(), model=PolicyModel(ModelConfig.preset("tiny")), config=config,
                      trainer_config=TRAIN, out=out, **kwargs)


def test_checkpoints_by_time_as_well_as_by_trials(tmp_path):
    seen = []

    def on_trial(line):  # what a crash (kill -9) at this moment would leave on disk
        state = tmp_path / "state.pt"
        seen.append(load_state(state)["controller"]["completed"] if state.exists() else None)

    _run(tmp_path, dataclasses.replace(CONFIG, checkpoint_seconds=0.0), max_trials=3, on_trial=on_trial)
    assert seen == [None, 1, 2]  # checkpoint_every=1000 trials, but every completed trial is past 0 s


def test_a_new_run_never_overwrites_an_existing_log(tmp_path):
    _run(tmp_path, max_trials=1)
    before = (tmp_path / "log.jsonl").read_text()
    with pytest.raises(FileExistsError, match="--force"):
        _run(tmp_path, max_trials=1)
    assert (tmp_path / "log.jsonl").read_text() == before
    _run(tmp_path, max_trials=1, force=True)


def test_resume_rewrites_the_log_to_the_checkpoint(tmp_path):
    _run(tmp_path, dataclasses.replace(CONFIG, checkpoint_every=1), max_trials=2)
    with open(tmp_path / "log.jsonl", "a") as fh:  # a trial logged after the last checkpoint, then a crash
        fh.write(json.dumps({"trial": 99}) + "\n")
    run_online([], out=tmp_path, resume=True, max_trials=3)
    trials = [json.loads(line)["trial"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(trials) == 3 and 99 not in trials


@pytest.fixture
def cli_setup(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(40, 2))
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": X[:, 0] * X[:, 1]}).to_csv(data, index=False)
    torch.manual_seed(0)
    ckpt = tmp_path / "start.safetensors"
    save_model(PolicyModel(ModelConfig.preset("tiny")), ckpt)
    return data, ["--iterations", "8", "--trial-evals", "60", "--policy", str(ckpt), "--steps-per-trial", "1",
                  "--batch-size", "4", "--quiet"]


def test_cli_resume_without_state_is_an_error(tmp_path, cli_setup, capsys):
    data, common = cli_setup
    out = tmp_path / "none"
    assert main(["search", str(data), "--resume", "--trials", "1", "--out", str(out), *common]) == 2
    err = capsys.readouterr().err
    assert "nothing to resume" in err and not (out / "log.jsonl").exists()


def test_cli_refuses_to_restart_over_a_run_without_force(tmp_path, cli_setup, capsys):
    data, common = cli_setup
    out = tmp_path / "run"
    assert main(["search", str(data), "--trials", "1", "--out", str(out), *common]) == 0
    log = (out / "log.jsonl").read_text()
    capsys.readouterr()
    assert main(["search", str(data), "--trials", "1", "--out", str(out), *common]) == 2
    assert "--force" in capsys.readouterr().err and (out / "log.jsonl").read_text() == log
    assert main(["search", str(data), "--trials", "1", "--out", str(out), "--force", *common]) == 0
