"""``dgsr fit``'s options for the user's rules on formulas: PySR's parameters
(:mod:`dgsr.core.formula_rules`) as flags, dicts written as JSON, e.g.
``--nested-constraints '{"sin": {"sin": 0}}' --constraints '{"/": [-1, 3]}' --maxdepth 6``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dgsr.cli.errors import CLIError

#: (flag, estimator parameter, kind, example): ``json`` flags hold a JSON object.
_OPTIONS = (
    ("--nested-constraints", "nested_constraints", "json", '\'{"sin": {"sin": 0, "cos": 0}}\''),
    ("--constraints", "constraints", "json", '\'{"/": [-1, 3], "sin": 5}\''),
    ("--maxdepth", "maxdepth", int, "6"),
    ("--complexity-of-operators", "complexity_of_operators", "json", '\'{"exp": 3}\''),
    ("--complexity-of-constants", "complexity_of_constants", float, "2"),
    ("--complexity-of-variables", "complexity_of_variables", float, "1"),
)


def add_rule_options(parser: argparse.ArgumentParser) -> None:
    """The six flags, each named after its estimator parameter."""
    helps = {
        "nested_constraints": "how often an operator may sit below another, as PySR's nested_constraints",
        "constraints": "the largest complexity of each operator's arguments (-1: any), as PySR's constraints",
        "maxdepth": "the deepest tree allowed (a leaf is depth 1)",
        "complexity_of_operators": "what each operator adds to a formula's complexity (default 1)",
        "complexity_of_constants": "what a constant adds to a formula's complexity (default 1)",
        "complexity_of_variables": "what a variable adds to a formula's complexity (default 1)",
    }
    for flag, name, kind, example in _OPTIONS:
        metavar = "JSON" if kind == "json" else "N" if kind is int else "X"
        parser.add_argument(flag, dest=name, default=None, metavar=metavar,
                            type=str if kind == "json" else kind, help=f"{helps[name]}; e.g. {flag} {example}")


def rule_params(args: argparse.Namespace) -> dict[str, Any]:
    """The estimator parameters the flags give (only those given); a JSON flag that is not a JSON
    object is a :class:`CLIError` naming the flag."""
    out: dict[str, Any] = {}
    for flag, name, kind, example in _OPTIONS:
        value = getattr(args, name, None)
        if value is None:
            continue
        if kind == "json":
            try:
                value = json.loads(value)
            except json.JSONDecodeError as err:
                raise CLIError(f"{flag} must be a JSON object such as {example}: {err.msg} at character "
                               f"{err.pos} of {value!r}") from None
            if not isinstance(value, dict):
                raise CLIError(f"{flag} must be a JSON object such as {example}, got {value!r}")
        out[name] = value
    return out
