"""Benchmark datasets: where the data lives, which problems a suite holds, and how to load one.

Suites (CONTRACTS §3, paper §4.2): the 57 black-box PMLB datasets of E2E / DGSR-MCTS (column
``in_e2e_57`` of ``pmlb/MANIFEST.tsv``), the 119 Feynman problems regenerated from
``feynman/equations.tsv`` and the 14 Strogatz ODE datasets; besides them, ``classic``: 31 laws
from the genetic-programming literature (Nguyen, Keijzer, Vladislavleva, Korns, Pagie, Jin, the
rationals of Krawiec and Pawlak), regenerated from the packaged ``classic/equations.tsv``; and
``laws``: the development catalogue of laws from other sciences (``laws/laws.tsv``, module
:mod:`dgsr.bench.laws`). Formats are described in the data folder's README. Formula text from
data files (and model strings from other libraries) never reaches ``sympy.sympify`` (which calls
``eval``) unchecked: :func:`parse_formula` first reads it into tokens and accepts only numbers,
operators, parentheses, the file's variable names and a fixed list of SymPy functions and
constants, every variable forced to a plain Symbol (``I``, ``gamma`` and ``beta`` clash with
SymPy's own names).

Where the data comes from (:func:`resolve_data_dir`): a folder given with ``--data`` (or
``$DGSR_DATA``, or ``../shared/data`` in this repository's own runs) laid out like SRBench's data;
otherwise a *cache folder* (``--cache``, ``$DGSR_CACHE``, default ``~/.cache/dgsr/bench``)
holding the formula lists that ship inside the package (``dgsr/bench/data``: Feynman and Strogatz
formulas and ranges, the black-box manifest) and the PMLB datasets that :func:`fetch_missing`
gets through the ``pmlb`` package's ``fetch_data`` (its cache layout ``pmlb/<name>/<name>.tsv.gz``).
A cache filled once on a machine with internet works offline, and can be copied.
"""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SUITES = ("feynman", "blackbox", "strogatz", "blackbox-narrow", "classic", "laws")
FEYNMAN_ROWS = 10_000
#: Rows of a regenerated classic problem (300 to train, 100 to test): the literature's sets are
#: of 20 to a few hundred points; a few hundred keep the exact laws identifiable.
CLASSIC_ROWS = 400

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


#: The formula lists and black-box manifest that ship inside the package (small text files).
PACKAGED_DATA = Path(__file__).resolve().parent / "data"
#: A folder whose ``CACHE_MARKER`` file exists is a cache: its black-box list comes from the
#: manifest and missing files are fetched, rather than only the files present being listed.
CACHE_MARKER = "DGSR_BENCH_CACHE"


class DataNotFound(FileNotFoundError):
    """The benchmark data folder could not be located."""


@dataclass(frozen=True)
class DatasetRef:
    """A problem in a suite, before loading: enough to load it in another process."""

    suite: str  # "feynman" | "blackbox" | "strogatz" | "classic" | "laws"
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


def default_cache_dir() -> Path:
    """``$DGSR_CACHE`` or ``~/.cache/dgsr/bench``."""
    return Path(os.environ.get("DGSR_CACHE") or Path.home() / ".cache" / "dgsr" / "bench").expanduser()


def prepare_cache(cache: str | os.PathLike) -> Path:
    """Make ``cache`` a data folder: the packaged formula lists and manifest, plus the marker.

    The packaged files are copied every time (they are the package's own, and small), so a cache
    never serves formula lists from an older dgsr.
    """
    path = Path(cache).expanduser().resolve()
    for rel in ("feynman/equations.tsv", "pmlb/MANIFEST.tsv"):
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        source = (PACKAGED_DATA / rel).read_bytes()
        if not target.is_file() or target.read_bytes() != source:
            target.write_bytes(source)
    (path / CACHE_MARKER).write_text("dgsr benchmark cache: packaged formula lists + PMLB files fetched by pmlb\n")
    return path


def resolve_data_dir(explicit: str | os.PathLike | None = None, cache: str | os.PathLike | None = None) -> Path:
    """Find the data folder: ``explicit`` (``--data``), else the cache ``cache`` (``--cache``) if
    given, else ``$DGSR_DATA``, else ``../shared/data``, else the default cache folder.

    ``../shared/data`` is searched relative to the working directory and each of its parents,
    then relative to this package's source tree and its parents (an editable install in a checkout).
    A cache folder is prepared with :func:`prepare_cache` (the packaged formula lists); its PMLB
    files are fetched by :func:`fetch_missing`.
    """
    if explicit is None and cache is not None:
        return prepare_cache(cache)
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
    return prepare_cache(default_cache_dir())


def is_cache(data_dir: Path) -> bool:
    return (data_dir / CACHE_MARKER).is_file()


def data_file(data_dir: Path, suite: str, name: str) -> Path | None:
    """The file of a black-box or Strogatz dataset: the data-folder layout (``pmlb/<name>.tsv.gz``,
    ``strogatz/<name>.tsv.gz``) or pmlb's cache layout (``pmlb/<name>/<name>.tsv.gz``); None if absent."""
    folder = "strogatz" if suite == "strogatz" else "pmlb"
    for path in (data_dir / folder / f"{name}.tsv.gz", data_dir / "pmlb" / name / f"{name}.tsv.gz"):
        if path.is_file():
            return path
    return None


def fetch_missing(refs: list[DatasetRef], data_dir: Path) -> list[str]:
    """Fetch, with the ``pmlb`` package into ``data_dir/pmlb`` (its cache layout), the black-box and
    Strogatz datasets of ``refs`` that have no file yet; returns the names fetched.

    Raises
    ------
    DataNotFound
        Files are missing and pmlb is not installed, or some could not be fetched (no internet,
        or a name this pmlb version does not know); the message lists them and the ways out.
    """
    missing = [r.name for r in refs if r.suite in ("blackbox", "strogatz") and data_file(data_dir, r.suite, r.name)
               is None]
    if not missing:
        return []
    how = ("with internet, `pip install pmlb` and run again (datasets are cached in "
           f"{data_dir / 'pmlb'}); without, copy such a cache from another machine there, or pass --data DIR")
    try:
        import pmlb
    except ImportError:
        raise DataNotFound(f"{len(missing)} PMLB dataset(s) are not in {data_dir}: {', '.join(missing)}; "
                           f"{how}") from None
    failed = []
    for name in missing:
        try:
            pmlb.fetch_data(name, local_cache_dir=str(data_dir / "pmlb"))
        except Exception as err:  # noqa: BLE001  (network, HTTP and pmlb's own errors all mean "not fetched")
            failed.append(f"{name} ({type(err).__name__})")
    if failed:
        raise DataNotFound(f"could not fetch {len(failed)} PMLB dataset(s): {', '.join(failed)}; {how}")
    return missing


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


def _classic_equations() -> pd.DataFrame:
    """The classic suite's list: always the packaged one (SRBench's data folders have none)."""
    return pd.read_csv(PACKAGED_DATA / "classic" / "equations.tsv", sep="\t", dtype=str)


def is_friedman(name: str) -> bool:
    """Whether a black-box set is one of PMLB's Friedman sets (``fri_c*``), which the reports
    group apart from the other black-box sets."""
    return "fri_c" in name


def list_datasets(suite: str, data_dir: Path) -> list[DatasetRef]:
    """The problems of a suite, sorted by name. ``blackbox-narrow`` = every available ≤10-feature file.

    ``laws`` lists every catalogue entry (both halves) in catalogue order, not by name: the order
    defines the develop/confirm split (:func:`dgsr.bench.laws.laws_in_half` selects a half).
    """
    if suite == "all":
        return [r for s in ("feynman", "blackbox", "strogatz") for r in list_datasets(s, data_dir)]
    if suite in ("blackbox", "blackbox-narrow"):
        manifest = pd.read_csv(data_dir / "pmlb" / "MANIFEST.tsv", sep="\t", dtype=str)
        if suite == "blackbox":
            manifest = manifest[manifest["in_e2e_57"].str.lower() == "true"]
        cache = is_cache(data_dir)  # a cache lists every manifest dataset: missing ones are fetched
        names = [n for n in manifest["name"] if cache or data_file(data_dir, "blackbox", n) is not None]
        return [DatasetRef("blackbox", n) for n in sorted(names)]
    if suite == "feynman":
        eq = _equations(data_dir)
        return [DatasetRef("feynman", n) for n in sorted(eq.loc[eq["set"] != "strogatz", "name"])]
    if suite == "classic":
        return [DatasetRef("classic", n) for n in sorted(_classic_equations()["name"])]
    if suite == "laws":
        from .laws import laws_in_half

        return [DatasetRef("laws", law.name) for law in laws_in_half("all")]
    if suite == "strogatz":
        if is_cache(data_dir):
            eq = _equations(data_dir)
            names = list(eq.loc[eq["set"] == "strogatz", "name"])
        else:
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


_FORMULA_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|"
                            r"(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<op>\*\*|[-+*/^(),]))")
#: Function and constant names a formula may use besides its variables (SymPy's spelling, plus ln/abs).
FORMULA_FUNCTIONS = ("sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                     "tanh", "asinh", "acosh", "atanh", "exp", "log", "ln", "sqrt", "Abs", "abs", "sign", "Max",
                     "Min", "floor", "ceiling", "pi", "E")


def parse_formula(formula: str, variables: list[str] | tuple[str, ...]):
    """SymPy expression of a formula's text, every name in ``variables`` a plain Symbol.

    The text is checked token by token before SymPy sees it: anything but numbers, ``+ - * / **
    ^ ( ) ,``, the variables and :data:`FORMULA_FUNCTIONS` (quotes, dots outside numbers,
    attribute access, dunder names, any other identifier) is a ValueError, so that ``eval`` inside
    ``sympify`` can only build arithmetic.
    """
    import sympy

    names = {str(v) for v in variables}
    pos, text = 0, str(formula)
    while pos < len(text):
        m = _FORMULA_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"formula {text!r}: unexpected {text[pos:pos + 12]!r}")
        name = m.group("name")
        if name is not None and (name.startswith("__") or (name not in names and name not in FORMULA_FUNCTIONS)):
            raise ValueError(f"formula {text!r}: unknown name {name!r}")
        pos = m.end()
    local = {"ln": sympy.log, "abs": sympy.Abs}
    local.update({v: sympy.Symbol(v) for v in names})
    return sympy.sympify(text.replace("^", "**"), locals=local)


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
    return _generate(DatasetRef("feynman", name), _equation_row(data_dir, name), seed, n_rows)


def generate_classic(name: str, seed: int, n_rows: int = CLASSIC_ROWS) -> Problem:
    """Regenerate a classic problem like a Feynman one (uniform samples in its ranges)."""
    table = _classic_equations()
    rows = table[table["name"] == name]
    if rows.empty:
        raise KeyError(f"{name} is not in the classic suite")
    return _generate(DatasetRef("classic", name), rows.iloc[0], seed, n_rows)


def _generate(ref: DatasetRef, row: pd.Series, seed: int, n_rows: int) -> Problem:
    variables = row["variables"].split(",")
    rng = np.random.default_rng(stable_seed(ref.name, seed))
    X, y = sample_formula(row["formula"], variables, _parse_ranges(row["ranges"]), n_rows, rng)
    return Problem(ref, X, y, row["formula"], tuple(variables))


def _split_target(df: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    # The target is selected by name: it is the last column in PMLB black-box files, the first in Strogatz.
    y = df["target"].to_numpy(dtype=np.float64)
    X = df.drop(columns=["target"]).astype(np.float64)
    return X, y


def load_problem(ref: DatasetRef, data_dir: Path, seed: int = 0) -> Problem:
    """Load one problem. Only Feynman, classic and laws data depend on ``seed`` (regenerated per seed)."""
    if ref.suite == "feynman":
        return generate_feynman(data_dir, ref.name, seed)
    if ref.suite == "laws":
        from .laws import generate_law

        return generate_law(ref.name, seed)
    if ref.suite == "classic":
        return generate_classic(ref.name, seed)
    if ref.suite in ("blackbox", "strogatz"):
        path = data_file(data_dir, ref.suite, ref.name)
        if path is None:
            raise DataNotFound(f"{ref.name} is not in {data_dir} (fetch_missing gets it through pmlb)")
        X, y = _split_target(read_table(path))
    if ref.suite == "blackbox":
        return Problem(ref, X, y)
    if ref.suite == "strogatz":
        row = _equation_row(data_dir, ref.name)
        return Problem(ref, X, y, row["formula"], tuple(row["variables"].split(",")))
    raise ValueError(f"unknown suite {ref.suite!r}")
