"""Which dgsr pickled an estimator: recorded in the pickle, and said when another version loads it.

A pickle stores the estimator's attributes as they are; a dgsr whose attributes differ may load
it and then fail or predict differently. So ``__getstate__`` adds the writer's version and
``__setstate__`` warns (it does not refuse: a pickle of a nearby version often still works) when
the version is another one, or missing (pickles of dgsr 0.10.0 and earlier record none). A
parameter added since the pickle was written takes its default (:func:`parameter_defaults`), so
an old estimator can still be cloned and refitted. The versioned JSON model file
(:mod:`dgsr.estimator.model_file`) is the way between versions.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

#: The state key of the version that wrote a pickle.
VERSION_KEY = "_dgsr_version"


class DgsrVersionWarning(UserWarning):
    """An estimator pickled by another dgsr version was loaded."""


def _dgsr_version() -> str:
    from dgsr import __version__

    return __version__


def with_version(state: dict[str, Any]) -> dict[str, Any]:
    """The pickle ``state`` with the version of the dgsr that writes it."""
    return {**state, VERSION_KEY: _dgsr_version()}


def checked_state(state: dict[str, Any], name: str) -> dict[str, Any]:
    """``state`` without its version, after a :class:`DgsrVersionWarning` if another dgsr wrote it."""
    state = dict(state)
    written = state.pop(VERSION_KEY, None)
    current = _dgsr_version()
    if written != current:
        by = f"dgsr {written}" if written is not None else "a dgsr that recorded no version (0.10.0 or earlier)"
        warnings.warn(f"This {name} was pickled by {by} and is loaded by dgsr {current}: a pickle is meant for "
                      "the version that wrote it, and may fail or predict differently in another. Refit it, or "
                      "move models between versions with est.save(path) and SymbolicRegressor.from_file(path).",
                      DgsrVersionWarning, stacklevel=3)
    return state


def parameter_defaults(cls: type) -> dict[str, Any]:
    """The defaults of ``cls.__init__``'s parameters, by name: what a pickle of an older
    version lacks for a parameter added since."""
    return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.default is not inspect.Parameter.empty}
