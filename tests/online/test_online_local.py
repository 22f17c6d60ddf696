"""Expert iteration on the local backend: end-to-end tiny run, result files, exact checkpoint/resume."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from dgsr.estimator.policy_loading import load_policy
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.online import Dataset, OnlineConfig, TrainerConfig, run_online
from dgsr.online.controller import Controller
from dgsr.online.state import load_state
from tests.ctrl_c import CTRL_C_SHAPES

# Evaluation-capped trials without constant fitting: no wall-clock dependence, so runs repeat exactly.
CONFIG = OnlineConfig(iterations_per_trial=8, trial_evaluations=100, k_range=(4, 6), constant_modes=("never",),
                      checkpoint_every=2, synthetic=1, synthetic_points=60, n_points=40, seed=3)
TRAIN = TrainerConfig(batch_size=6, steps_per_trial=1, lr=1e-3, seed=3)


def _datasets() -> list[Dataset]:
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 2))
    X2 = rng.uniform(1, 3, size=(80, 1))
    return [Dataset("prod", X, X[:, 0] * X[:, 1] + X[:, 0], ("a", "b")), Dataset("square", X2, X2[:, 0] ** 2)]


def _model() -> PolicyModel:
    torch.manual_seed(0)
    return PolicyModel(ModelConfig.preset("tiny"))


def _run(out, **kwargs):
    torch.set_num_threads(1)
    return run_online(_datasets(), model=_model(), config=CONFIG, trainer_config=TRAIN, out=out, **kwargs)


def _comparable(log: list[dict]) -> list[dict]:
    return [{k: v for k, v in line.items() if k not in ("seconds", "elapsed")} for line in log]


@pytest.mark.timeout(60, method="thread")
def test_controller_draws_follow_appendix_e3():
    controller = Controller(_datasets(), OnlineConfig(seed=1))
    specs = [controller.next_spec() for _ in range(40)]
    assert {s.dataset for s in specs[:2]} == {"prod", "square"}  # round robin
    assert all(8 <= s.n_samples <= 16 and 0.5 <= s.temperature <= 1.0 and 0 <= s.length_penalty <= 1.2
               and s.depth_decay in (0.8, 0.9, 0.95, 1.0) and s.p_uct == 1.0 for s in specs)
    prod = [s.constant_fitting for s in specs if s.dataset == "prod"]
    assert prod[:4] == ["best", "never", "best", "never"]  # alternating per dataset
    controller.requeue(specs[3])
    again = controller.next_spec(weights_version=7)
    assert (again.trial_id, again.seed, again.attempt, again.weights_version) == (specs[3].trial_id, specs[3].seed, 1, 7)


@pytest.mark.timeout(120, method="thread")
def test_local_run_end_to_end(tmp_path):
    result = _run(tmp_path, max_trials=3)
    assert result.trials == 3 and result.stop_reason == "trials"
    assert result.trainer_steps == 3
    names = {r.name for r in result.results}
    assert {"prod", "square", "synthetic-0000"} <= names
    for name in ("prod", "square", "synthetic-0000"):
        data = json.loads((tmp_path / "results" / f"{name}.json").read_text())
        assert data["trials"] == 1 and data["selected"]["equation"]
    assert (tmp_path / "results.csv").read_text().startswith("dataset,")
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[-1])["trainer_steps"] == 3
    policy = load_policy(str(tmp_path / "policy.safetensors"))  # usable as policy= later
    tuned = {k: v for k, v in result.trainer.model.state_dict().items()}
    for k, v in policy.model.state_dict().items():
        assert torch.equal(v, tuned[k]), k


@pytest.mark.timeout(120, method="thread")
@pytest.mark.parametrize("shape", CTRL_C_SHAPES, ids=["python", "compiled"])
def test_resume_continues_exactly(tmp_path, shape):
    full = _run(tmp_path / "full", max_trials=4)

    calls = []

    def interrupt(line):  # Ctrl-C right after the second trial
        calls.append(line)
        if len(calls) == 2:
            shape()

    part = _run(tmp_path / "part", max_trials=4, on_trial=interrupt)
    assert part.stop_reason == "interrupted" and part.trials == 2
    saved = load_state(tmp_path / "part" / "state.pt")
    assert saved["controller"]["completed"] == 2 and saved["trainer"]["steps"] == 2
    resumed = run_online([], config=None, out=tmp_path / "part", resume=True, max_trials=4)
    assert resumed.trials == 4
    assert _comparable(resumed.log) == _comparable(full.log)
    for (name, x), (_, y) in zip(full.trainer.model.state_dict().items(), resumed.trainer.model.state_dict().items()):
        assert torch.equal(x, y), name
    assert len(full.trainer.buffers.critic) == len(resumed.trainer.buffers.critic)
    assert full.controller.rng.bit_generator.state == resumed.controller.rng.bit_generator.state
    assert [(r.name, r.best.r2 if r.best else None) for r in full.results] == \
        [(r.name, r.best.r2 if r.best else None) for r in resumed.results]


@pytest.mark.timeout(60, method="thread")
def test_frozen_policy_does_not_learn(tmp_path):
    frozen = OnlineConfig(**{**CONFIG.__dict__, "learn": False, "synthetic": 0})
    torch.set_num_threads(1)
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = run_online(_datasets(), model=model, config=frozen, trainer_config=TRAIN, max_trials=2)
    assert result.trainer_steps == 0 and len(result.trainer.buffers.critic) == 0
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


@pytest.mark.timeout(120, method="thread")
def test_local_process_pool_two_workers(tmp_path):
    result = _run(tmp_path, max_trials=3, workers=2)
    assert result.trials == 3 and result.trainer_steps == 3
    workers = {line["worker"] for line in result.log}
    # Trials ran in pool processes, never in this one. Which of the 2 processes takes which trial is
    # the executor's choice (it may reuse one idle worker for all of them), so not asserted.
    assert all(w.startswith("pool:") and w != f"pool:{os.getpid()}" for w in workers) and 1 <= len(workers) <= 2
    # a trial dispatched after a trainer step runs on newer weights
    assert max(line["weights_version"] for line in result.log) >= 1


@pytest.mark.timeout(180, method="thread")
def test_process_pool_survives_a_killed_worker(tmp_path):
    """A pool worker that dies mid-trial breaks the pool: its trials are re-queued on a fresh pool."""
    import multiprocessing
    import os
    import signal

    killed: list[int] = []
    earlier = {p.pid for p in multiprocessing.active_children()}  # e.g. a previous test's pool, closing

    def kill_a_worker(info: dict, spec) -> None:
        if killed:
            return
        ours = [p for p in multiprocessing.active_children() if p.pid not in earlier]
        if ours:
            killed.append(spec.trial_id)
            # at once: the worker is still starting the trial it was just given, as an OOM kill would find it
            os.kill(ours[0].pid, signal.SIGKILL)

    result = _run(tmp_path, max_trials=4, workers=2, on_dispatch=kill_a_worker)
    assert killed and result.requeued >= 1
    assert result.trials == 4 and result.stop_reason == "trials"
    assert sorted(line["trial_id"] for line in result.log) == list(range(4))  # each trial completed once
    assert (tmp_path / "policy.safetensors").is_file()
