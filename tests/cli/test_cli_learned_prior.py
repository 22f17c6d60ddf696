"""The learned prior through the CLI, in a fresh process: ``dgsr search --policy learned``
(online learning across files, checkpointed, resumable) and ``dgsr fit --policy``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dgsr.policies.learned.weights import load_weights
from tests.cli.dgsr_process import run_dgsr

pytestmark = pytest.mark.timeout(300)


def _tables(folder) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for i, scale in enumerate((1.5, 2.5)):
        x = rng.uniform(0.5, 3.0, size=(150, 2))
        frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": scale * x[:, 0] ** 2 / x[:, 1]})
        path = folder / f"law{i}.csv"
        frame.to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_search_with_the_learned_prior_learns_across_files_and_resumes(tmp_path):
    paths = _tables(tmp_path)
    args = ["search", *paths, "--policy", "learned", "--time", "120", "--iterations", "20",
            "--trial-evals", "600", "--out", "run", "--quiet"]
    proc = run_dgsr(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "run"
    lines = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [line["dataset"] for line in lines] == ["law0", "law1"]
    assert lines[-1]["online_updates"] > lines[0]["online_updates"] > 0
    weights = load_weights(out / "prior.json")
    assert weights.info["online_updates"] == lines[-1]["online_updates"]
    shipped = load_weights()
    assert not np.allclose(weights.prior.a, shipped.prior.a)  # the online updates moved the weights
    assert pd.read_csv(out / "results.csv")["r2"].min() > 0.99
    # A second run in the same folder needs --resume (or --force); resuming skips what is done.
    again = run_dgsr(*args, cwd=tmp_path)
    assert again.returncode != 0 and "--resume" in again.stderr
    resumed = run_dgsr(*args, "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len((out / "log.jsonl").read_text().splitlines()) == 2


def test_fit_takes_learned_weights_and_refuses_a_corrupted_file(tmp_path):
    paths = _tables(tmp_path)
    ok = run_dgsr("fit", paths[0], "--policy", "learned", "--evals", "800", "--time", "100", "--quiet",
                  "--out", "fit", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "dgsr-learned-prior", "version": 1, "prior": ')
    proc = run_dgsr("fit", paths[0], "--policy", str(bad), "--evals", "300", "--quiet", "--out", "fit2",
                    cwd=tmp_path)
    assert proc.returncode != 0
    assert "bad.json" in proc.stderr and "not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
