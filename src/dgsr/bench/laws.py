"""The ``laws`` suite: a development catalogue of scientific laws from outside SRBench and the GP lists.

The catalogue (``data/laws/laws.tsv``, described in the data folder's README) holds laws of chemical
and enzyme kinetics, pharmacology, population growth, spectroscopy, materials, circuits, heat
transfer, astronomy, economics, hydrology, acoustics and more, each with its own constants and
sampling ranges, plus variants of some of them (target noise, distractor columns, tiny data) and a
few no-signal controls.

Split (decision record 2026-11-28): entries are grouped into *families* (a law and its variants,
``base__variant``; each no-signal control is its own family). Families numbered by first
appearance in the file, even positions form the ``develop`` half, odd ones ``confirm``, so a
variant never sits in the other half from its own law.

Range tokens: ``lo:hi[:kind[:floor[:ceil]]]``, kind ``u`` (uniform, default) or ``log``
(log-uniform). ``floor``/``ceil`` bound the variable's domain for the stretched box; a variable
sampled from positive values has floor 0 unless told otherwise, one from negative values ceil 0.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

CATALOGUE = Path(__file__).resolve().parent / "data" / "laws" / "laws.tsv"
HALVES = ("develop", "confirm", "all")
#: Each side of a training range is widened by this fraction of its width (in log space for log ranges).
STRETCH = 0.5
#: Distractor columns: uniform on this range, named ``extra1``, ``extra2``, ...
DISTRACTOR_RANGE = (1.0, 10.0)
DISTRACTOR_PREFIX = "extra"


@dataclass(frozen=True)
class VarRange:
    """A variable's sampling range and domain bounds (``floor``/``ceil`` None = unbounded)."""

    name: str
    lo: float
    hi: float
    log: bool = False
    floor: float | None = None
    ceil: float | None = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws, uniform or log-uniform."""
        if self.log:
            return np.exp(rng.uniform(math.log(self.lo), math.log(self.hi), size=n))
        return rng.uniform(self.lo, self.hi, size=n)

    def stretched(self, fraction: float = STRETCH) -> VarRange:
        """The range widened by ``fraction`` of its width on each side, never past the domain.

        A side that would cross a domain bound stops halfway between the range and the bound, so
        the law stays defined (a positive variable stays positive).
        """
        if self.log:
            a, b = math.log(self.lo), math.log(self.hi)
            w = b - a
            lo, hi = math.exp(a - fraction * w), math.exp(b + fraction * w)
        else:
            w = self.hi - self.lo
            lo, hi = self.lo - fraction * w, self.hi + fraction * w
        if self.floor is not None and lo <= self.floor:
            lo = max(lo, (self.lo + self.floor) / 2)
        if self.ceil is not None and hi >= self.ceil:
            hi = min(hi, (self.hi + self.ceil) / 2)
        return VarRange(self.name, lo, hi, self.log, self.floor, self.ceil)


def parse_range(name: str, token: str) -> VarRange:
    """A :class:`VarRange` from ``lo:hi[:kind[:floor[:ceil]]]`` (empty fields take the defaults)."""
    parts = token.strip().split(":")
    if not 2 <= len(parts) <= 5:
        raise ValueError(f"range {token!r} of {name}: expected lo:hi[:kind[:floor[:ceil]]]")
    lo, hi = float(parts[0]), float(parts[1])
    kind = parts[2] if len(parts) > 2 and parts[2] else "u"
    if kind not in ("u", "log") or not lo < hi or (kind == "log" and lo <= 0):
        raise ValueError(f"range {token!r} of {name}: need lo < hi, kind u or log (log needs lo > 0)")
    floor = float(parts[3]) if len(parts) > 3 and parts[3] else (0.0 if lo > 0 else None)
    ceil = float(parts[4]) if len(parts) > 4 and parts[4] else (0.0 if hi < 0 else None)
    return VarRange(name, lo, hi, kind == "log", floor, ceil)


@dataclass(frozen=True)
class Law:
    """One catalogue entry. ``formula`` is in ``variables``; a no-signal entry's formula is ``0``."""

    name: str
    field: str
    formula: str
    ranges: tuple[VarRange, ...]
    rows: int
    noise: float
    distractors: int
    no_signal: bool
    source: str
    family: str
    half: str

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.ranges)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column of its data: the law's variables, then the distractors."""
        return self.variables + tuple(f"{DISTRACTOR_PREFIX}{j + 1}" for j in range(self.distractors))

    @property
    def has_truth(self) -> bool:
        return not self.no_signal

    @property
    def kind(self) -> str:
        """``base``, ``noise 0.01``, ``distractors``, ``tiny`` or ``no-signal`` (for the report)."""
        if self.no_signal:
            return "no-signal"
        if self.noise > 0:
            return f"noise {self.noise:g}"
        if self.distractors:
            return "distractors"
        return "tiny" if self.rows < 100 else "base"

    def column_ranges(self) -> tuple[VarRange, ...]:
        lo, hi = DISTRACTOR_RANGE
        return self.ranges + tuple(parse_range(c, f"{lo}:{hi}") for c in self.columns[len(self.ranges):])


def family_of(name: str) -> str:
    """The law a variant belongs to: the part of its name before ``__``."""
    return name.split("__", 1)[0]


@functools.lru_cache(maxsize=4)
def load_catalogue(path: str | None = None) -> tuple[Law, ...]:
    """Every entry of the catalogue, in file order, with its family and half."""
    table = pd.read_csv(path or CATALOGUE, sep="\t", dtype=str, keep_default_na=False)
    families: dict[str, int] = {}
    laws = []
    for row in table.itertuples(index=False):
        family = family_of(row.name)
        position = families.setdefault(family, len(families))
        names, tokens = row.variables.split(","), row.ranges.split(",")
        if len(names) != len(tokens):
            raise ValueError(f"{row.name}: {len(names)} variables but {len(tokens)} ranges")
        laws.append(Law(
            name=row.name, field=row.field, formula=row.formula,
            ranges=tuple(parse_range(n.strip(), t) for n, t in zip(names, tokens)),
            rows=int(row.rows), noise=float(row.noise), distractors=int(row.distractors),
            no_signal=row.no_signal.strip() in ("1", "true", "True"), source=row.source, family=family,
            half="develop" if position % 2 == 0 else "confirm"))
    return tuple(laws)


def laws_in_half(half: str = "all") -> list[Law]:
    """The entries of a half (``develop``, ``confirm`` or ``all``), in catalogue order."""
    if half not in HALVES:
        raise ValueError(f"unknown half {half!r}; choose from {HALVES}")
    return [law for law in load_catalogue() if half == "all" or law.half == half]


def get_law(name: str) -> Law:
    """The entry called ``name`` (KeyError if there is none)."""
    for law in load_catalogue():
        if law.name == name:
            return law
    raise KeyError(f"{name} is not in the laws catalogue")


def half_of(name: str) -> str | None:
    """``develop`` or ``confirm`` for a catalogue name, None for any other name."""
    try:
        return get_law(name).half
    except KeyError:
        return None


def law_expression(law: Law):
    """SymPy expression of the law in its variables (through the checked parser)."""
    from .datasets import parse_formula

    return parse_formula(law.formula, law.variables)


@functools.lru_cache(maxsize=512)
def _truth_function(name: str):
    import sympy

    law = get_law(name)
    return sympy.lambdify([sympy.Symbol(v) for v in law.variables], law_expression(law), modules="numpy")


def sample_inputs(law: Law, n: int, rng: np.random.Generator, *, stretched: bool = False) -> pd.DataFrame:
    """``n`` rows of every column, from the training ranges or the stretched box."""
    ranges = law.column_ranges()
    if stretched:
        ranges = tuple(r.stretched() for r in ranges)
    return pd.DataFrame({r.name: r.sample(rng, n) for r in ranges}, columns=list(law.columns))


def evaluate_truth(law: Law, X: pd.DataFrame) -> np.ndarray:
    """The noise-free law on the rows of ``X`` (zeros for a no-signal entry)."""
    with np.errstate(all="ignore"):
        y = _truth_function(law.name)(*(X[v].to_numpy(np.float64) for v in law.variables))
    return np.broadcast_to(np.asarray(y, dtype=np.float64), (len(X),)).copy()


def generate_law(name: str, seed: int, n_rows: int | None = None):
    """A :class:`~dgsr.bench.datasets.Problem` for an entry, deterministic in (name, seed).

    Target noise is not added here: the protocol adds it to the training rows only
    (:func:`dgsr.bench.protocol.make_split` with the entry's noise level).
    """
    from .datasets import DatasetRef, Problem, stable_seed

    law = get_law(name)
    rng = np.random.default_rng(stable_seed(name, seed))
    X = sample_inputs(law, n_rows or law.rows, rng)
    if law.no_signal:
        # Drawn after X from the same stream: independent of every column by construction.
        return Problem(DatasetRef("laws", name), X, rng.normal(0.0, 1.0, size=len(X)), None, law.columns)
    return Problem(DatasetRef("laws", name), X, evaluate_truth(law, X), law.formula, law.variables)
