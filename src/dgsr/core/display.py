"""How formulas and the Pareto front look in text: one number format, one table layout.

Every constant shown as text (``equations_``, the CLI table, LaTeX, plot labels, bench reports)
goes through :func:`format_number`: ``digits`` significant digits, trailing zeros dropped, never
a bare trailing point (``1197``, not ``1197.`` or ``1197.0``). ``FrontTable`` is the type of
``SymbolicRegressor.equations_``: a DataFrame whose text form puts the equation first and wraps
it to the terminal's width, so ``print(est.equations_)`` is readable in 80 columns, and whose
HTML form (:func:`front_html`, what a notebook shows) is the same table with the selected row in bold.
"""

from __future__ import annotations

import html
import math
import re
import shutil
import textwrap
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pandas as pd
import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter

from dgsr.core.names import latex_name, quote, quote_where_needed

#: Significant digits of constants in every text display.
DIGITS = 4


def format_number(value: float, digits: int = DIGITS) -> str:
    """``value`` to ``digits`` significant digits: ``6.674e-11``, ``1197``, ``0.5``, ``-3.142``."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.{digits}g}"
    if "e" in text:  # 6.674e-11 and 1.2e+05 rather than Python's padded exponents
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return "0" if text in ("-0", "0") else text


class _TextPrinter(StrPrinter):
    def __init__(self, digits: int, name: Callable[[str], str] = quote):
        super().__init__()
        self.digits = digits
        self.name = name

    def _print_Float(self, expr: sympy.Float) -> str:
        return format_number(float(expr), self.digits)

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return self.name(expr.name)  # `E`, `a b`: never read as a constant or as two names


# Tokens of formula text: numbers first (so the e of 1e-05 is no name), then identifiers.
_TEXT_TOKEN = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|([^\W\d]\w*)")
_VARIABLE = re.compile(r"(?<![\w`])x(\d+)(?![\w`])")


class _LatexPrinter(LatexPrinter):
    def __init__(self, digits: int):
        super().__init__()
        self.digits = digits

    def _print_Float(self, expr: sympy.Float) -> str:
        text = format_number(float(expr), self.digits)
        if "e" in text:
            mantissa, exponent = text.split("e")
            return rf"{mantissa} \cdot 10^{{{int(exponent)}}}"
        return text

    def _print_Symbol(self, expr: sympy.Symbol, style: str = "plain") -> str:
        custom = latex_name(expr.name)  # \mathrm{E}, \text{a b}: never the constant e or two names
        return custom if custom is not None else super()._print_Symbol(expr, style=style)


def equation_text(expr: sympy.Expr, digits: int = DIGITS) -> str:
    """Plain-text formula with constants to ``digits`` significant digits."""
    return _TextPrinter(digits).doprint(expr)


def equation_text_for_columns(expr: sympy.Expr, digits: int = DIGITS) -> str:
    """Plain-text formula for a reader who knows the column names (the command line's front and
    front.csv): a name is quoted only when it is not an identifier or when this formula's text
    also prints it for something else (``pi`` next to a column ``pi``); ``S``, ``E`` or ``sin``
    as columns are otherwise written bare, and :func:`dgsr.core.parser.parse` reads them back."""
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    placeholders = {s: sympy.Symbol(f"_dgsr_{i}_") for i, s in enumerate(symbols)}
    skeleton = _TextPrinter(digits, lambda n: n).doprint(expr.xreplace(placeholders))
    taken = {m.group(1) for m in _TEXT_TOKEN.finditer(skeleton) if m.group(1)} - {p.name for p in placeholders.values()}
    return _TextPrinter(digits, lambda n: quote_where_needed(n, taken)).doprint(expr)


# ``b - (-1.5)`` reads as ``b + 1.5``: a negative constant right after a binary + or -. Not before
# ``**``, which binds tighter than the sign: ``b - (-1.5)**2`` is ``b - 2.25``. The text then
# parses to the same values (x - (-c) == x + c exactly in floating point), the sign on the operator.
_NEGATED_CONSTANT = re.compile(r" ([-+]) \(-((?:\d[\d.]*(?:e[-+]?\d+)?)|inf)\)(?!\*\*)")


def _flip_sign(match: re.Match) -> str:
    return f" {'+' if match.group(1) == '-' else '-'} {match.group(2)}"


def format_for_columns(expression: Any, names: Sequence[str], precision: int | None = None) -> str:
    """``expression.format(names)`` (exact infix that :func:`dgsr.core.parser.parse` reads back to
    the same values; ``b - (-1.5)`` is shown ``b + 1.5``) with every identifier name bare: an expression tree holds only numbers, variables and
    functions (always followed by ``(``), so no identifier can be misread there."""
    text = expression.format(precision=precision)  # variables as x0, x1, ...
    text = _NEGATED_CONSTANT.sub(_flip_sign, text)  # before the names go in: no user text is touched
    return _VARIABLE.sub(lambda m: quote_where_needed(names[int(m.group(1))]), text)


def equation_latex(expr: sympy.Expr, digits: int = DIGITS) -> str:
    """LaTeX formula with constants to ``digits`` significant digits."""
    return _LatexPrinter(digits).doprint(expr)


# The numeric columns of the text form, after the equation: (column, header, format).
_NUMERIC = (("complexity", "complexity", "{:d}"), ("loss", "loss", "number"), ("r2", "r2", "{:.6f}"),
            ("score", "score", "{:.3f}"))


def _cell(value: Any, fmt: str) -> str:
    if fmt == "number":
        return format_number(value)
    return fmt.format(int(value) if fmt == "{:d}" else float(value))


def format_front(table: pd.DataFrame, width: int | None = None, selected: int | None = None) -> str:
    """The front as text: row number, equation (wrapped), then complexity, loss, r2 and score.

    ``width`` defaults to the terminal's (80 when unknown); ``selected`` marks that row with ``→``.
    """
    if width is None:
        width = shutil.get_terminal_size((80, 24)).columns
    cols = [(name, header, fmt) for name, header, fmt in _NUMERIC if name in table.columns]
    cells = [[_cell(v, fmt) for v in table[name]] for name, _, fmt in cols]
    widths = [max([len(header)] + [len(c) for c in column]) for (_, header, _), column in zip(cols, cells)]
    index = [("→" if i == selected else " ") + str(i) for i in range(len(table))]
    index_w = max([2] + [len(s) for s in index])
    numeric_w = sum(w + 2 for w in widths)
    eq_w = max(width - index_w - 2 - numeric_w, 20)
    header = f"{'':<{index_w}}  {'equation':<{eq_w}}" + "".join(
        f"  {h:>{w}}" for (_, h, _), w in zip(cols, widths))
    lines = [header.rstrip()]
    equations = table["equation"].astype(str).tolist() if "equation" in table.columns else [""] * len(table)
    for i, eq in enumerate(equations):
        wrapped = textwrap.wrap(eq, eq_w, subsequent_indent="  ", break_long_words=True,
                                break_on_hyphens=False) or [""]
        numbers = "".join(f"  {column[i]:>{w}}" for column, w in zip(cells, widths))
        lines.append(f"{index[i]:<{index_w}}  {wrapped[0]:<{eq_w}}{numbers}".rstrip())
        lines.extend(f"{'':<{index_w}}  {part}" for part in wrapped[1:])
    return "\n".join(lines)


def front_html(table: pd.DataFrame, selected: int | None = None) -> str:
    """The front as an HTML table (a notebook's view): a marker column, the equation (HTML-escaped),
    complexity, loss, r2 and score; the ``selected`` row is bold, marked ``→`` and has class ``selected``."""
    cols = [(name, header, fmt) for name, header, fmt in _NUMERIC if name in table.columns]
    equations = table["equation"].astype(str).tolist() if "equation" in table.columns else [""] * len(table)
    head = "".join(f"<th>{h}</th>" for h in ["", "", "equation", *(c[1] for c in cols)])
    rows = []
    for i, eq in enumerate(equations):
        cells = [f"<th>{i}</th>", "<td>→</td>" if i == selected else "<td></td>", f"<td>{html.escape(eq)}</td>"]
        cells += [f"<td>{html.escape(_cell(table[name].iloc[i], fmt))}</td>" for name, _, fmt in cols]
        style = ' class="selected" style="font-weight:bold"' if i == selected else ""
        rows.append(f"<tr{style}>{''.join(cells)}</tr>")
    return (f'<table class="dgsr-front"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


class FrontTable(pd.DataFrame):
    """``equations_``: a DataFrame whose ``print`` shows the equation first, wrapped (see
    :func:`format_front`); selections and copies are plain DataFrames again."""

    _metadata: ClassVar[list[str]] = ["selected_row"]

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    def __repr__(self) -> str:
        return format_front(self, selected=getattr(self, "selected_row", None))

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return front_html(self, selected=getattr(self, "selected_row", None))
