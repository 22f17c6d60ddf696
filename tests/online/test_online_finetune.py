"""``SymbolicRegressor(finetune=True)``: expert iteration on the dataset being fitted."""
# These fits give the whole budget to expert iteration: no cross-validation of the search (cv_max_rows=0).

from __future__ import annotations

import numpy as np
import pytest
import torch

from dgsr import SymbolicRegressor
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.policy import NeuralPolicy
from tests.ctrl_c import CTRL_C_SHAPES, interrupted_at_call


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(120, 2))
    return X, X[:, 0] * X[:, 1] + 1.0


@pytest.mark.timeout(120, method="thread")
def test_finetune_fit_trains_a_copy_and_returns_a_front():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = NeuralPolicy(PolicyModel(ModelConfig.preset("tiny")))
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    X, y = _data()
    est = SymbolicRegressor(policy=policy, finetune=True, max_time=None, max_evaluations=300, cv_max_rows=0,
                            iterations_per_trial=8, constant_fitting="never", random_state=0)
    est.fit(X, y)
    assert est.n_trials_ >= 2  # several trials, with training steps in between
    assert est.n_evaluations_ <= 300 + 1e-9
    front = est.equations_
    assert len(front) >= 1 and np.isfinite(est.predict(X)).all()
    # a Pareto front: sorted by complexity, each larger formula strictly more accurate
    assert front["complexity"].is_monotonic_increasing and front["loss"].is_monotonic_decreasing
    # the caller's policy is untouched: a copy of its model was fine-tuned
    assert all(torch.equal(v, before[k]) for k, v in policy.model.state_dict().items())


@pytest.mark.timeout(60, method="thread")
def test_finetune_with_the_random_policy_warns_and_searches():
    X, y = _data()
    est = SymbolicRegressor(policy="random", finetune=True, max_time=None, max_evaluations=300, random_state=0,
                            cv_max_rows=0)
    with pytest.warns(UserWarning, match="finetune=True needs the neural policy"):
        est.fit(X, y)
    assert len(est.equations_) >= 1


@pytest.mark.timeout(120, method="thread")
@pytest.mark.parametrize("shape", CTRL_C_SHAPES, ids=["python", "compiled"])
def test_ctrl_c_between_finetuned_trials_returns_the_best_so_far(monkeypatch, shape):
    from dgsr.online import finetune

    run_trial = interrupted_at_call(finetune.run_trial, 2, shape)
    monkeypatch.setattr(finetune, "run_trial", run_trial)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    X, y = _data()
    est = SymbolicRegressor(policy=NeuralPolicy(PolicyModel(ModelConfig.preset("tiny"))), finetune=True, cv_max_rows=0,
                            max_time=None, max_evaluations=300, iterations_per_trial=8,
                            constant_fitting="never", random_state=0)
    with pytest.warns(UserWarning, match="Interrupted"):
        est.fit(X, y)
    assert run_trial.calls == 2 and est.stop_reason_ == "interrupted"
    assert len(est.equations_) >= 1 and np.isfinite(est.predict(X)).all()
