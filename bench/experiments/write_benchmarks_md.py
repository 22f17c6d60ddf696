"""`python bench/experiments/write_benchmarks_md.py --full results/full10 --quick results/quick`: assemble docs/BENCHMARKS.md from the benchmark outputs (report.md files and the per-topic docs).

Tables are copied from the files the benchmark commands wrote, never typed in:

    python bench/experiments/write_benchmarks_md.py --full results/full10 --quick results/quick \
        --f20-10 results/f20_10s_from_full --f20-60 results/f20_60s \
        --table SV_BB=results/sv_bb.out,results/sv_bb_sel.out --table SV_F=results/sv_f.out,results/sv_f_sel.out \
        --report FULL_NEW=results/full10_new

``--table NAME=FILES`` fills ``{{NAME}}`` with the markdown tables printed by a bench script (one
after the other, each as printed).
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def section(path: Path, start: str, stop_prefix: str = "## ") -> str:
    """Lines of ``path`` from the heading ``start`` (exclusive) to the next heading of that level."""
    lines = path.read_text().splitlines()
    try:
        i = next(k for k, line in enumerate(lines) if line.strip() == start)
    except StopIteration:
        return f"(section {start!r} missing from {path.name})"
    out = []
    for line in lines[i + 1:]:
        if line.startswith(stop_prefix) and not line.startswith(stop_prefix + "#"):
            break
        out.append(line)
    return "\n".join(out).strip()


def report_tables(results: Path, name: str) -> str:
    """Summary (and Strogatz) tables of a ``dgsr bench report``, with its run header and plots copied."""
    report = results / "report.md"
    if not report.is_file():
        return f"(no report in {results})"
    text = report.read_text()
    header = "\n".join(line for line in text.splitlines()[2:6] if line.startswith("- "))
    body = section(report, "## Summary")
    strogatz = section(report, "## Strogatz") if "## Strogatz" in text else ""
    parts = [header, "", body]
    if strogatz and not strogatz.startswith("(section"):
        parts += ["", "Strogatz:", "", strogatz]
    img = DOCS / "img"
    img.mkdir(exist_ok=True)
    for fig, title in (("fig3_pareto.png", "Accuracy against size (Figure 3)"),
                       ("fig4_curves.png", "Best training R² against evaluations (Figure 4)")):
        if (results / fig).is_file():
            shutil.copy(results / fig, img / f"{name}_{fig}")
            parts += ["", f"![{title}](img/{name}_{fig})"]
    return "\n".join(parts)


def printed_tables(paths: list[Path]) -> str:
    """The markdown table lines of each file (``|`` rows), tables separated by a blank line."""
    tables = []
    for path in paths:
        rows = [line for line in path.read_text().splitlines() if line.startswith("|")]
        tables.append("\n".join(rows) if rows else f"(no table in {path})")
    return "\n\n".join(tables)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", type=Path, required=True)
    p.add_argument("--quick", type=Path, required=True)
    p.add_argument("--f20-10", type=Path, required=True)
    p.add_argument("--f20-60", type=Path, required=True)
    p.add_argument("--intro", type=Path, default=DOCS / "benchmarks_intro.md",
                   help="hand-written text around the tables (context, commands, conclusions)")
    p.add_argument("--report", action="append", default=[], metavar="NAME=DIR",
                   help="fill {{NAME}} with the tables and plots of the bench report in DIR")
    p.add_argument("--table", action="append", default=[], metavar="NAME=FILE[,FILE...]",
                   help="fill {{NAME}} with the tables a bench script printed to these files")
    args = p.parse_args()
    text = args.intro.read_text()
    fills = {
        "{{FULL}}": report_tables(args.full, "full10"),
        "{{QUICK}}": report_tables(args.quick, "quick"),
        "{{F20_10}}": report_tables(args.f20_10, "f20_10s"),
        "{{F20_60}}": report_tables(args.f20_60, "f20_60s"),
        "{{POLICY_LATENCY}}": section(DOCS / "policy_bench.md", "### Latency per expansion and the FLOP floor", "### "),
        "{{POLICY_VALIDITY}}": section(DOCS / "policy_bench.md", "### Mutation validity", "### "),
        "{{POLICY_ABLATION}}": section(DOCS / "policy_bench.md", "### Neural vs random policy in MCTS", "### "),
        "{{CONSTANTS}}": section(DOCS / "constants_bench.md", "### BFGS vs Levenberg-Marquardt vs linear scaling", "### "),
        "{{THROUGHPUT}}": section(DOCS / "constants_bench.md", "### Evaluation throughput (1,000 rows)", "### "),
        "{{CORPUS}}": section(DOCS / "corpus_bench.md", "## Measurements (`python bench/experiments/corpus_bench.py`)"),
        "{{ONLINE_SOLVED}}": section(DOCS / "online_bench.md",
                                     "## Solved rate over trials: fine-tuned vs frozen policy (equal evaluations)"),
        "{{ONLINE_THROUGHPUT}}": section(DOCS / "online_bench.md", "## Throughput: 1 vs 2 workers (in-process, process pool, Ray)"),
        "{{SELECTION}}": section(DOCS / "selection_bench.md", "### Model-selection rules at equal evaluations", "### "),
        "{{JOBS}}": section(DOCS / "selection_bench.md", "### n_jobs: one fit on 1 and 2 processes", "### "),
    }
    for spec in args.report:
        name, _, folder = spec.partition("=")
        fills["{{" + name + "}}"] = report_tables(Path(folder), name.lower())
    for spec in args.table:
        name, _, files = spec.partition("=")
        fills["{{" + name + "}}"] = printed_tables([Path(f) for f in files.split(",")])
    for key, value in fills.items():
        text = text.replace(key, value)
    leftover = re.findall(r"\{\{[A-Z0-9_]+\}\}", text)
    if leftover:
        raise SystemExit(f"unfilled placeholders: {leftover}")
    (DOCS / "BENCHMARKS.md").write_text(text)
    print(f"wrote {DOCS / 'BENCHMARKS.md'}")


if __name__ == "__main__":
    main()
