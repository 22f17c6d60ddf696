"""Variable names as users give them, written so that they can never be misread.

A column may be called ``E``, ``pi``, ``sin``, ``a b``, ``θ``, ``S`` or ``x`y``. Inside, expressions
only know ``x0, x1, ...``; names appear in text (``equations_``, front.csv, the CLI), LaTeX and SymPy.
A *plain* name (an identifier that printed formula text never uses for anything else) is written as
is; any other is quoted with backticks, ``\\`` and ````` escaped by a backslash, and
:func:`dgsr.core.parser.parse` reads quoted names back. Only what a formula can print for a
constant or a function is reserved (``E``, ``I``, ``pi``, ``sin``, ...): SymPy's other names
(``S``, ``N``, ``O``, ``Q``) never appear bare in a printed formula, so a column ``S`` stays ``S``.
Where the reader knows the columns (the command line's front and front.csv), :func:`quote_where_needed`
quotes only names that are not identifiers or that the formula's own text also uses. In LaTeX, reserved names are set upright
(``\\mathrm{E}``, never the constant e) and other non-identifiers as ``\\text{...}``.
"""

from __future__ import annotations

import re

from dgsr.core.operators import OPERATORS

#: Names that would read as something else in printed text: SymPy's printed constants
#: (``E``, ``I``, ``pi``, ``oo``, ``zoo``, ``nan``), non-finite numbers, and function names.
RESERVED = frozenset({"E", "I", "pi", "oo", "zoo", "nan", "inf", "ln", "abs", "Abs", *OPERATORS})
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


def is_identifier(name: str) -> bool:
    """True when ``name`` is one token of formula text (letters, digits, ``_``; not a digit first)."""
    return _IDENTIFIER.fullmatch(name) is not None


def quote_where_needed(name: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """``name`` bare when it is an identifier that the text around it does not also use
    (``taken``: the other identifiers of the formula's text), else in backticks."""
    if is_identifier(name) and name not in taken:
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
