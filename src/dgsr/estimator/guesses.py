"""``guesses``: formulas the user expects (PySR's parameter), seeding the search.

Each guess is text in the user's column names (a DataFrame's, else ``x0, x1, ...``), read by
:func:`dgsr.core.parser.parse` (no ``eval``). :func:`parse_guesses` checks them all at the start
of ``fit``, before any search: one that does not parse, uses an operator outside the allowed ones
is larger than ``max_size`` or breaks the user's constraints is one ValueError naming the guess and the problem.
:func:`seeded` turns them into the search's roots (:attr:`dgsr.search.config.SearchConfig.roots`):
in the search's units and searched columns, they are scored with fitted constants before the
first trial (so they join the archive), trials start from them in turn with the empty expression
(so the search improves on them), and they are offered to the final refit on all rows beside the
search's front, as a warm start's kept structures are (:mod:`dgsr.estimator.fit_front`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from dgsr.core.exponent_scaling import Scaling
from dgsr.core.expression import Expression
from dgsr.core.operators import OPERATORS, is_variable, variable_index, variable_symbol
from dgsr.core.parser import ParseError, parse
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.user_warnings import warn_user

#: How a power is written by the parser, for the message when that operator is not allowed.
_FROM_POWER = {"sq": "x**2", "sqrt": "x**0.5", "inv": "x**-1"}


def guess_texts(guesses: Any) -> tuple[str, ...]:
    """``guesses`` as a tuple of formula texts (None: none); ValueError for anything but a list of strings."""
    if guesses is None:
        return ()
    if isinstance(guesses, str) or not all(isinstance(g, str) for g in guesses):
        raise ValueError(f"guesses must be a list of formula strings, such as ['m1*m2/r**2'], got {guesses!r}.")
    return tuple(guesses)


def parse_guesses(config: FitConfig, names: Sequence[str]) -> list[Expression]:
    """The guesses of ``config`` as expressions of the columns ``names`` (the user's units);
    raises one ValueError naming the first guess that cannot be used and why."""
    allowed = config.allowed_operators()
    rules = config.formula_rules()
    parsed = []
    for text in guess_texts(config.guesses):
        try:
            expr = parse(text, list(names))
        except ParseError as err:
            known = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            raise ValueError(f"guess {text!r} cannot be used: {err} (the columns are {known}).") from None
        used = sorted({s for s in expr.symbols if s in OPERATORS and (allowed is not None and s not in allowed)})
        if used:
            how = ", ".join(f"{s!r}" + (f" (written {_FROM_POWER[s]})" if s in _FROM_POWER else "") for s in used)
            raise ValueError(f"guess {text!r} cannot be used: it uses the operator {how}, not among the allowed "
                             f"operators ({', '.join(allowed or ())}).")
        if expr.size > config.max_size:
            raise ValueError(f"guess {text!r} cannot be used: it has {expr.size} nodes, more than "
                             f"max_size={config.max_size}.")
        broken = None if rules is None else rules.violation(expr)
        if broken is not None:
            raise ValueError(f"guess {text!r} cannot be used: it breaks {broken}.")
        parsed.append(expr)
    return parsed


def seeded(config: FitConfig, names: Sequence[str], index: np.ndarray, scaling: Scaling) -> FitConfig:
    """``config`` with its guesses as search roots (``search_roots``): in the search's units
    (``scaling`` of all columns) over the searched columns ``index``. A guess naming a column the
    search does not use (``max_features``) is left out, with a warning."""
    if config.guesses is None:
        return config
    position = {int(column): i for i, column in enumerate(index)}
    inverse = Scaling(tuple(-e for e in scaling.x_exponents), -scaling.y_exponent)
    roots = []
    for text, expr in zip(guess_texts(config.guesses), parse_guesses(config, names)):
        missing = sorted(names[i] for i in expr.variables if i not in position)
        if missing:
            warn_user(f"guess {text!r} names {', '.join(missing)}, which the search does not use "
                      "(max_features): it is left out.")
            continue
        # In the search's units: y/2**e_y = f(x * 2**e) / 2**e_y, exactly (Scaling.to_user, inverted).
        searched = inverse.to_user(expr)
        roots.append(Expression(tuple(variable_symbol(position[variable_index(s)]) if is_variable(s) else s
                                      for s in searched.symbols), searched.constants))
    return dataclasses.replace(config, search_roots=tuple(roots))
