"""Benchmark datasets: where the data lives, which problems a suite holds, and how to load one.

Suites (CONTRACTS §3, paper §4.2): the 57 black-box PMLB datasets of E2E / DGSR-MCTS (column
``in_e2e_57`` of ``pmlb/MANIFEST.tsv``), the 119 Feynman problems regenerated from
``feynman/equations.tsv`` and the 14 Strogatz ODE datasets. Formats are described in the data
folder's README. This is the harness reading trusted data, so formulas are parsed with
``sympy.sympify`` (with explicit symbols, since ``I``, ``gamma`` and ``beta`` clash with SymPy).
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SUITES = ("feynman", "blackbox", "strogatz", "blackbox-narrow")
FEYNMAN_ROWS = 10_000

# Quick mode (CONTRACTS §3): names spread evenly over each sorted list, i.e. sorted(names)[round(i*(n-1)/(k-1))]
# for i in 0..k-1, computed once and frozen here so the subset never drifts with the data folder.
QUICK_FEYNMAN = (
    "feynman_III_10_19", "feynman_III_19_51", "feynman_II_11_27", "feynman_II_21_32", "feynman_II_34_2a",
    "feynman_II_4_23", "feynman_I_12_11", "feynman_I_15_10", "feynman_I_25_13", "feynman_I_34_1",
    "feynman_I_39_22", "feynman_I_50_26", "feynman_test_11", "feynman_test_2", "feynman_test_9",
)
QUICK_BLACKBOX = (
    "1030_ERA", "228_elusage", "561_cpu", "596_fri_c2_250_5", "606_fri_c2_1000_10",
    "615_fri_c4_250_10", "628_fri_c3_1000_5", "649_fri_c0_500_5", "666_rmftsa_ladata", "titanic",
)


class DataNotFound(FileNotFoundError):
    """The benchmark data folder could not be located."""


@dataclass(frozen=True)
class DatasetRef:
    """A problem in a suite, before loading: enough to load it in another process."""

    suite: str  # "feynman" | "blackbox" | "strogatz"
    name: str


@dataclass(frozen=True)
class Problem:
    """A loaded problem. ``X`` columns are the variable names; ``formula`` is the ground truth, if known.

    X: [N, D] DataFrame; y: [N] float64.
    """

    ref: DatasetRef
    X: pd.DataFrame
    y: np.ndarray
    formula: str | None = None
    variables: tuple[str, ...] = ()


def _looks_like_data(path: Path) -> bool:
    return (path / "feynman" / "equations.tsv").is_file() or (path / "pmlb" / "MANIFEST.tsv").is_file()


def resolve_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Find the data folder: ``explicit`` (``--data``), else ``$DGSR_DATA``, else ``../shared/data``.

    ``../shared/data`` is searched relative to the working directory and each of its parents,
    then relative to this package's source tree and its parents (an editable install in a checkout).
    """
    if explicit is not None:
        path = Path(explicit).expanduser().resolve()
        if not path.is_dir():
            raise DataNotFound(f"--data {explicit}: no such directory")
        return path
    env = os.environ.get("DGSR_DATA")
    if env:
        path = Path(env).expanduser().resolve()
        if not path.is_dir():
            raise DataNotFound(f"DGSR_DATA={env}: no such directory")
        return path
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    tried: list[str] = []
    for start in starts:
        for base in (start, *start.parents):
            candidate = base.parent / "shared" / "data"
            tried.append(str(candidate))
            if _looks_like_data(candidate):
                return candidate.resolve()
    raise DataNotFound("benchmark data not found; pass --data DIR or set DGSR_DATA (looked for ../shared/data)")


def stable_seed(name: str, seed: int) -> int:
    """A seed for (problem name, run seed) that is the same in every process and Python version.

    Python's ``hash()`` of a string is salted per process, so it cannot be used here.
    """
    return zlib.crc32(f"{name}|{int(seed)}".encode())


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a PMLB-format file (tab-separated, header row, gzip if the name ends in .gz)."""
    return pd.read_csv(path, sep="\t")


def _equations(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "feynman" / "equations.tsv", sep="\t", dtype=str)


def list_datasets(suite: str, data_dir: Path) -> list[DatasetRef]:
    """The problems of a suite, sorted by name. ``blackbox-narrow`` = every available ≤10-feature file."""
    if suite == "all":
        return [r for s in ("feynman", "blackbox", "strogatz") for r in list_datasets(s, data_dir)]
    if suite in ("blackbox", "blackbox-narrow"):
        manifest = pd.read_csv(data_dir / "pmlb" / "MANIFEST.tsv", sep="\t", dtype=str)
        if suite == "blackbox":
            manifest = manifest[manifest["in_e2e_57"].str.lower() == "true"]
        names = [n for n in manifest["name"] if (data_dir / "pmlb" / f"{n}.tsv.gz").is_file()]
        return [DatasetRef("blackbox", n) for n in sorted(names)]
    if suite == "feynman":
        eq = _equations(data_dir)
        return [DatasetRef("feynman", n) for n in sorted(eq.loc[eq["set"] != "strogatz", "name"])]
    if suite == "strogatz":
        names = [p.name[: -len(".tsv.gz")] for p in (data_dir / "strogatz").glob("*.tsv.gz")]
        return [DatasetRef("strogatz", n) for n in sorted(names)]
    raise ValueError(f"unknown suite {suite!r}; choose from {SUITES + ('all',)}")


def quick_datasets(data_dir: Path) -> list[DatasetRef]:
    """CONTRACTS §3 quick mode: the fixed 15 Feynman + 10 black-box problems (those present)."""
    have = {r.name for r in list_datasets("feynman", data_dir)} | {
        r.name for r in list_datasets("blackbox", data_dir)
    }
    refs = [DatasetRef("feynman", n) for n in QUICK_FEYNMAN] + [DatasetRef("blackbox", n) for n in QUICK_BLACKBOX]
    return [r for r in refs if r.name in have]


def parse_formula(formula: str, variables: list[str] | tuple[str, ...]):
    """SymPy expression of a trusted formula, every name in ``variables`` forced to a plain Symbol."""
    import sympy

    return sympy.sympify(formula, locals={v: sympy.Symbol(v) for v in variables})


def sample_formula(formula: str, variables: list[str], ranges: list[tuple[float, float]],
                   n_rows: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Draw each variable uniformly from its range and evaluate the formula (AI Feynman's recipe)."""
    import sympy

    expr = parse_formula(formula, variables)
    symbols = [sympy.Symbol(v) for v in variables]
    columns = {v: rng.uniform(lo, hi, size=n_rows) for v, (lo, hi) in zip(variables, ranges)}
    fn = sympy.lambdify(symbols, expr, modules="numpy")
    y = np.asarray(fn(*(columns[v] for v in variables)), dtype=np.float64)
    y = np.broadcast_to(y, (n_rows,)).copy()  # a formula free of variables would give a scalar
    return pd.DataFrame(columns, columns=variables), y


def _parse_ranges(text: str) -> list[tuple[float, float]]:
    return [(float(lo), float(hi)) for lo, hi in (part.split(":") for part in text.split(","))]


def _equation_row(data_dir: Path, name: str) -> pd.Series:
    eq = _equations(data_dir)
    rows = eq[eq["name"] == name]
    if rows.empty:
        raise KeyError(f"{name} is not in feynman/equations.tsv")
    return rows.iloc[0]


def generate_feynman(data_dir: Path, name: str, seed: int, n_rows: int = FEYNMAN_ROWS) -> Problem:
    """Regenerate a Feynman problem: ``n_rows`` uniform samples, deterministic in (name, seed)."""
    row = _equation_row(data_dir, name)
    variables = row["variables"].split(",")
    rng = np.random.default_rng(stable_seed(name, seed))
    X, y = sample_formula(row["formula"], variables, _parse_ranges(row["ranges"]), n_rows, rng)
    return Problem(DatasetRef("feynman", name), X, y, row["formula"], tuple(variables))


def _split_target(df: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    # The target is selected by name: it is the last column in PMLB black-box files, the first in Strogatz.
    y = df["target"].to_numpy(dtype=np.float64)
    X = df.drop(columns=["target"]).astype(np.float64)
    return X, y


def load_problem(ref: DatasetRef, data_dir: Path, seed: int = 0) -> Problem:
    """Load one problem. Only Feynman data depends on ``seed`` (it is regenerated per seed)."""
    if ref.suite == "feynman":
        return generate_feynman(data_dir, ref.name, seed)
    if ref.suite == "blackbox":
        X, y = _split_target(read_table(data_dir / "pmlb" / f"{ref.name}.tsv.gz"))
        return Problem(ref, X, y)
    if ref.suite == "strogatz":
        X, y = _split_target(read_table(data_dir / "strogatz" / f"{ref.name}.tsv.gz"))
        row = _equation_row(data_dir, ref.name)
        return Problem(ref, X, y, row["formula"], tuple(row["variables"].split(",")))
    raise ValueError(f"unknown suite {ref.suite!r}")
