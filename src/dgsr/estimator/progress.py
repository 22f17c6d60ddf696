"""A live progress display on stderr for ``fit`` (``verbose=True``) and the CLI.

One line, refreshed a few times per second: a bar for the share of the budget spent (time or
evaluations, whichever is further along), elapsed time, evaluations, trial, best R² and its
size. On a terminal (or in Jupyter) the line is redrawn in place; in a log file or a pipe a line
is printed every ``log_interval`` seconds and once at the end. It is a context manager whose
``update`` is the search's ``on_progress`` callback; nothing of it is kept in the fitted
estimator (a rich ``Live`` holds a thread and a lock, which do not pickle).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

# Redrawing more often than this costs search time and nobody reads it.
_MIN_INTERVAL = 0.2
_BAR_WIDTH = 16


class ProgressLine:
    """Live one-line display of a running search.

    Parameters
    ----------
    max_time, max_evaluations:
        The budget, shown as the denominators (None = unbounded).
    console:
        Where to draw (default: a console on stderr).
    log_interval:
        Seconds between printed lines when the console is not a terminal.
    """

    def __init__(self, *, max_time: float | None = None, max_evaluations: int | None = None,
                 console: Console | None = None, log_interval: float = 10.0):
        self.max_time, self.max_evaluations = max_time, max_evaluations
        self.console = console if console is not None else Console(file=sys.stderr)
        self.log_interval = log_interval
        self._live: Live | None = None
        self._last = -math.inf
        self._last_logged = time.perf_counter()
        self._fraction = 0.0
        self._text = Text("starting the search ...")

    def __enter__(self) -> ProgressLine:  # noqa: PYI034  (typing.Self needs 3.11)
        # A redrawn line only makes sense on a terminal; in logs and pipes the last state is
        # printed once, on exit.
        if self.console.is_terminal or self.console.is_jupyter:
            self._live = Live(self._renderable(), console=self.console, auto_refresh=False, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._renderable(), refresh=True)
            self._live.__exit__(None, None, None)
            self._live = None
        else:
            self.console.print(self._plain_line(), markup=False, highlight=False, soft_wrap=True)

    def _renderable(self) -> Table:
        row = Table.grid(padding=(0, 1))
        row.add_row(ProgressBar(total=1.0, completed=self._fraction, width=_BAR_WIDTH),
                    Text(f"{100 * self._fraction:3.0f}%"), self._text)
        return row

    def _plain_line(self) -> str:
        filled = round(_BAR_WIDTH * self._fraction)
        return f"[{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {100 * self._fraction:3.0f}% {self._text.plain}"

    def update(self, p: Any, *, force: bool = False) -> None:
        """Callback for ``run_search(on_progress=...)``: ``p`` has elapsed, evaluations, best_r2,
        best_size and trials."""
        now = time.perf_counter()
        if not force and now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        self._text = Text(format_progress(p, self.max_time, self.max_evaluations))
        self._fraction = budget_fraction(p, self.max_time, self.max_evaluations)
        if self._live is not None:
            self._live.update(self._renderable(), refresh=True)
        elif now - self._last_logged >= self.log_interval:
            self._last_logged = now
            self.console.print(self._plain_line(), markup=False, highlight=False, soft_wrap=True)


def budget_fraction(p: Any, max_time: float | None, max_evaluations: int | None) -> float:
    """Share of the budget spent, in [0, 1]: time or evaluations, whichever is further along."""
    parts = [0.0]
    if max_time:
        parts.append(p.elapsed / max_time)
    if max_evaluations:
        parts.append(p.evaluations / max_evaluations)
    return min(max(parts), 1.0)


def format_progress(p: Any, max_time: float | None, max_evaluations: int | None) -> str:
    """The progress line's text, e.g. ``12.3/60 s | 45,120/500,000 evals | best R² 0.99871 (size 9) | trial 3``."""
    t = f"{p.elapsed:5.1f}" + (f"/{max_time:g} s" if max_time is not None else " s")
    ev = f"{int(p.evaluations):,}" + (f"/{int(max_evaluations):,}" if max_evaluations is not None else "")
    r2 = p.best_r2
    best = f"best R² {r2:.5f} (size {p.best_size})" if r2 is not None and math.isfinite(r2) else "no valid expression yet"
    return f"{t.strip()} | {ev} evals | {best} | trial {getattr(p, 'trials', 0)}"
