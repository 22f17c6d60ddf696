"""The learned prior's training command, as a user runs it (a fresh process, a tiny budget)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dgsr.bench.laws import laws_in_half
from dgsr.bench.train_prior import training_problems
from dgsr.policies.learned.weights import load_weights
from tests.cli.dgsr_process import dgsr_env

pytestmark = pytest.mark.timeout(300)


def test_training_problems_are_the_develop_half_and_generator_laws():
    problems = training_problems(3, seed=0)
    develop = {law.name for law in laws_in_half("develop")}
    confirm = {law.name for law in laws_in_half("confirm")}
    names = [p.name for p in problems]
    assert set(names[:len(develop)]) == develop and not confirm & set(names)
    assert len(problems) == len(develop) + 3
    assert all(np.isfinite(p.y).all() and len(p.y) == p.X.shape[0] for p in problems)


def test_the_command_writes_weights_that_load_and_say_how_they_were_made(tmp_path):
    out = tmp_path / "prior.json"
    proc = subprocess.run([sys.executable, "-m", "dgsr.bench.train_prior", "--out", str(out), "--problems", "5",
                           "--rounds", "1", "--evaluations", "400", "--synthetic", "0", "--jobs", "1"],
                          capture_output=True, text=True, env=dgsr_env(), timeout=280, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    weights = load_weights(out)
    assert weights.info["trained_by"].startswith("python -m dgsr.bench.train_prior --rounds 1 --evaluations 400")
    assert weights.info["rounds"][0]["groups"] > 0
    assert "held_out_value_trained" in weights.info["validation"]
