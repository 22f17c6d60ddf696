"""``dgsr fit --units "m1=kg,m2=kg,r=m,F=N"``: the columns' and the target's units (PySR's
``X_units``, ``y_units``, :mod:`dgsr.core.units`), one ``column=unit`` pair each, separated by
commas; a column left out is a pure number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dgsr.cli.errors import CLIError


def parse_units_option(text: str | None, inputs: Sequence[Any], targets: Sequence[str]) -> dict[str, Any]:
    """``fit``'s ``X_units`` and ``y_units`` from ``--units`` (empty without it); a pair that is not
    ``column=unit`` or names no column of the table is a :class:`CLIError`."""
    if text is None:
        return {}
    given: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(",") if p.strip()):
        name, eq, unit = pair.partition("=")
        if not eq or not name.strip() or not unit.strip():
            raise CLIError(f"--units takes column=unit pairs separated by commas, such as m=kg,v=m/s; got {pair!r}")
        given[name.strip()] = unit.strip()
    known = [str(c) for c in inputs] + list(targets)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise CLIError(f"--units names {', '.join(map(repr, unknown))}, not a column of the table "
                       f"(the columns are {', '.join(known)})")
    y_units = [given.get(t, "1") for t in targets]
    return {"X_units": [given.get(str(c), "1") for c in inputs],
            "y_units": y_units[0] if len(targets) == 1 else y_units}
