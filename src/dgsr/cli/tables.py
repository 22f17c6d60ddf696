"""Tables the command line reads and shows: data files (CSV/TSV) and a fitted model's front."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError


def read_table(path: Path) -> Any:
    """Read a CSV (``,``) or TSV (``.tsv``/``.tab``: tab) file, optionally gzipped; other
    extensions have their separator sniffed, and so has a ``.csv`` file whose header is one
    column holding ``;`` or a tab (a semicolon CSV, with ``,`` as its decimal mark when its
    numbers are written so). A missing, empty or unreadable file, or a folder, is a CLIError."""
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
            df = pd.read_csv(path, sep=None, engine="python")  # another separator: sniff it
            if any(not pd.api.types.is_numeric_dtype(df[c]) and df[c].astype(str).str.fullmatch(r"\s*[-+]?\d*,\d+\s*").all()
                   for c in df.columns):
                df = pd.read_csv(path, sep=None, engine="python", decimal=",")
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, TypeError) as err:
        raise CLIError(f"cannot read {path} as a table: {err}") from None
    if df.shape[0] == 0:
        raise CLIError(f"{path} has a header but no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def column_list(columns: Iterable[Any]) -> str:
    """``'a', 'b c'``: column names as an error message lists them."""
    return ", ".join(repr(str(c)) for c in columns)


def front_equations(est: Any) -> list[str]:
    """The front's equations as the command line shows them: the user's column names bare
    unless the formula's text would misread them (:func:`~dgsr.core.display.equation_text_for_columns`)."""
    from dgsr.core.display import equation_text_for_columns

    return [equation_text_for_columns(e) for e in est.equations_["sympy"]]


def front_frame(est: Any) -> Any:
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


def print_front(est: Any, target: str) -> None:
    """The Pareto front as a rich table on stdout, the selected row marked."""
    from rich.console import Console
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
                      f"{row['r2']:.6f}", f"{row['score']:.3f}", style=style)
    console = Console(soft_wrap=False)
    console.print(table)
    console.print(f"selected (→, model_selection={est.model_selection!r}): "
                  f"{target} = {equations[est.best_index_]}", markup=False)
    limit = getattr(est, "size_limit_", None)  # absent in 0.9.1's pickles
    if limit is not None:
        console.print(f"chosen among complexity <= {limit}: with this few rows, searches on 4 of 5 folds predicted "
                      "the fifth worse with larger formulas", markup=False)
