"""The compiled kernels made ready before a fit's search starts.

numba compiles the search's kernels on their first call after installing (about 20 s on a laptop
core) and loads them from its disk cache in every later process (about 1-2 s). Both used to
happen lazily inside the first search of a process, so a first fit after installing spent its
``max_time`` compiling: 10 s gave 44 evaluations instead of thousands. :func:`warm_up_kernels`
runs a small search on fixed synthetic rows first, once per process (the compiled code then stays
loaded). The estimator does not count *compiling* against ``max_time`` (a one-time cost of an
installation, not of the method); *loading* compiled code it still counts, as before, so that
timed comparisons with other methods are unchanged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_WARM_ROWS = 64
_WARM_EVALUATIONS = 300  # enough for every kernel of a default search to run at least once
_WARM_INNER_FIT_STEPS = 3  # SymbolicRegressor's default inner_fit_steps (any positive count runs the same kernels)

_warmed = False  # this process has run the warm-up (compiled code lives as long as the process)


@dataclass(frozen=True)
class WarmUp:
    """What a warm-up took: ``seconds`` of wall time, and whether any kernel was ``compiled``
    (numba's disk cache was cold) rather than only loaded."""

    seconds: float = 0.0
    compiled: bool = False

    @property
    def compile_seconds(self) -> float:
        """The seconds a fit does not count against its ``max_time``."""
        return self.seconds if self.compiled else 0.0


def warm_up_kernels(announce: Callable[[], Any] | None = None, *, announce_after: float = 3.0) -> WarmUp:
    """Compile (or load from numba's cache) every kernel a default search calls.

    Runs once per process, and not at all without the kernels (``DGSR_NO_JIT`` or no numba):
    later calls return ``WarmUp()`` at once. ``announce()`` is called (from a timer thread) if the
    warm-up is still running after ``announce_after`` seconds, that is, when it is compiling rather
    than loading. The warm-up's randomness is its own: no user stream is drawn.
    """
    global _warmed
    from dgsr.core.kernels import compiler as jit

    if _warmed or not jit.AVAILABLE:
        return WarmUp()
    timer = threading.Timer(announce_after, announce) if announce is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    started, misses = time.perf_counter(), jit.compile_misses()
    try:
        _run_warm_up()
    except Exception:  # noqa: BLE001, S110  (a warm-up is an optimisation: the fit compiles what it needs itself)
        pass
    finally:
        if timer is not None:
            timer.cancel()
    _warmed = True
    return WarmUp(time.perf_counter() - started, jit.compile_misses() > misses)


def _run_warm_up() -> None:
    from dgsr.core.budget import Budget
    from dgsr.core.inner_fit import fit_inner_constants
    from dgsr.core.kernels import scoring as jit_scoring
    from dgsr.core.parser import parse
    from dgsr.policies.semantic.policy import SemanticPolicy
    from dgsr.search.mcts import SearchConfig, run_search

    rng = np.random.default_rng(0)
    X = rng.uniform(-2.0, 2.0, size=(_WARM_ROWS, 3))
    # Inner constants inside sin and exp, a square and a sum: every path of scoring, inner fit,
    # proposal ranking and the operand library runs.
    y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2] ** 2 + np.exp(-0.5 * X[:, 0])
    # With the inner fit as the estimator runs it: each child's fit and scoring is one kernel.
    result = run_search(X, y, SemanticPolicy(), config=SearchConfig(inner_fit_steps=_WARM_INNER_FIT_STEPS),
                        rng=np.random.default_rng(0), budget=Budget(max_evaluations=_WARM_EVALUATIONS))
    if result.stop_reason == "interrupted":  # the search caught a Ctrl-C meant for the user's fit
        raise KeyboardInterrupt
    # A term that is 0 on every row (a column of zeros): the inner fit's collinear fallback, which
    # only the data can reach, and the scoring of such a child apart from its fit.
    with_zero_term = parse("sin(1.5*x0) + sin(1.5*x1)", ["x0", "x1"])
    columns = np.stack([X[:, 0], np.zeros(_WARM_ROWS)])
    fit_inner_constants(with_zero_term, columns, y, steps=3)
    jit_scoring.score_sum(jit_scoring.encode_sum(with_zero_term.symbols), with_zero_term.constants, columns, y, True)
