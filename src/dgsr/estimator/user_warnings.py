"""Warnings that point at the user's line: the caller of ``SymbolicRegressor.fit`` (or of
:func:`dgsr.estimator.fit_front.fit_front`, called directly), however deep in the fit they arise.

A fixed ``stacklevel`` counts frames, and every change to the call chain between ``fit`` and
the warning moved it; here the frame of the outermost registered entry point is found instead.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import CodeType
from typing import TypeVar

_ENTRY_POINTS: set[CodeType] = set()

F = TypeVar("F", bound=Callable)


def entry_point(func: F) -> F:
    """Register ``func`` (unchanged) as a place users call: warnings inside it point at its caller."""
    _ENTRY_POINTS.add(func.__code__)
    return func


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the caller of the outermost entry point on the stack (at this
    function's caller where there is none)."""
    level, depth = 2, 1
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _ENTRY_POINTS:
            level = depth + 2  # stacklevel 2 is the frame at depth 1: the entry point's caller is one further
        frame, depth = frame.f_back, depth + 1
    warnings.warn(message, category, stacklevel=level)
