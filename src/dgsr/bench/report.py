"""Aggregate ``runs.jsonl`` into ``report.md``, CSV tables and the paper's Figure 3 / Figure 4 plots.

Aggregation as in SRBench and the paper (§4.2): mean over seeds per dataset, then the median over
black-box datasets and the mean over Feynman (and Strogatz) problems. Front ranks by Pareto
dominance on (accuracy up, size down): rank 1 = methods no other method dominates, rank 2 = the
front once rank 1 is removed, and so on (the paper numbers them from 0).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .runner import RESULTS_FILE, read_rows, run_key

SOLVED_R2 = 0.99
STRICT_R2 = 0.999
GROUND_TRUTH_SUITES = ("feynman", "strogatz", "classic")


def pareto_ranks(accuracy: Sequence[float], size: Sequence[float]) -> list[int]:
    """Front rank of each point (1 = non-dominated) for accuracy to maximise and size to minimise.

    A point dominates another if it is no worse on both and strictly better on one. NaN points get rank 0.
    """
    points = [(float(a), float(s)) for a, s in zip(accuracy, size)]
    ranks = [0] * len(points)
    left = {i for i, (a, s) in enumerate(points) if not (np.isnan(a) or np.isnan(s))}
    rank = 0
    while left:
        rank += 1
        front = {i for i in left if not any(
            points[j][0] >= points[i][0] and points[j][1] <= points[i][1] and points[j] != points[i]
            for j in left)}
        for i in front:
            ranks[i] = rank
        left -= front
    return ranks


def load_results(results_dir: str | Path) -> pd.DataFrame:
    """The run rows of ``results_dir/runs.jsonl`` with a ``label`` per method configuration."""
    latest: dict[tuple, dict] = {}
    for r in read_rows(Path(results_dir) / RESULTS_FILE):
        if "method" in r:
            latest[run_key(r)] = r  # a retried run (--retry-failed) replaces its earlier row
    df = pd.DataFrame(list(latest.values()))
    if df.empty:
        return df
    for col in ("r2_test", "size", "solution", "evals", "curve"):
        if col not in df:
            df[col] = None
    df["ok"] = df["status"] == "ok"
    df["r2"] = pd.to_numeric(df["r2_test"], errors="coerce")
    df["size"] = pd.to_numeric(df["size"], errors="coerce")
    # Where the budget settings differ within one file, they become part of the method's label.
    varying = [c for c in ("time", "noise", "evals") if df[c].astype(str).nunique() > 1]

    def label(row) -> str:
        parts = [f"{c}={row[c]:g}" if isinstance(row[c], (int, float)) else f"{c}={row[c]}" for c in varying]
        return row["method"] + (f" [{', '.join(parts)}]" if parts else "")

    df["label"] = df.apply(label, axis=1)
    return df


def per_dataset(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per (label, suite, dataset). Failed runs count as not solved, and are left out
    of the R² and size means (they are counted separately as failures)."""
    d = df.assign(
        solved=df["ok"] & (df["r2"] >= SOLVED_R2),
        solved_strict=df["ok"] & (df["r2"] > STRICT_R2),
        exact=df["ok"] & (df["solution"] == True),
        r2_ok=df["r2"].where(df["ok"]),
        size_ok=df["size"].where(df["ok"]),
    )
    return d.groupby(["label", "suite", "dataset"], as_index=False).agg(
        runs=("ok", "size"), failures=("ok", lambda s: int((~s).sum())), r2=("r2_ok", "mean"),
        size=("size_ok", "mean"), solved=("solved", "mean"), solved_strict=("solved_strict", "mean"),
        exact=("exact", "mean"))


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per method label: runs, failures, black-box medians, ground-truth rates (in %)."""
    pdset = per_dataset(df)
    out = []
    for label, group in pdset.groupby("label", sort=True):
        row: dict[str, object] = {"method": label, "runs": int(group["runs"].sum()),
                                  "failures": int(group["failures"].sum())}
        bb = group[group["suite"] == "blackbox"]
        row.update(bb_datasets=len(bb), bb_median_r2=bb["r2"].median(), bb_median_size=bb["size"].median())
        for suite in GROUND_TRUTH_SUITES:
            gt = group[group["suite"] == suite]
            row.update({f"{suite}_problems": len(gt), f"{suite}_r2_099": 100 * gt["solved"].mean(),
                        f"{suite}_r2_0999": 100 * gt["solved_strict"].mean(),
                        f"{suite}_exact": 100 * gt["exact"].mean(), f"{suite}_median_size": gt["size"].median()})
        out.append(row)
    return pd.DataFrame(out)


# ---------------------------------------------------------------- plots


def _size_scale(ax, axis: str = "x") -> None:
    """Linear up to 100, logarithmic beyond (the paper's Figure 3); smooth at 100."""
    def forward(x):
        x = np.asarray(x, dtype=float)
        return np.where(x <= 100, x, 100 * (1 + np.log(np.maximum(x, 100) / 100)))

    def inverse(y):
        y = np.asarray(y, dtype=float)
        return np.where(y <= 100, y, 100 * np.exp(np.minimum(y, 1e4) / 100 - 1))

    (ax.set_xscale if axis == "x" else ax.set_yscale)("function", functions=(forward, inverse))
    top = (ax.get_xlim() if axis == "x" else ax.get_ylim())[1]
    ticks = [t for t in (0, 20, 40, 60, 80, 100, 200, 500, 1000, 2000, 5000, 10000) if t <= top]
    (ax.set_xticks if axis == "x" else ax.set_yticks)(ticks)


def _pareto_panel(ax, labels: list[str], acc: np.ndarray, size: np.ndarray, ylabel: str, title: str) -> None:
    ranks = pareto_ranks(acc, size)
    colors = {r: c for r, c in zip(sorted(set(ranks) - {0}), ("tab:red", "tab:orange", "tab:green", "tab:blue",
                                                              "tab:purple", "tab:gray"))}
    for r in sorted(set(ranks) - {0}):
        idx = sorted((i for i in range(len(labels)) if ranks[i] == r), key=lambda i: size[i])
        color = colors.get(r, "black")
        ax.plot(size[idx], acc[idx], "-", color=color, alpha=0.35, drawstyle="steps-post")
        ax.scatter(size[idx], acc[idx], color=color, s=40, zorder=3, label=f"rank {r}")
        for i in idx:
            ax.annotate(labels[i], (size[i], acc[i]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    biggest = float(np.nanmax(size)) * 1.15 if np.isfinite(size).any() else 0.0
    # end the axis on a tick of the log part, so the last tick is labelled
    ax.set_xlim(0, 110.0 if biggest <= 110 else next((t for t in (200, 500, 1000, 2000, 5000, 10000)
                                                      if t >= biggest), biggest))
    _size_scale(ax)
    ax.set_xlabel("median model size (SymPy nodes, simplified)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if any(ranks):
        ax.legend(fontsize=8, loc="lower right")


def plot_pareto(summary: pd.DataFrame, path: Path) -> Path | None:
    """Figure 3: black-box median R² and Feynman solved rate against median size, with front ranks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    bb = summary[summary["bb_datasets"] > 0]
    if len(bb):
        panels.append((bb, "bb_median_r2", "bb_median_size", "median test R²",
                       f"Black-box ({int(bb['bb_datasets'].max())} datasets)"))
    fy = summary[summary["feynman_problems"] > 0]
    if len(fy):
        panels.append((fy, "feynman_r2_099", "feynman_median_size", f"% problems with test R² ≥ {SOLVED_R2}",
                       f"Feynman ({int(fy['feynman_problems'].max())} problems)"))
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.6), squeeze=False)
    for ax, (data, acc_col, size_col, ylabel, title) in zip(axes[0], panels):
        _pareto_panel(ax, list(data["method"]), data[acc_col].to_numpy(float), data[size_col].to_numpy(float),
                      ylabel, title + " — upper left is better")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def learning_curves(df: pd.DataFrame, grid_points: int = 100) -> tuple[np.ndarray, dict[str, tuple]]:
    """Mean and 95% CI of best train R² (clipped at 0) on a shared log grid of evaluations, per label.

    Each run's curve is a step function (best so far); before its first point a run counts as 0 (it
    has found nothing yet: leaving it out would let the mean drop when it enters with a low value),
    after its last point it keeps its final value, so every run is in every mean and the mean never
    goes down. Grid points past the median run's last evaluation are NaN, so a curve ends where
    most of its runs ended.
    """
    runs = df[df["ok"] & df["curve"].apply(lambda c: isinstance(c, list) and len(c) > 0)]
    if runs.empty:
        return np.array([]), {}
    evals = np.concatenate([np.array([p[0] for p in c], float) for c in runs["curve"]])
    evals = evals[evals > 0]
    if evals.size == 0:
        return np.array([]), {}
    lo, hi = evals.min(), evals.max()
    grid = np.unique(np.geomspace(lo, max(hi, lo * 1.0001), grid_points))
    curves: dict[str, tuple] = {}
    for label, group in runs.groupby("label"):
        table, ends = [], []
        for curve in group["curve"]:
            e = np.array([p[0] for p in curve], float)
            ends.append(e.max())
            v = np.array([np.nan if p[1] is None else p[1] for p in curve], float)
            v = np.fmax.accumulate(np.clip(np.nan_to_num(v, nan=0.0), 0.0, 1.0))  # best so far, floor 0
            pos = np.searchsorted(e, grid, side="right") - 1
            table.append(np.where(pos >= 0, v[np.clip(pos, 0, None)], 0.0))
        values = np.vstack(table)
        n = np.sum(~np.isnan(values), axis=0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN grid columns before a run's first point
            mean = np.nanmean(np.where(n > 0, values, 0.0), axis=0)
            ci = 1.96 * np.nanstd(values, axis=0) / np.sqrt(np.maximum(n, 1))
        mean[(n == 0) | (grid > np.median(ends) * 1.0001)] = np.nan
        curves[label] = (mean, ci, n)
    return grid, curves


def plot_curves(df: pd.DataFrame, path: Path) -> Path | None:
    """Figure 4: train R² against evaluations, black-box datasets (all suites if none has curves)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scope = "black-box datasets"
    grid, curves = learning_curves(df[df["suite"] == "blackbox"])
    if not curves:
        scope = "all datasets"
        grid, curves = learning_curves(df)
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for label, (mean, ci, n) in curves.items():
        line = ax.plot(grid, mean, label=f"{label} ({int(n.max())} runs)")[0]
        ax.fill_between(grid, mean - ci, np.minimum(mean + ci, 1.0), color=line.get_color(), alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("evaluated expressions")
    ax.set_ylabel("best train R² so far (mean ± 95% CI, floored at 0)")
    ax.set_title(f"Accuracy against evaluations, {scope}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- markdown


def fmt_value(value, digits: int = 3) -> str:
    """A table cell: a dash for a missing value, floats to ``digits`` decimals."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _settings(df: pd.DataFrame) -> list[str]:
    seeds = sorted(int(s) for s in df["seed"].unique())
    lines = [f"- runs: {len(df)} ({int((~df['ok']).sum())} failed); seeds: {seeds}",
             (f"- time budgets (s): {sorted(float(t) for t in df['time'].unique())}; "
              f"noise levels: {sorted(float(x) for x in df['noise'].unique())}"),
             "- datasets: " + ", ".join(f"{s} {df.loc[df['suite'] == s, 'dataset'].nunique()}"
                                        for s in sorted(df["suite"].unique()))]
    return lines


#: Test R² of a shown formula further than this from its method's predictions: not what was fitted.
SHOWN_R2_TOLERANCE = 1e-4


def shown_differs(df: pd.DataFrame) -> pd.DataFrame:
    """Runs whose shown formula, evaluated on the test rows, misses the test R² of the method's own
    predictions by more than :data:`SHOWN_R2_TOLERANCE` (rows written before the bench recorded
    ``r2_shown``, or where the formula could not be evaluated, are not judged)."""
    if "r2_shown" not in df:
        return df.iloc[:0]
    gap = (pd.to_numeric(df["r2_shown"], errors="coerce") - df["r2"]).abs()
    return df[df["ok"] & (gap > SHOWN_R2_TOLERANCE)]


def _shown_differs(df: pd.DataFrame) -> list[str]:
    differs = shown_differs(df)
    if not len(differs):
        return []
    return ["## Shown formula differs from the fit", "",
            (f"In {len(differs)} runs the formula shown, evaluated on the test rows, does not give the test R² "
             "of the method's own predictions: a defect of that method's display."), "",
            *markdown_table(["method", "dataset", "seed", "test R²", "shown formula's R²", "formula"],
                            [[r["method"], r["dataset"], str(r["seed"]), fmt_value(r["r2_test"], 6),
                              fmt_value(r["r2_shown"], 6), str(r["model"]).replace("|", "\\|")[:120]]
                             for _, r in differs.head(50).iterrows()]), ""]


def _fitted_solutions(df: pd.DataFrame) -> list[str]:
    """The exact solutions that SRBench's check accepted on the fitted form only, listed so that
    the count can be read with and without them."""
    if "solution_form" not in df:
        return []
    fitted = df[df["solution_form"] == "fitted"]
    if not len(fitted):
        return []
    counts = ", ".join(f"{m}: {n}" for m, n in fitted.groupby("method").size().items())
    return ["## Exact on the fitted form", "",
            (f"{len(fitted)} runs ({counts}) are exact as the method evaluates its model but not as "
             "shown: the display rewrote the formula under the training columns' signs, the same function on "
             "the data that SymPy cannot prove equal for every sign."), "",
            *markdown_table(["method", "dataset", "seed", "formula shown"],
                            [[r["method"], r["dataset"], str(r["seed"]), str(r["model"]).replace("|", "\\|")[:120]]
                             for _, r in fitted.head(50).iterrows()]), ""]


def write_report(results_dir: str | Path) -> Path:
    """Write ``report.md``, ``summary.csv``, ``datasets.csv``, ``fig3_pareto.png`` and
    ``fig4_curves.png`` (when some method records curves), and ``laws.csv`` for laws runs, into
    ``results_dir``; return the report path."""
    out = Path(results_dir)
    df = load_results(out)
    report = out / "report.md"
    if df.empty:
        report.write_text("# Benchmark report\n\nNo runs in runs.jsonl yet.\n")
        return report
    summary = summarize(df)
    summary.to_csv(out / "summary.csv", index=False)
    per_dataset(df).to_csv(out / "datasets.csv", index=False)
    fig3 = plot_pareto(summary, out / "fig3_pareto.png")
    fig4 = plot_curves(df, out / "fig4_curves.png")

    lines = ["# Benchmark report", "", *_settings(df), ""]
    bb = summary[summary["bb_datasets"] > 0]
    ranks_bb = {m: r or None for m, r in zip(bb["method"], pareto_ranks(bb["bb_median_r2"], bb["bb_median_size"]))}
    fy = summary[summary["feynman_problems"] > 0]
    ranks_fy = {m: r or None for m, r in zip(fy["method"],
                                             pareto_ranks(fy["feynman_r2_099"], fy["feynman_median_size"]))}
    headers = ["method", "runs", "failures", "black-box median R²", "black-box median size", "black-box rank",
               "Feynman R² ≥ 0.99 (%)", "Feynman R² > 0.999 (%)", "Feynman exact (%)", "Feynman median size",
               "Feynman rank"]
    rows = [[r["method"], str(r["runs"]), str(r["failures"]), fmt_value(r["bb_median_r2"]), fmt_value(r["bb_median_size"], 1),
             fmt_value(ranks_bb.get(r["method"])), fmt_value(r["feynman_r2_099"], 1), fmt_value(r["feynman_r2_0999"], 1),
             fmt_value(r["feynman_exact"], 1), fmt_value(r["feynman_median_size"], 1), fmt_value(ranks_fy.get(r["method"]))]
            for _, r in summary.iterrows()]
    lines += ["## Summary", "", *markdown_table(headers, rows), ""]
    for suite, title in (("strogatz", "Strogatz"), ("classic", "Classic GP laws")):
        st = summary[summary[f"{suite}_problems"] > 0]
        if len(st):
            lines += [f"## {title}", "", *markdown_table(
                ["method", "R² ≥ 0.99 (%)", "R² > 0.999 (%)", "exact (%)", "median size"],
                [[r["method"], fmt_value(r[f"{suite}_r2_099"], 1), fmt_value(r[f"{suite}_r2_0999"], 1),
                  fmt_value(r[f"{suite}_exact"], 1), fmt_value(r[f"{suite}_median_size"], 1)] for _, r in st.iterrows()]), ""]
    from .law_report import laws_section

    law_lines, law_table = laws_section(df)
    if law_lines:
        law_table.to_csv(out / "laws.csv", index=False)
        lines += law_lines
    lines += [("Aggregation: mean over seeds per dataset, then median over black-box datasets and mean over "
              "Feynman/Strogatz/classic problems. Failed runs (status other than `ok`) count as unsolved in the rates "
              "and are left out of R² and size medians. Ranks: Pareto fronts on (accuracy, size), 1 = "
              "non-dominated (the paper's rank 0). Exact = SRBench's symbolic-solution check (checked only "
              "when test R² > 0.5)."), ""]
    if fig3 is not None:
        lines += ["## Accuracy against size (Figure 3)", "", f"![Pareto plot]({fig3.name})", ""]
    if fig4 is not None:
        lines += ["## Accuracy against evaluations (Figure 4)", "", f"![Learning curves]({fig4.name})", ""]
    lines += _shown_differs(df) + _fitted_solutions(df)
    failed = df[~df["ok"]]
    if len(failed):
        lines += ["## Failures", "", *markdown_table(
            ["method", "dataset", "seed", "status", "error"],
            [[r["method"], r["dataset"], str(r["seed"]), str(r["status"]),
              str(r.get("error") or "").replace("|", "\\|").replace("\n", " ")[:160]]
             for _, r in failed.head(50).iterrows()]), ""]
        if len(failed) > 50:
            lines += [f"... and {len(failed) - 50} more (see runs.jsonl).", ""]
    report.write_text("\n".join(lines))
    return report
