"""The laws section of ``report.md``: recovery, extrapolation and no-signal controls, per half.

Aggregation: per (method, law) the mean over seeds of test R², size, exact and recovered, and the
median over seeds of the extrapolation R² (one wild seed should not decide the mean); then per
half the median over laws, and rates in %. *Noise-free* laws are the entries with a ground truth
whose training targets carry no noise (base laws, distractor and tiny variants). Failed runs count
as not recovered and are left out of the R² and size statistics, as in the other suites; an ``ok``
run whose extrapolation is not finite counts as R² = -inf.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .laws import get_law
from .report import fmt_value, markdown_table


def _law_info(name: str) -> dict[str, object]:
    try:
        law = get_law(name)
    except KeyError:  # a results file from an older catalogue: keep the run, without a half
        return {"half": None, "kind": None, "law_noise": 0.0, "no_signal": False}
    return {"half": law.half, "kind": law.kind, "law_noise": law.noise, "no_signal": law.no_signal}


def laws_per_dataset(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (label, law): half, kind, effective training noise and the seed aggregates."""
    d = df[df["suite"] == "laws"].copy()
    if d.empty:
        return pd.DataFrame()
    for col in ("r2_extrap", "recovered", "exact", "r2_linear"):
        if col not in d:
            d[col] = None
    # From the catalogue, not the rows: a run killed before its post-processing has no half or kind.
    info = pd.DataFrame([_law_info(n) for n in d["dataset"]], index=d.index)
    d = pd.concat([d.drop(columns=[c for c in info.columns if c in d]), info], axis=1)
    # The entry's own noise level wins over --noise (as in the runner).
    d["noise_eff"] = np.where(d["law_noise"] > 0, d["law_noise"], pd.to_numeric(d["noise"], errors="coerce"))
    extrap = pd.to_numeric(d["r2_extrap"], errors="coerce")
    d["extrap_ok"] = extrap.where(~d["ok"] | extrap.notna(), -np.inf).where(d["ok"])
    d["recovered_ok"] = d["ok"] & (d["recovered"] == True)
    d["exact_ok"] = d["ok"] & (d["solution"] == True)
    d["r2_ok"] = d["r2"].where(d["ok"])
    d["size_ok"] = d["size"].where(d["ok"])
    d["r2_linear"] = pd.to_numeric(d["r2_linear"], errors="coerce")
    # The linear baseline is a property of the split, so a failed run borrows it from its seed's others.
    d["r2_linear"] = d.groupby(["dataset", "seed", "noise_eff"])["r2_linear"].transform("mean")
    keys = ["label", "dataset", "half", "kind", "noise_eff", "no_signal"]
    return d.groupby(keys, as_index=False, dropna=False).agg(
        runs=("ok", "size"), failures=("ok", lambda s: int((~s).sum())), r2=("r2_ok", "mean"),
        size=("size_ok", "mean"), exact=("exact_ok", "mean"), recovered=("recovered_ok", "mean"),
        r2_extrap=("extrap_ok", "median"), r2_linear=("r2_linear", "mean"))


def laws_summary(per: pd.DataFrame) -> pd.DataFrame:
    """One row per (half, label): counts, medians and rates (in %) over the laws of that half."""
    out = []
    for (half, label), g in per.groupby(["half", "label"], sort=True):
        truth = g[~g["no_signal"].astype(bool)]
        clean = truth[truth["noise_eff"] == 0]
        row: dict[str, object] = {
            "half": half, "method": label, "laws": len(truth), "noise_free": len(clean),
            "failures": int(g["failures"].sum()), "median_r2": truth["r2"].median(),
            "median_size": truth["size"].median(), "exact": 100 * clean["exact"].mean(),
            "recovered": 100 * clean["recovered"].mean(), "median_r2_extrap": clean["r2_extrap"].median()}
        for level in sorted(x for x in truth["noise_eff"].unique() if x > 0):
            at_level = truth.loc[truth["noise_eff"] == level, "recovered"]
            row[f"recovered_noise_{level:g}"] = 100 * at_level.mean()
        ns = g[g["no_signal"].astype(bool)]
        row.update(no_signal=len(ns), no_signal_r2=ns["r2"].mean(),
                   no_signal_r2_linear=ns["r2_linear"].mean())
        out.append(row)
    return pd.DataFrame(out)


def laws_section(df: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    """Markdown lines of the laws section (empty without laws runs) and the per-law table."""
    per = laws_per_dataset(df)
    if per.empty:
        return [], per
    summary = laws_summary(per)
    lines = ["## Laws catalogue (development protocol)", ""]
    for half in ("develop", "confirm"):
        s = summary[summary["half"] == half]
        if s.empty:
            continue
        noisy = sorted(c for c in s.columns if c.startswith("recovered_noise_"))
        headers = ["method", "laws", "failures", "median test R²", "median size", "exact (%)",
                   "recovered (%)", "median extrapolation R²"] + [
                   f"recovered at noise {c[len('recovered_noise_'):]} (%)" for c in noisy]
        rows = [[r["method"], f"{r['laws']} ({r['noise_free']} noise-free)", str(r["failures"]),
                 fmt_value(r["median_r2"]), fmt_value(r["median_size"], 1), fmt_value(r["exact"], 1),
                 fmt_value(r["recovered"], 1),
                 fmt_value(r["median_r2_extrap"])] + [fmt_value(r[c], 1) for c in noisy] for _, r in s.iterrows()]
        lines += [f"### Half: {half}", "", *markdown_table(headers, rows), ""]
        ns = per[(per["half"] == half) & per["no_signal"].astype(bool)]
        if len(ns):
            ns_rows = [[r["label"], r["dataset"], fmt_value(r["r2"]), fmt_value(r["r2_linear"]),
                        fmt_value(r["r2"] - r["r2_linear"])] for _, r in ns.iterrows()]
            lines += [("No-signal controls (y independent of X): test R² of the method against least "
                       "squares on the same split; a method above the linear baseline is fitting noise."), "",
                      *markdown_table(["method", "dataset", "test R²", "linear test R²", "difference"], ns_rows), ""]
    lines += [("Recovered = SRBench's symbolic solution (checked when test R² > 0.5) or R² ≥ 0.999 against "
               "the noise-free law on the stretched box (each range widened by half its width on both sides, "
               "in log space for log-uniform variables, within the variable's domain). Rates and the "
               "extrapolation median are over the noise-free laws; noisy variants have their own recovered "
               "rates. Mean over seeds per law (median for extrapolation R²), then median or mean over laws; "
               "`laws.csv` has every law."), ""]
    return lines, per
