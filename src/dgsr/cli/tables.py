"""Tables the command line reads and shows: data files (CSV/TSV) and a fitted model's front."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgsr.cli.errors import CLIError
from dgsr.cli.streams import stdout_console

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor


def read_table(path: Path, allow_unnamed: bool = False) -> Any:
    """Read a CSV (``,``) or TSV (``.tsv``/``.tab``: tab) file, optionally gzipped; other
    extensions have their separator sniffed, and so has a ``.csv`` file whose header is one
    column holding ``;`` or a tab (a semicolon CSV, with ``,`` as its decimal mark when its
    numbers are written so). A missing, empty or unreadable file, or a folder, is a CLIError;
    so is a header that pandas would silently change (:func:`check_header`)."""
    import pandas as pd

    from dgsr.cli.files import check_input_file

    check_input_file(path, "data")
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in (".gz", ".bz2", ".xz", ".zip")]
    ext = suffixes[-1] if suffixes else ""
    kwargs: dict[str, Any] = {"sep": ","} if ext == ".csv" else {"sep": "\t"} if ext in (".tsv", ".tab") \
        else {"sep": None, "engine": "python"}
    try:
        df = pd.read_csv(path, **kwargs)
        if df.shape[1] == 1 and any(ch in str(df.columns[0]) for ch in ";\t|"):
            kwargs = {"sep": None, "engine": "python"}
            df = pd.read_csv(path, **kwargs)  # another separator: sniff it
            if any(not pd.api.types.is_numeric_dtype(df[c]) and df[c].astype(str).str.fullmatch(r"\s*[-+]?\d*,\d+\s*").all()
                   for c in df.columns):
                kwargs["decimal"] = ","
                df = pd.read_csv(path, **kwargs)
        # The header as written: pandas renames a second `a` to `a.1` and an empty name to `Unnamed: 2`.
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, **kwargs)
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, TypeError) as err:
        raise CLIError(f"cannot read {path} as a table: {err}") from None
    if df.shape[0] == 0:
        raise CLIError(f"{path} has a header but no rows")
    names = [str(c).strip() for c in header.iloc[0]] if header.shape[1] == df.shape[1] else None
    df.columns = [str(c).strip() for c in df.columns]
    return df if names is None else check_header(df, names, path, allow_unnamed)


def check_header(df: Any, names: list[str], path: Path, allow_unnamed: bool) -> Any:
    """``df`` (read from ``path``, whose first row is ``names``) without the surprises of its
    header (docs/decisions/2026-11-28-cli-csv-surprises.md): a duplicate name or a first row of
    numbers (no header) is a CLIError; a column with neither name nor values (a trailing comma)
    is dropped with a note; an unnamed column with values is a CLIError unless ``allow_unnamed``
    (``dgsr predict`` takes columns by name, so it ignores one)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name and name in seen:
            raise CLIError(f"{path} has two columns named {name!r} (columns {seen[name] + 1} and {i + 1}): "
                           "rename one")
        seen[name] = i
    named = [name for name in names if name]
    if named and all(_is_number(name) for name in named):
        raise CLIError(f"the first row of {path} is all numbers ({', '.join(names[:4])}"
                       f"{', ...' if len(names) > 4 else ''}): the file needs a header row naming its columns")
    empty = [i for i, name in enumerate(names) if not name and df.iloc[:, i].isna().all()]
    if empty:
        print(f"dgsr: note: ignored column(s) {', '.join(str(i + 1) for i in empty)} of {path}: no name and "
              "no values (a trailing separator?)", file=sys.stderr)
        df = df.drop(columns=[df.columns[i] for i in empty])
        names = [n for i, n in enumerate(names) if i not in empty]
    unnamed = [i for i, name in enumerate(names) if not name]
    if unnamed and not allow_unnamed:
        raise CLIError(f"column {unnamed[0] + 1} of {path} has no name but holds values (a row index?): "
                       "name it in the header, or remove it")
    return df


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def column_list(columns: Iterable[Any]) -> str:
    """``'a', 'b c'``: column names as an error message lists them."""
    return ", ".join(repr(str(c)) for c in columns)


def fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, never ``-0.000000``: a constant model's r2 of -1e-16
    is zero to the reader."""
    return f"{round(float(value), digits) + 0.0:.{digits}f}"  # + 0.0 turns -0.0 into 0.0


def front_equations(est: SymbolicRegressor) -> list[str]:
    """The front's equations as the command line shows them: the user's column names bare
    unless the formula's text would misread them (:func:`~dgsr.core.display.equation_text_for_columns`)."""
    from dgsr.core.display import equation_text_for_columns

    return [equation_text_for_columns(e) for e in est.equations_["sympy"]]


def front_frame(est: SymbolicRegressor) -> Any:
    """The front as written to ``front.csv``: readable and exact equations, the selection mark,
    and why the fit stopped (``stop_reason``: ``interrupted`` after a Ctrl-C)."""
    from dgsr.core.display import format_for_columns

    table = est.equations_.drop(columns=["sympy"]).copy()
    table["equation"] = front_equations(est)
    table["selected"] = [i == est.best_index_ for i in range(len(table))]
    # Exact infix with full-precision constants: dgsr.core.parser.parse reads it back to the same tree.
    table["expression"] = [format_for_columns(e, est.selected_features_) for e in est.expressions_]
    table["stop_reason"] = getattr(est, "stop_reason_", "")
    return table


def print_front(est: SymbolicRegressor, target: str) -> None:
    """The Pareto front as a rich table on stdout, the selected row marked."""
    from rich.markup import escape
    from rich.table import Table

    from dgsr.core.display import format_number

    table = Table(title=f"Pareto front for {escape(target)}", title_justify="left")
    # The equation first, wrapped by rich to the terminal's width; headers are equations_'s columns.
    table.add_column("", justify="left", no_wrap=True)
    table.add_column("equation", justify="left", overflow="fold", min_width=20)
    for name in ("complexity", "loss", "r2", "score"):
        table.add_column(name, justify="right", no_wrap=True)
    equations = front_equations(est)
    for i, row in est.equations_.iterrows():
        mark = "→" if i == est.best_index_ else ""
        style = "bold green" if i == est.best_index_ else None
        table.add_row(mark, escape(f"{target} = {equations[i]}"), str(row["complexity"]), format_number(row["loss"]),
                      fixed(row["r2"], 6), fixed(row["score"], 3), style=style)
    console = stdout_console(soft_wrap=False)
    console.print(table)
    console.print(f"selected (→, model_selection={est.model_selection!r}): "
                  f"{target} = {equations[est.best_index_]}", markup=False)
    limit = getattr(est, "size_limit_", None)  # absent in 0.9.1's pickles
    if limit is not None:
        console.print(f"chosen among complexity <= {limit}: with this few rows, searches on 4 of 5 folds predicted "
                      "the fifth worse with larger formulas", markup=False)
