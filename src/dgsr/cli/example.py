"""``dgsr example``: list or show the bundled example datasets."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError
from dgsr.cli.tables import read_table


def add_subparser(sub: Any) -> None:
    """Register ``dgsr example``."""
    p = sub.add_parser("example", help="list or show the bundled example datasets",
                       description="Bundled datasets from physical laws. Try `dgsr fit --example gravity`.")
    p.add_argument("name", nargs="?", help="example to show (default: list them)")
    p.add_argument("--path", action="store_true", help="print only the file's path")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``dgsr example [NAME] [--path]``."""
    from dgsr.examples import EXAMPLES

    if args.name is None:
        for ex in EXAMPLES.values():
            print(f"{ex.name:10s} {ex.law:28s} {ex.rows} rows  {ex.path}")
        print("fit one with: dgsr fit --example NAME")
        return 0
    path = example_path(args.name)
    if args.path:
        print(path)
        return 0
    ex = EXAMPLES[args.name]
    print(f"{ex.name}: {ex.law}  ({ex.rows} rows, target {ex.target})\n{path}\n")
    print(read_table(path).head(5).to_string(index=False))
    print(f"\nfit it with: dgsr fit --example {ex.name}")
    return 0


def example_path(name: str) -> Path:
    """The file of the bundled example ``name`` (CLIError naming the available ones if none)."""
    from dgsr.examples import EXAMPLES

    if name not in EXAMPLES:
        raise CLIError(f"no bundled example {name!r}; available: {', '.join(sorted(EXAMPLES))}")
    return EXAMPLES[name].path
