"""Run a function with a wall-time cap (SIGALRM), for SymPy work that can run for minutes.

The alarm raises a private ``BaseException`` so that the ``except Exception`` blocks inside SymPy
cannot swallow it, and it fires again every :data:`RETRY_S` seconds until the cap is lifted: an
exception raised while Python runs a garbage-collector or weakref callback is printed and dropped,
so a single alarm can be lost. Such a dropped alarm is ours and expected: while the cap is armed,
``sys.unraisablehook`` passes it over rather than report it (pytest's hook formats each one, and
a retried alarm landing in that formatting failed a test of a fresh clone, 2026-11-28). Lifting
the cap is written so that an alarm arriving at any point is either caught here or arrives after
the handler has stood down; none escapes to the caller.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from dgsr.runtime.interrupts import raised_as

T = TypeVar("T")

RETRY_S = 0.05
"""Seconds between repeated alarms once the cap has run out."""


class TimeCapExceeded(Exception):
    """A capped computation ran past its allowance (raised by callers that want an error)."""


class _Alarm(BaseException):
    """The alarm itself; never leaves :func:`run_capped`."""


def can_cap() -> bool:
    """Whether a cap can be armed here: POSIX interval timers, in the main thread only."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def run_capped(fn: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
    """Call ``fn()``, interrupting it after ``seconds``; returns ``(finished, value)``.

    ``(False, None)`` when it ran over. Where no cap can be armed (``seconds <= 0``, another
    thread, Windows) ``fn`` runs to its end uncapped. A timer that was pending before the call
    (pytest-timeout's, say) is put back with the time it had left.
    """
    if seconds <= 0 or not can_cap():
        return True, fn()

    armed = [True]

    def _alarm(signum, frame):
        if armed[0]:
            raise _Alarm

    reporter = sys.unraisablehook

    def _pass_over_alarms(unraisable) -> None:
        if not isinstance(unraisable.exc_value, _Alarm):
            reporter(unraisable)

    previous = signal.signal(signal.SIGALRM, _alarm)
    sys.unraisablehook = _pass_over_alarms
    started = time.monotonic()
    outer = 0.0
    finished, value = False, None
    try:
        try:
            try:
                outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds, RETRY_S)
                value = fn()
                finished = True
            finally:
                _lift(armed, previous)
        except (_Alarm, SystemError) as err:
            if not raised_as(err, _Alarm):
                raise
            if not finished:  # an alarm during the lift after fn() returned keeps its value
                value = None
    finally:
        # An alarm that lands after the inner ``finally`` starts and before ``_lift`` is inside
        # its own ``try`` skips that lift (it goes to the handler above, timer still running,
        # handler still armed): lift again here. The next alarm is RETRY_S away, far more than
        # this takes; lifting twice is harmless.
        _lift(armed, previous)
        sys.unraisablehook = reporter
        if outer > 0:  # someone else's timer was pending: put it back with the time it had left
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3))
    return finished, value


def _lift(armed: list[bool], previous) -> None:
    """Stop the timer and restore the previous handler; an alarm arriving meanwhile is retried."""
    while True:
        try:
            armed[0] = False  # from here on the handler returns without raising
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            return
        except _Alarm:
            continue
