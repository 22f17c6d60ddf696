"""`python bench/experiments/ablation_report.py results/abl/feyn_2000.jsonl results/abl/feyn_2000_b.jsonl`: pool the per-problem JSON lines of ``bench/experiments/policy_ablation.py`` runs and compare each policy with
the random one, problem by problem.

    python bench/experiments/ablation_report.py results/abl/feyn_2000.jsonl results/abl/feyn_2000_b.jsonl
    python bench/experiments/ablation_report.py --baseline results/abl/in_2000.jsonl results/abl/online_in.jsonl
    python bench/experiments/ablation_report.py --seeds s0_random.jsonl,s0_neural.jsonl s1.jsonl s2.jsonl

For every policy: problems, solved (test R² >= 0.99), training R² >= 0.99, median training R²; and
against ``random`` on the problems both ran (``--baseline FILE`` takes the random rows from another
run over the same problems, e.g. to compare other weights without re-running the random policy): solved by one policy only (each way) with the exact
two-sided McNemar p-value (a binomial test on the discordant problems), and wins on training R².

``--seeds``: each argument is one seed's run of the same problems (a comma list when that seed's
policies ran in separate files). Runs of one problem at several seeds are not independent pairs, so
besides each seed's McNemar test the policies are compared problem by problem: the net number of
seeds at which a policy solved a problem that random did not, and an exact sign test over the
problems where that net is not zero.

``--budgets 1000,2000,5000``: with ``--seeds``, the same comparison at smaller budgets read off the
runs: a problem counts as solved within b evaluations when its run solved it and stopped (at training
R² 0.99) after at most b evaluations. A seeded search makes the same choices whatever its budget, so
these are the problems a budget of b solves by stopping early. A run of b evaluations can also end
solved without reaching training R² 0.99 (its best expression then is not recorded), so the counts
are a lower bound on what that budget solves. ``--plot FILE.png`` draws these counts against the
budget, per policy (mean over seeds, band from the lowest to the highest seed).
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


def load_seeds(groups: list[str]) -> list[dict[str, dict[int, dict]]]:
    """One {policy: {problem: row}} per seed; a group is a comma list of that seed's files."""
    out = []
    for group in groups:
        rows = load(group.split(","))
        out.append({name: {k[1]: r for k, r in by.items()} for name, by in rows.items()})
    return out


def seeds_report(seeds: list[dict[str, dict[int, dict]]]) -> str:
    """Each seed's McNemar test against random, then the problem-level sign test over all seeds."""
    names = sorted(set.intersection(*(set(s) for s in seeds)) - {"random"})  # policies run at every seed
    out = ["| policy | seed run | solved / random | only it / only random | McNemar p |", "|---|---|---|---|---|"]
    summary = []
    for name in names:
        net: dict[int, int] = defaultdict(int)
        common_all: set[int] | None = None
        for i, s in enumerate(seeds):
            it, base = s.get(name, {}), s.get("random", {})
            common = set(it) & set(base)
            common_all = common if common_all is None else common_all & common
            only_it = sum(it[k]["solved"] and not base[k]["solved"] for k in common)
            only_random = sum(base[k]["solved"] and not it[k]["solved"] for k in common)
            for k in common:
                net[k] += int(it[k]["solved"]) - int(base[k]["solved"])
            out.append(f"| {name} | {i} | {sum(it[k]['solved'] for k in common)} / "
                       f"{sum(base[k]['solved'] for k in common)} of {len(common)} | {only_it} / {only_random} | "
                       f"{mcnemar_p(only_it, only_random):.3f} |")
        problems = sorted(common_all or ())
        ahead = sum(net[k] > 0 for k in problems)
        behind = sum(net[k] < 0 for k in problems)
        summary.append(f"- {name}: over {len(problems)} problems run at all {len(seeds)} seeds, ahead of random on "
                       f"{ahead} and behind on {behind} (net solved seeds per problem); exact sign test "
                       f"p = {mcnemar_p(ahead, behind):.4f}")
    return "\n".join(out + [""] + summary)


def solved_within(row: dict, budget: float) -> bool:
    """Whether the run solved its problem and stopped within ``budget`` evaluations."""
    return bool(row["solved"]) and row["evaluations"] <= budget


def within_budget(seeds: list[dict[str, dict[int, dict]]], budget: float) -> list[dict[str, dict[int, dict]]]:
    """The runs with ``solved`` replaced by :func:`solved_within` at ``budget``."""
    return [{name: {k: {**r, "solved": solved_within(r, budget)} for k, r in by.items()} for name, by in s.items()}
            for s in seeds]


def solved_curve(seeds: list[dict[str, dict[int, dict]]], name: str, budgets: np.ndarray) -> np.ndarray:
    """Problems ``name`` solved within each budget (:func:`solved_within`), one row per seed."""
    return np.array([[sum(solved_within(r, b) for r in s.get(name, {}).values()) for b in budgets] for s in seeds])


def plot_solved_curves(seeds: list[dict[str, dict[int, dict]]], path: str, title: str = "") -> None:
    """Solved problems against the evaluation budget, per policy: mean over seeds, band from min to max."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(set.intersection(*(set(s) for s in seeds)))
    top = max(r["evaluations"] for s in seeds for by in s.values() for r in by.values())
    budgets = np.unique(np.geomspace(min(100.0, top), top, 60).round())
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in names:
        counts = solved_curve(seeds, name, budgets)
        ax.plot(budgets, counts.mean(axis=0), label=name)
        if len(seeds) > 1:
            ax.fill_between(budgets, counts.min(axis=0), counts.max(axis=0), alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("evaluations per problem")
    ax.set_ylabel("problems solved by then (test R² >= 0.99)")
    ax.set_title(title or f"mean over {len(seeds)} seed(s); band: min to max")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("jsonl", nargs="+", help="stderr files of bench/experiments/policy_ablation.py")
    parser.add_argument("--baseline", default=None, help="a run whose random-policy rows are the baseline")
    parser.add_argument("--seeds", action="store_true",
                        help="each argument is one seed's run of the same problems (comma list: several files)")
    parser.add_argument("--budgets", default=None,
                        help="with --seeds: also compare at these smaller evaluation budgets (comma list)")
    parser.add_argument("--plot", default=None,
                        help="with --seeds: save a PNG of solved problems against the evaluation budget")
    parser.add_argument("--title", default="", help="title of the --plot figure")
    args = parser.parse_args(argv)
    if (args.budgets or args.plot) and not args.seeds:
        parser.error("--budgets and --plot read smaller budgets per seed: use them with --seeds")
    if args.seeds:
        seeds = load_seeds(args.jsonl)
        print(seeds_report(seeds))
        for budget in [float(b) for b in args.budgets.split(",")] if args.budgets else []:
            print(f"\nWithin {budget:.0f} evaluations:\n")
            print(seeds_report(within_budget(seeds, budget)))
        if args.plot:
            plot_solved_curves(seeds, args.plot, args.title)
            print(f"\nwrote {args.plot}")
        return 0
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
