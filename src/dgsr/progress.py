"""A live progress line on stderr for ``fit`` (``verbose=True``) and the CLI.

One line, refreshed a few times per second: elapsed time, evaluations, best R² and its size.
It is a context manager whose ``update`` is the search's ``on_progress`` callback; nothing of
it is kept in the fitted estimator (a rich ``Live`` holds a thread and a lock, which do not
pickle).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

# Redrawing more often than this costs search time and nobody reads it.
_MIN_INTERVAL = 0.2


class ProgressLine:
    """Live one-line display of a running search.

    Parameters
    ----------
    max_time, max_evaluations:
        The budget, shown as the denominators (None = unbounded).
    console:
        Where to draw (default: a console on stderr).
    """

    def __init__(self, *, max_time: float | None = None, max_evaluations: int | None = None,
                 console: Console | None = None):
        self.max_time, self.max_evaluations = max_time, max_evaluations
        self.console = console if console is not None else Console(file=sys.stderr)
        self._live: Live | None = None
        self._last = -math.inf
        self._text = Text("dgsr: starting search ...")

    def __enter__(self) -> ProgressLine:  # noqa: PYI034  (typing.Self needs 3.11)
        # A redrawn line only makes sense on a terminal; in logs and pipes the last state is
        # printed once, on exit.
        if self.console.is_terminal:
            self._live = Live(self._text, console=self.console, auto_refresh=False, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._text, refresh=True)
            self._live.__exit__(None, None, None)
            self._live = None
        else:
            self.console.print(self._text)

    def update(self, p: Any, *, force: bool = False) -> None:
        """Callback for ``run_search(on_progress=...)``: ``p`` has elapsed, evaluations, best_r2,
        best_size and trials."""
        now = time.perf_counter()
        if not force and now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        self._text = Text(format_progress(p, self.max_time, self.max_evaluations))
        if self._live is not None:
            self._live.update(self._text, refresh=True)


def format_progress(p: Any, max_time: float | None, max_evaluations: int | None) -> str:
    """The progress line's text, e.g. ``12.3/60 s | 45,120/500,000 evals | best R² 0.99871 (size 9)``."""
    t = f"{p.elapsed:5.1f}" + (f"/{max_time:g} s" if max_time is not None else " s")
    ev = f"{int(p.evaluations):,}" + (f"/{int(max_evaluations):,}" if max_evaluations is not None else "")
    r2 = p.best_r2
    best = f"best R² {r2:.5f} (size {p.best_size})" if r2 is not None and math.isfinite(r2) else "no valid expression yet"
    return f"dgsr {t} | {ev} evals | trial {getattr(p, 'trials', 0)} | {best}"
