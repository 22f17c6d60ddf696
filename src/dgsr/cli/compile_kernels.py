"""``dgsr compile``: compile the search's numerical kernels now, into numba's disk cache.

A fit compiles them itself the first time after installing (about 20 s, not counted against
``max_time``). Run this once where that first fit should not pay it: at the end of building a
container image, or after installing on a cluster before starting many short jobs. A later run
finds them compiled and only loads them.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_subparser(subparsers: Any) -> None:
    """Register ``dgsr compile`` (plug-in hook of :mod:`dgsr.cli.app`)."""
    parser = subparsers.add_parser(
        "compile", help="compile the numerical kernels now (once after installing; e.g. in a container build)",
        description=__doc__.split("\n\n", 1)[1])
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Warm the kernels up and say whether they were compiled or only loaded, and where they are kept."""
    from dgsr.core.kernels import compiler
    from dgsr.estimator.warm_up import warm_up_kernels

    if not compiler.AVAILABLE:
        print("the compiled kernels are off (DGSR_NO_JIT is set): nothing to compile")
        return 0
    warm = warm_up_kernels()
    path = compiler.cache_path()
    where = f" (numba keeps them in its cache, e.g. {path})" if path else ""
    if warm.compiled:
        print(f"compiled the numerical kernels in {warm.seconds:.1f} s{where}")
    else:
        print(f"the numerical kernels were compiled already: loaded in {warm.seconds:.1f} s{where}")
    return 0
