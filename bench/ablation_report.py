"""Pool the per-problem JSON lines of ``bench/policy_ablation.py`` runs and compare each policy with
the random one, problem by problem.

    python bench/ablation_report.py results/abl/feyn_2000.jsonl results/abl/feyn_2000_b.jsonl
    python bench/ablation_report.py --baseline results/abl/in_2000.jsonl results/abl/online_in.jsonl

For every policy: problems, solved (test R² >= 0.99), training R² >= 0.99, median training R²; and
against ``random`` on the problems both ran (``--baseline FILE`` takes the random rows from another
run over the same problems, e.g. to compare other weights without re-running the random policy): solved by one policy only (each way) with the exact
two-sided McNemar p-value (a binomial test on the discordant problems), and wins on training R².
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np
from scipy import stats


def load(paths: list[str]) -> dict[str, dict[tuple[str, int], dict]]:
    """policy -> {(file, problem): row}; later files with the same problem index are distinct problems."""
    rows: dict[str, dict[tuple[str, int], dict]] = defaultdict(dict)
    for path in paths:
        with open(path) as fh:
            for line in fh:
                if line.startswith("{"):
                    r = json.loads(line)
                    rows[r["policy"]][(path, r["problem"])] = r
    return rows


def mcnemar_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p-value."""
    n = only_a + only_b
    return 1.0 if n == 0 else float(stats.binomtest(only_a, n, 0.5).pvalue)


def report(rows: dict[str, dict[tuple[str, int], dict]]) -> str:
    out = [("| policy | problems | solved (test R² >= 0.99) | train R² >= 0.99 | median train R² | "
            "solved only by it / only by random | McNemar p | wins / losses on train R² vs random |"),
           "|---|---|---|---|---|---|---|---|"]
    base = rows.get("random", {})
    for name, by_problem in rows.items():
        rs = list(by_problem.values())
        solved = sum(r["solved"] for r in rs)
        fitted = sum(r["train_r2"] >= 0.99 for r in rs)
        median = float(np.median([r["train_r2"] for r in rs]))
        paired = "-", "-", "-"
        if name != "random" and base:
            common = [k for k in by_problem if k in base]
            only_it = sum(by_problem[k]["solved"] and not base[k]["solved"] for k in common)
            only_random = sum(base[k]["solved"] and not by_problem[k]["solved"] for k in common)
            wins = sum(by_problem[k]["train_r2"] > base[k]["train_r2"] for k in common)
            losses = sum(by_problem[k]["train_r2"] < base[k]["train_r2"] for k in common)
            paired = f"{only_it} / {only_random}", f"{mcnemar_p(only_it, only_random):.3f}", f"{wins} / {losses}"
        out.append(f"| {name} | {len(rs)} | {solved} ({100 * solved / max(len(rs), 1):.0f}%) | {fitted} | "
                   f"{median:.4f} | {paired[0]} | {paired[1]} | {paired[2]} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("jsonl", nargs="+", help="stderr files of bench/policy_ablation.py")
    parser.add_argument("--baseline", default=None, help="a run whose random-policy rows are the baseline")
    args = parser.parse_args(argv)
    rows = load(args.jsonl)
    if args.baseline:
        base = load([args.baseline]).get("random", {})
        # the same problem indices in another file: key both on the index alone
        rows = {name: {("", k[1]): r for k, r in by.items()} for name, by in rows.items() if name != "random"}
        rows["random"] = {("", k[1]): r for k, r in base.items()}
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
