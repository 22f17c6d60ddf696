"""The two shapes a Ctrl-C reaches Python code in, for tests that interrupt something."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def ctrl_c() -> None:
    """What the SIGINT handler raises in Python code."""
    raise KeyboardInterrupt


def ctrl_c_through_compiled_code() -> None:
    """What reaches the caller when the handler ran while compiled code was returning: CPython's
    ``SystemError`` with the ``KeyboardInterrupt`` as its cause, as ``_Py_CheckFunctionResult``
    builds it (the message names the function)."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as cause:
        raise SystemError("CPUDispatcher(<function _analyse at 0x7f2954962980>) returned a result "
                          "with an exception set") from cause


CTRL_C_SHAPES = [ctrl_c, ctrl_c_through_compiled_code]
"""Both shapes, for ``pytest.mark.parametrize``."""


def interrupted_at_call(real: Callable[..., Any], n: int, shape: Callable[[], None]) -> Callable[..., Any]:
    """``real``, except that its ``n``-th call meets a Ctrl-C of ``shape`` instead of running;
    the wrapper's ``calls`` counts the calls."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wrapper.calls += 1
        if wrapper.calls == n:
            shape()
        return real(*args, **kwargs)

    wrapper.calls = 0
    return wrapper
