"""Expert iteration on Ray: two search workers and a trainer actor on a local 2-CPU instance; a worker
killed mid-trial has its trial re-queued and the run completes."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import numpy as np
import pytest
import torch

ray = pytest.importorskip("ray")

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.online import Dataset, OnlineConfig, TrainerConfig, run_online


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# Ray start-up alone takes 10-40 s on a busy 2-core machine: a generous limit, so a slow start is not a failure.
@pytest.mark.timeout(300, method="thread")
def test_ray_two_workers_survive_a_killed_worker(tmp_path):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 2))
    X2 = rng.uniform(1, 3, size=(80, 1))
    datasets = [Dataset("prod", X, X[:, 0] * X[:, 1] + X[:, 0]), Dataset("square", X2, X2[:, 0] ** 2)]
    config = OnlineConfig(iterations_per_trial=15, trial_evaluations=150, k_range=(6, 8),
                          constant_modes=("never",), checkpoint_every=2, n_points=40, seed=5)
    killed: list[int] = []

    def kill_first_worker(info: dict, spec) -> None:
        if not killed and info.get("pid"):
            killed.append(spec.trial_id)
            # SIGKILL right after the trial was dispatched: the worker dies mid-trial, as a lost node would
            # (a later kill can miss a trial that finishes in a fraction of a second)
            threading.Timer(0.05, _kill, (info["pid"],)).start()

    result = run_online(datasets, model=PolicyModel(ModelConfig.preset("tiny")), config=config,
                        trainer_config=TrainerConfig(batch_size=6, steps_per_trial=1, seed=5), backend="ray",
                        workers=2, ray_cpus=2, out=tmp_path, max_trials=4, on_dispatch=kill_first_worker)
    assert not ray.is_initialized()  # the instance started by the run is shut down
    assert killed and result.requeued >= 1
    assert result.trials == 4 and result.stop_reason == "trials"
    ids = [line["trial_id"] for line in result.log]
    assert sorted(ids) == list(range(4))  # every trial completed once, the killed one included
    assert any(line["attempt"] >= 1 and line["trial_id"] == killed[0] for line in result.log)
    assert len({line["worker"] for line in result.log}) >= 2  # two workers (plus the replacement)
    assert result.trainer_steps == 4
    assert (tmp_path / "policy.safetensors").is_file() and (tmp_path / "state.pt").is_file()
