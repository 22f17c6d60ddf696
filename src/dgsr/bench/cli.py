"""``dgsr bench``: run the SRBench-style benchmark, write its report, list what it can run.

    dgsr bench --suite feynman --methods dgsr,operon,gplearn --time 60 --seeds 3 --jobs 2 --out results/
    dgsr bench --quick --out results/quick        # CONTRACTS §3 quick mode (15 Feynman + 10 black-box, 10 s)
    dgsr bench --suite laws --methods dgsr,operon --time 30 --seeds 0,1,2 --half develop --out results/laws
    dgsr bench report results/
    dgsr bench list
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

QUICK_TIME_S = 10.0
STANDARD_TIME_S = 60.0


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _seeds(text: str) -> list[int]:
    """``3`` means seeds 0, 1, 2; ``0,4`` means exactly those."""
    return [int(s) for s in _csv(text)] if "," in text else list(range(int(text)))


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dgsr bench", description="Run the SRBench-style benchmark "
                                "(`dgsr bench report DIR` for the report, `dgsr bench list` for suites and methods).")
    p.add_argument("--suite", default="feynman", help="feynman, blackbox, strogatz, blackbox-narrow, classic, laws "
                   "or all "
                   "(all = the three SRBench suites; comma-separated for several; default feynman)")
    p.add_argument("--methods", default="dgsr,operon-strong,operon,gplearn", help="comma-separated method names")
    p.add_argument("--time", type=float, default=None, help="seconds per run (default 60; 10 with --quick)")
    p.add_argument("--evals", type=int, default=None, help="evaluation budget per run (default: the method's)")
    p.add_argument("--seeds", default=None, help="number of seeds (0..N-1) or a comma-separated list "
                   "(default 3; 1 with --quick)")
    p.add_argument("--noise", type=float, default=0.0, help="target noise level: 0, 0.001, 0.01 or 0.1")
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel, one thread each (default 2)")
    p.add_argument("--out", default="results", help="results folder (runs.jsonl, report.md; default results/)")
    p.add_argument("--data", default=None, help="data folder laid out like SRBench's (default: $DGSR_DATA, "
                   "else ../shared/data, else the --cache folder)")
    p.add_argument("--cache", default=None, help="folder for the packaged formula lists and the PMLB datasets "
                   "fetched with the pmlb package (default: $DGSR_CACHE, else ~/.cache/dgsr/bench)")
    p.add_argument("--datasets", default=None, help="comma-separated dataset names to keep")
    p.add_argument("--limit", type=int, default=None, help="first N datasets of each suite")
    p.add_argument("--half", default=None, choices=("develop", "confirm", "all"),
                   help="part of each suite to run: develop or confirm (confirm is for checking a change "
                   "once, after developing it on develop); default: develop for laws, all for the others. "
                   "Laws split by family, the other suites by position in their list (even: develop)")
    p.add_argument("--quick", action="store_true", help="fixed 15 Feynman + 10 black-box subset, seed 0, 10 s")
    p.add_argument("--units", action="store_true", help="fit the dgsr methods with each problem's physical units "
                   "(Feynman and Strogatz: data/feynman/units.tsv); their names get -units, e.g. dgsr-units")
    p.add_argument("--hard-limit", type=float, default=None, help="kill a run after this many seconds "
                   "(default 2 x time + 30)")
    p.add_argument("--retry-failed", action="store_true", help="re-run rows recorded as failures")
    p.add_argument("--no-report", action="store_true", help="do not write report.md at the end")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="print the planned runs and exit")
    return p


def _with_units(methods: list[str]) -> list[str]:
    """``--units``: each dgsr method as its ``-units`` variant (the others as they are)."""
    from .methods import dgsr_options

    return [m + "-units" if dgsr_options(m) is not None and not m.endswith("-units") else m for m in methods]


def cmd_run(args: argparse.Namespace) -> int:
    from .datasets import DatasetRef, fetch_missing, resolve_data_dir
    from .protocol import NOISE_LEVELS
    from .report import write_report
    from .runner import plan_runs, run_benchmark

    if args.noise not in NOISE_LEVELS:
        print(f"note: noise {args.noise} is not one of SRBench's levels {NOISE_LEVELS}", file=sys.stderr)
    methods = _with_units(_csv(args.methods)) if args.units else _csv(args.methods)
    _check_method_packages(methods)
    data_dir = resolve_data_dir(args.data, args.cache)
    time_s = args.time if args.time is not None else (QUICK_TIME_S if args.quick else STANDARD_TIME_S)
    seeds = _seeds(args.seeds) if args.seeds is not None else ([0] if args.quick else [0, 1, 2])
    specs = plan_runs(data_dir=data_dir, suites=_csv(args.suite), methods=methods, seeds=seeds,
                      time_s=time_s, evals=args.evals, noise=args.noise,
                      datasets=_csv(args.datasets) if args.datasets else None, limit=args.limit, quick=args.quick,
                      half=args.half)
    # In the main process, before any run: a download failure is one clear message, not 25 failed runs.
    fetched = fetch_missing(sorted({DatasetRef(s.suite, s.dataset) for s in specs}, key=lambda r: (r.suite, r.name)),
                            data_dir)
    if fetched:
        print(f"fetched {len(fetched)} PMLB dataset(s) into {data_dir / 'pmlb'}")
    if args.dry_run:
        for s in specs:
            print(f"{s.method}\t{s.suite}\t{s.dataset}\tseed={s.seed}\ttime={s.time:g}\tnoise={s.noise:g}")
        print(f"{len(specs)} runs; data from {data_dir}")
        return 0
    laws = any(s.suite == "laws" for s in specs)
    half = f"; half: {args.half}" if args.half else ("; laws half: develop" if laws else "")
    print(f"{len(specs)} runs planned ({time_s:g} s each, {args.jobs} in parallel); data from {data_dir}{half}")
    rows = run_benchmark(specs, args.out, jobs=args.jobs, hard_limit=args.hard_limit,
                         retry_failed=args.retry_failed, progress=not args.quiet)
    failed = sum(r.get("status") != "ok" for r in rows)
    print(f"{len(rows)} runs done ({failed} failed); skipped {len(specs) - len(rows)} already in "
          f"{Path(args.out) / 'runs.jsonl'}")
    if not args.no_report:
        print(f"report: {write_report(args.out)}")
    return 0


# Methods whose package comes with the [bench] extra: checked before any run starts.
_METHOD_PACKAGES = {"operon": "pyoperon", "operon-strong": "pyoperon", "gplearn": "gplearn"}


def _check_method_packages(methods: Sequence[str]) -> None:
    import importlib.util

    absent = [m for m in methods if m in _METHOD_PACKAGES and importlib.util.find_spec(_METHOD_PACKAGES[m]) is None]
    if absent:
        others = [m for m in methods if m not in absent] or ["dgsr"]
        raise ValueError(f"{'; '.join(f'{m} needs {_METHOD_PACKAGES[m]}' for m in absent)}: pip install "
                         f"'dgsr[bench]' (or run only --methods {','.join(others)})")


def cmd_report(argv: Sequence[str]) -> int:
    from .report import write_report

    p = argparse.ArgumentParser(prog="dgsr bench report", description="Write report.md and plots from runs.jsonl.")
    p.add_argument("results", nargs="?", default="results", help="results folder (default results/)")
    args = p.parse_args(argv)
    if not (Path(args.results) / "runs.jsonl").is_file():
        print(f"no runs.jsonl in {args.results}", file=sys.stderr)
        return 1
    print(f"report: {write_report(args.results)}")
    return 0


def cmd_list(argv: Sequence[str]) -> int:
    from .datasets import QUICK_BLACKBOX, QUICK_FEYNMAN, DataNotFound, list_datasets, resolve_data_dir
    from .methods import METHODS

    p = argparse.ArgumentParser(prog="dgsr bench list", description="List suites, quick subset and methods.")
    p.add_argument("--data", default=None)
    p.add_argument("--cache", default=None)
    args = p.parse_args(argv)
    print("methods: " + ", ".join(sorted(METHODS)) + "  (also dgsr[-random|-neural|-semantic][-param][-innerN][-const-X][-sel-X][-kN])")
    print("quick Feynman: " + ", ".join(QUICK_FEYNMAN))
    print("quick black-box: " + ", ".join(QUICK_BLACKBOX))
    try:
        data_dir = resolve_data_dir(args.data, args.cache)
    except DataNotFound as exc:
        print(exc)
        return 1
    for suite in ("feynman", "blackbox", "strogatz", "blackbox-narrow"):
        print(f"{suite}: {len(list_datasets(suite, data_dir))} datasets in {data_dir}")
    print(f"classic: {len(list_datasets('classic', data_dir))} laws (packaged list, regenerated per seed)")
    from .laws import laws_in_half

    print(f"laws: {len(laws_in_half('all'))} entries (packaged catalogue, regenerated per seed): "
          f"develop {len(laws_in_half('develop'))}, confirm {len(laws_in_half('confirm'))} (--half)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dgsr bench``; ``argv`` excludes the words ``dgsr bench``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return cmd_report(argv[1:])
    if argv[:1] == ["list"]:
        return cmd_list(argv[1:])
    if argv[:1] == ["run"]:  # `dgsr bench run ...` is accepted as a synonym
        argv = argv[1:]
    return cmd_run(run_parser().parse_args(argv))


def add_subparsers(subparsers) -> argparse.ArgumentParser:
    """Register ``bench`` on the main CLI's subparsers; the parsed namespace's ``func(ns)`` runs it.

    Everything after ``bench`` is passed through untouched to :func:`main`.
    """
    p = subparsers.add_parser("bench", help="run the SRBench-style benchmark or write its report",
                              add_help=False, prefix_chars="\0")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(func=lambda ns: main(ns.bench_args))
    return p


if __name__ == "__main__":
    raise SystemExit(main())
