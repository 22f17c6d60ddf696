"""Tables the command line reads and shows: data files (CSV/TSV) and a fitted model's front."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dgsr.cli.errors import CLIError


def read_table(path: Path) -> Any:
    """Read a CSV (``,``) or TSV (``.tsv``/``.tab``: tab) file, optionally gzipped; other
    extensions have their separator sniffed. A missing, empty or unreadable file is a CLIError."""
    import pandas as pd

    if not path.is_file():
        raise CLIError(f"file not found: {path}")
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in (".gz", ".bz2", ".xz", ".zip")]
    ext = suffixes[-1] if suffixes else ""
    kwargs: dict[str, Any] = {"sep": ","} if ext == ".csv" else {"sep": "\t"} if ext in (".tsv", ".tab") \
        else {"sep": None, "engine": "python"}
    try:
        df = pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise CLIError(f"{path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
        raise CLIError(f"cannot read {path} as a table: {err}") from None
    if df.shape[0] == 0:
        raise CLIError(f"{path} has a header but no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def column_list(columns: Iterable[Any]) -> str:
    """``'a', 'b c'``: column names as an error message lists them."""
    return ", ".join(repr(str(c)) for c in columns)


def front_frame(est: Any) -> Any:
    """The front as written to ``front.csv``: readable and exact equations, and the selection mark."""
    table = est.equations_.drop(columns=["sympy"]).copy()
    table["selected"] = [i == est.best_index_ for i in range(len(table))]
    # Exact infix with full-precision constants: dgsr.core.parser.parse reads it back to the same tree.
    table["expression"] = [e.format(est.selected_features_) for e in est.expressions_]
    return table


def print_front(est: Any, target: str) -> None:
    """The Pareto front as a rich table on stdout, the selected row marked."""
    from rich.console import Console
    from rich.table import Table

    from dgsr.core.display import format_number

    table = Table(title=f"Pareto front for {target}", title_justify="left")
    # The equation first, wrapped by rich to the terminal's width; headers are equations_'s columns.
    table.add_column("", justify="left", no_wrap=True)
    table.add_column("equation", justify="left", overflow="fold", min_width=20)
    for name in ("complexity", "loss", "r2", "score"):
        table.add_column(name, justify="right", no_wrap=True)
    for i, row in est.equations_.iterrows():
        mark = "→" if i == est.best_index_ else ""
        style = "bold green" if i == est.best_index_ else None
        table.add_row(mark, f"{target} = {row['equation']}", str(row["complexity"]), format_number(row["loss"]),
                      f"{row['r2']:.6f}", f"{row['score']:.3f}", style=style)
    console = Console(soft_wrap=False)
    console.print(table)
    console.print(f"selected (→, model_selection={est.model_selection!r}): "
                  f"{target} = {est.equations_['equation'].iloc[est.best_index_]}", markup=False)
