"""Variable names as users give them, written so that they can never be misread.

A column may be called ``E``, ``pi``, ``sin``, ``a b``, ``θ`` or ``x`y``. Inside, expressions only
know ``x0, x1, ...``; names appear in text (``equations_``, front.csv, the CLI), LaTeX and SymPy.
A *plain* name (an identifier that is not a constant or function name SymPy or our parser knows)
is written as is; any other is quoted with backticks, ``\\`` and ````` escaped by a backslash, and
:func:`dgsr.core.parser.parse` reads quoted names back. In LaTeX, reserved names are set upright
(``\\mathrm{E}``, never the constant e) and other non-identifiers as ``\\text{...}``.
"""

from __future__ import annotations

import re

from dgsr.core.operators import OPERATORS

#: Names that would read as something else: SymPy's printed constants, and functions of the parser.
RESERVED = frozenset({"E", "I", "pi", "oo", "zoo", "nan", "inf", "S", "N", "O", "Q", "ln", "abs", "Abs",
                      *OPERATORS})
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                  "%": r"\%", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def is_plain(name: str) -> bool:
    """True when ``name`` can be written bare: an identifier that is not reserved."""
    return _IDENTIFIER.fullmatch(name) is not None and name not in RESERVED


def quote(name: str) -> str:
    """``name`` as it is written in formula text: bare when plain, else in backticks."""
    if is_plain(name):
        return name
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def unquote(token: str) -> str:
    """The name inside a backtick-quoted token (the inverse of :func:`quote`)."""
    return re.sub(r"\\(.)", r"\1", token[1:-1])


def latex_name(name: str) -> str | None:
    """LaTeX for ``name`` where SymPy's own rendering would mislead (None: let SymPy render it)."""
    if is_plain(name):
        return None
    body = "".join(_LATEX_SPECIAL.get(ch, ch) for ch in name)
    return rf"\mathrm{{{body}}}" if _IDENTIFIER.fullmatch(name) else rf"\text{{{body}}}"
