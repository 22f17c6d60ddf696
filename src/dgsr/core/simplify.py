"""SymPy simplification with a time cap, and SRBench's size measure.

SymPy never runs on the search's hot path (CONTRACTS §1); these functions serve the final
Pareto front, reports and the benchmark's size column.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import sympy


class _Timeout(Exception):
    pass


@contextmanager
def _time_cap(seconds: float) -> Iterator[bool]:
    """Interrupt the body after ``seconds`` (SIGALRM; only possible in the main thread).

    Yields whether the cap is armed; where it cannot be (another thread, or Windows), callers
    fall back to cheaper rewriting.
    """
    armed = (
        seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not armed:
        yield False
        return

    def _raise(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def simplify(expr: sympy.Expr, timeout: float = 2.0) -> sympy.Expr:
    """``sympy.simplify`` capped at ``timeout`` seconds; the input is returned if it runs over."""
    try:
        with _time_cap(timeout) as armed:
            if not armed:
                return sympy.cancel(expr) if expr.is_rational_function() else expr
            return sympy.simplify(expr)
    except _Timeout:
        return expr
    except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs, e.g. zoo; keep the original)
        return expr


def round_floats(expr: sympy.Expr, digits: int = 4) -> sympy.Expr:
    """Round every float in ``expr`` to ``digits`` significant digits (for display and checks)."""
    replacements = {f: _round_float(f, digits) for f in expr.atoms(sympy.Float)}
    return expr.xreplace(replacements) if replacements else expr


def _round_float(f: sympy.Float, digits: int) -> sympy.Float:
    value = float(f)
    if value == 0.0 and f != 0 or not math.isfinite(value):
        return f.evalf(digits)  # beyond the float range (a user-unit constant such as 1e-400)
    return sympy.Float(float(f"{value:.{digits}g}"), digits)


def complexity(expr: sympy.Expr) -> int:
    """Number of nodes of the SymPy tree, as SRBench counts model size."""
    return sum(1 for _ in sympy.preorder_traversal(expr))
