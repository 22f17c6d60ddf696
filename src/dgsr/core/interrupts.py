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
"""

from __future__ import annotations

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
