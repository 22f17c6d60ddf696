"""Messages in the command line's terms: an estimator's ``max_size=12`` is ``--max-size 12`` to
the user of ``dgsr fit``, and ``index`` is ``--index`` to the user of ``dgsr predict``."""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from dgsr.cli.errors import CLIError
from dgsr.runtime.warning_display import showing_warnings_with

#: The estimator's parameters as ``dgsr fit`` spells them (messages name the flag, not the parameter).
FLAGS = {"max_time": "--time", "max_evaluations": "--evals", "random_state": "--seed", "policy": "--policy",
         "n_samples": "--k", "constant_fitting": "--constants", "model_selection": "--selection",
         "n_jobs": "--jobs", "parallel_backend": "--backend", "operators": "--operators",
         "target_r2": "--target-r2", "max_size": "--max-size", "inner_fit_steps": "--inner-fit-steps",
         "guesses": "--guess", "nested_constraints": "--nested-constraints", "constraints": "--constraints",
         "maxdepth": "--maxdepth", "complexity_of_operators": "--complexity-of-operators",
         "complexity_of_constants": "--complexity-of-constants", "complexity_of_variables": "--complexity-of-variables",
         "batch_size": "--batch-size"}
# A bare parameter name is a flag where it is plainly one (``policy must be ...``); the common
# words among them (policy, operators) are translated only when they start the message or carry a value.
_WORDS = ("policy", "operators", "index")
#: ``dgsr predict``'s one flag that the estimator's messages name.
PREDICT_FLAGS = {"index": "--index"}


@functools.lru_cache(maxsize=8)
def _parameter_pattern(names: tuple[str, ...]) -> re.Pattern:
    return re.compile(r"(?<![\w.-])(" + "|".join(sorted(names, key=len, reverse=True)) + r")(=(\S+?))?(?=[\s,.;:)]|$)")


def cli_message(text: str, flags: Mapping[str, str] = FLAGS) -> str:
    """An estimator message in the command line's terms: ``max_size=12`` -> ``--max-size 12``,
    ``max_evaluations must ...`` -> ``--evals must ...``, ``equations_`` -> ``the front``."""
    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(3)
        if value is not None:
            return f"{flags[name]} {value}"
        if name in _WORDS and match.start() != 0:
            return name
        return flags[name]

    text = _parameter_pattern(tuple(flags)).sub(flag, text)
    text = re.sub(r"(--[\w-]+ must be )None(?:,| or) ", r"\1", text)  # a flag cannot be None
    return re.sub(r"\bequations_", "the front (front.csv)", text)


@contextlib.contextmanager
def for_the_cli(flags: Mapping[str, str] = FLAGS, errors: tuple[type[Exception], ...] = (ValueError,),
                reword: Callable[[str], str] = lambda text: text) -> Iterator[None]:
    """Estimator errors (``errors``) and warnings inside this block are worded for the command line
    (``flags``), then passed through ``reword``."""
    shown = warnings.showwarning

    def show(message: Any, *rest: Any, **kwargs: Any) -> None:
        shown(reword(cli_message(str(message), flags)), *rest, **kwargs)

    with showing_warnings_with(show):
        try:
            yield
        except errors as err:
            text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
            raise CLIError(reword(cli_message(str(text), flags))) from None
