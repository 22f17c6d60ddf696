"""bench/experiments/ablation_report.py's multi-seed comparison counts problems, not (problem, seed) pairs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "experiments" / "ablation_report.py"


def _module():
    spec = importlib.util.spec_from_file_location("dgsr_ablation_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path: Path, rows: list[tuple[int, str, bool]]) -> str:
    path.write_text("".join(json.dumps({"problem": p, "policy": pol, "solved": s, "train_r2": 0.5}) + "\n"
                            for p, pol, s in rows))
    return str(path)


def test_seeds_report_pairs_each_seed_and_signs_each_problem(tmp_path):
    report = _module()
    # seed 0: policies in two files; problem 0 solved only by "net" at both seeds, problem 1 only by
    # random at seed 0 and by both at seed 1, problem 2 by neither
    s0 = ",".join([_write(tmp_path / "r0.jsonl", [(0, "random", False), (1, "random", True), (2, "random", False)]),
                   _write(tmp_path / "n0.jsonl", [(0, "net", True), (1, "net", False), (2, "net", False)])])
    s1 = _write(tmp_path / "s1.jsonl", [(0, "random", False), (1, "random", True), (2, "random", False),
                                         (0, "net", True), (1, "net", True), (2, "net", False),
                                         (0, "only-here", True)])
    text = report.seeds_report(report.load_seeds([s0, s1]))
    assert "only-here" not in text  # a policy missing at one seed is not pooled
    assert "| net | 0 | 1 / 1 of 3 | 1 / 1 | 1.000 |" in text
    assert "| net | 1 | 2 / 1 of 3 | 1 / 0 | 1.000 |" in text
    # net solved seeds: problem 0 +2, problem 1 -1, problem 2 0 -> ahead on 1, behind on 1
    assert "over 3 problems run at all 2 seeds, ahead of random on 1 and behind on 1" in text
    assert report.mcnemar_p(20, 5) < 0.01 < report.mcnemar_p(11, 5)


def test_within_budget_counts_only_runs_that_stopped_by_then(tmp_path):
    report = _module()
    rows = [{"problem": 0, "policy": "net", "solved": True, "train_r2": 1.0, "evaluations": 900},
            {"problem": 1, "policy": "net", "solved": True, "train_r2": 1.0, "evaluations": 5000},
            {"problem": 2, "policy": "net", "solved": False, "train_r2": 0.5, "evaluations": 800}]
    path = tmp_path / "n.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seeds = report.load_seeds([str(path)])
    early = report.within_budget(seeds, 1000)[0]["net"]
    assert [early[k]["solved"] for k in range(3)] == [True, False, False]
    late = report.within_budget(seeds, 5000)[0]["net"]
    assert [late[k]["solved"] for k in range(3)] == [True, True, False]
    assert seeds[0]["net"][1]["solved"] is True  # the runs read are left as they were


def test_solved_curve_counts_per_seed_and_the_plot_is_written(tmp_path):
    report = _module()
    runs = []
    for seed, evals in enumerate(([900, 5000, 800], [300, 20000, 800])):
        rows = [{"problem": k, "policy": "net", "solved": k < 2, "train_r2": 1.0, "evaluations": e}
                for k, e in enumerate(evals)]
        path = tmp_path / f"s{seed}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs.append(str(path))
    seeds = report.load_seeds(runs)
    curve = report.solved_curve(seeds, "net", [500, 1000, 10000, 20000])
    assert curve.tolist() == [[0, 1, 2, 2], [1, 1, 1, 2]]
    png = tmp_path / "curve.png"
    report.plot_solved_curves(seeds, str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
