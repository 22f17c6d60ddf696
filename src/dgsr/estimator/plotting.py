"""The Pareto-front figure of a fitted :class:`~dgsr.SymbolicRegressor` (``plot_front``, ``dgsr fit``).

Loss against size on a log axis. Exact fits have loss 0 (or 1e-30) which a log axis cannot
show faithfully: losses below a floor 12 decades under the worst are drawn *at* the floor, and
the axis label says so with the floor's value, so no point pretends to a loss it does not have.
The selected formula is written in the legend (placed where it overlaps the data least), not
next to its point where it would cross the line; sizes get integer ticks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dgsr.core.display import equation_text, format_number

# Losses more than this many decades below the largest are drawn at the floor.
_FLOOR_DECADES = 12
_LABEL_CHARS = 70


def plot_front(table: pd.DataFrame, best_index: int, model_selection: str, target: str, ax: Any = None) -> Any:
    """Draw the front of an ``equations_`` ``table`` into ``ax`` (a new figure if None), row
    ``best_index`` marked as chosen by ``model_selection``, y named ``target``; returns the Axes."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # a dependency, but an environment may lack it: say how to get it
        raise ImportError("plot_front needs matplotlib: pip install matplotlib") from err
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    raw = table["loss"].to_numpy(dtype=float)
    quantity = "training MSE"
    if not np.isfinite(raw).all() or ((raw == 0) & (table["r2"].to_numpy() < 1)).any():
        # |y| beyond ~1e154 (or below ~1e-162): the MSE leaves the float range, 1 - R² does not
        raw, quantity = np.maximum(1.0 - table["r2"].to_numpy(dtype=float), 0.0), "1 - R² (training)"
    floor = 10.0 ** (np.floor(np.log10(max(float(raw.max()), 1e-300))) - _FLOOR_DECADES)
    floored = raw < floor
    loss = np.maximum(raw, floor)
    size = table["complexity"].to_numpy()
    ax.step(size, loss, where="post", color="0.6", zorder=1)
    ax.scatter(size[~floored], loss[~floored], color="tab:blue", zorder=2, label="Pareto front")
    if floored.any():
        ax.scatter(size[floored], loss[floored], color="tab:blue", marker="v", zorder=2,
                   label=f"loss below {format_number(floor, 2)} (drawn at it)")
    chosen = best_index
    text = f"{target} = {equation_text(table['sympy'].iloc[chosen])}"
    if len(text) > _LABEL_CHARS:
        text = text[: _LABEL_CHARS - 3] + "..."
    ax.scatter([size[chosen]], [loss[chosen]], s=120, facecolors="none", edgecolors="tab:red", linewidths=2,
               zorder=3, label=f"selected ({model_selection}, {quantity} {format_number(raw[chosen])}):\n{text}")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("size (nodes)")
    ylabel = f"{quantity} (log)"
    if floored.any():
        ylabel += f"; below {format_number(floor, 2)} drawn at {format_number(floor, 2)}"
    ax.set_ylabel(ylabel, fontsize=9)
    ax.set_title(f"Accuracy vs size for {target}")
    # The formula lives in the legend, which matplotlib places where it overlaps the data least.
    ax.legend(loc="best", fontsize=8)
    return ax
