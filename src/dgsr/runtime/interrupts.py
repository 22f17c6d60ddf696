"""Recognise a Ctrl-C however it reaches Python.

Python runs its SIGINT handler, which raises ``KeyboardInterrupt``, at the next bytecode it
executes. When that bytecode runs inside a call made by compiled code (a numba function boxing its
result, a C extension calling back into Python) and the compiled code returns a value anyway,
CPython replaces the pending ``KeyboardInterrupt`` by ``SystemError("<function> returned a result
with an exception set")`` whose ``__cause__`` is the ``KeyboardInterrupt``. Every place that turns a
first Ctrl-C into "stop and keep the best so far" catches both, and lets anything else through::

    try:
        ...
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        ...

A ``KeyboardInterrupt`` can also be lost: raised inside a garbage-collector callback or a
finalizer, Python prints and drops it. :func:`watching_ctrl_c` notes every Ctrl-C besides
raising it, so a loop that checks the note stops even then.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

INTERRUPTS: tuple[type[BaseException], ...] = (KeyboardInterrupt, SystemError)
"""The exception types a Ctrl-C can arrive as; narrow them with :func:`is_interrupt`."""


def is_interrupt(err: BaseException | None) -> bool:
    """Whether ``err`` is a Ctrl-C: a ``KeyboardInterrupt``, or CPython's ``SystemError`` chained
    from one (possibly through further such ``SystemError``)."""
    return raised_as(err, KeyboardInterrupt)


def raised_as(err: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``err`` is a ``kind`` raised by a signal handler: ``kind`` itself, or the
    ``SystemError`` CPython puts in its place when compiled code returned over it."""
    seen = 0
    while err is not None and seen < 16:  # a bound: a chain is short, but never trust a cycle
        if isinstance(err, kind):
            return True
        if not isinstance(err, SystemError):
            return False
        err = err.__cause__ if err.__cause__ is not None else err.__context__
        seen += 1
    return False


@dataclass
class CtrlCWatch:
    """What :func:`watching_ctrl_c` saw: ``seen`` turns True at the first Ctrl-C."""

    seen: bool = False


@contextlib.contextmanager
def watching_ctrl_c() -> Iterator[CtrlCWatch]:
    """Note every Ctrl-C while the block runs, and raise ``KeyboardInterrupt`` as Python's own
    handler does. Only where that handler is the one installed, in the main thread: a program
    (or an outer watch) with its own SIGINT handler keeps it, and ``seen`` then stays False."""
    watch = CtrlCWatch()
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield watch
        return

    def note_and_raise(signum, frame):
        watch.seen = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, note_and_raise)
    try:
        yield watch
    finally:
        if signal.getsignal(signal.SIGINT) is note_and_raise:  # someone else's since: leave theirs
            signal.signal(signal.SIGINT, signal.default_int_handler)
