"""The process-wide state a dgsr call must leave as it found it, and a fixture that sets it to
values of the test's own first (so that a call that installs its own and "restores" the default
is caught too)."""

from __future__ import annotations

import gc
import signal
import warnings
from typing import Any

import pytest
from threadpoolctl import threadpool_info


def process_state() -> dict[str, Any]:
    """What dgsr may change only for the duration of a call."""
    return {
        "gc thresholds": gc.get_threshold(),
        "SIGINT": signal.getsignal(signal.SIGINT),
        "SIGALRM": signal.getsignal(signal.SIGALRM),
        "SIGTERM": signal.getsignal(signal.SIGTERM),
        "showwarning": warnings.showwarning,
        "warning filters": list(warnings.filters),
        "blas threads": [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"],
    }


def _handler(signum: int, frame: Any) -> None:  # a program's own (never called here)
    pass


def _show(*args: Any, **kwargs: Any) -> None:  # a program's own warning display
    pass


@pytest.fixture
def own_process_state():
    """The test's own thresholds, SIGALRM/SIGTERM handlers and warning display, put back after."""
    saved = (gc.get_threshold(), signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGTERM),
             warnings.showwarning)
    gc.set_threshold(701, 11, 12)
    signal.signal(signal.SIGALRM, _handler)
    signal.signal(signal.SIGTERM, _handler)
    warnings.showwarning = _show
    try:
        yield process_state()
    finally:
        gc.set_threshold(*saved[0])
        signal.signal(signal.SIGALRM, saved[1])
        signal.signal(signal.SIGTERM, saved[2])
        warnings.showwarning = saved[3]
