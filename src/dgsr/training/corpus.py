"""The pre-training corpus: a stream of (data, current expression, target mutation) examples.

Section 3.3 of the paper: a ground truth ``f*`` and its data are drawn (:mod:`dgsr.training.generator`),
``f*`` is dismantled into ``f(0) = empty -> m1 -> ... -> mL = f*`` (:mod:`dgsr.training.dismantle`), and
every step ``(D, f(l-1)) -> m_l`` is one supervised example. Generation is cheap enough to run
on the fly in data-loader workers (docs/notes/corpus_bench.md), so there is no cache to build.

The held-out set of Section 4.1 (500 in-domain, 500 out-of-domain expressions with up to 40
operators) ships as ``dgsr/data/heldout.jsonl.gz`` with the data seed of each problem; its
expressions are excluded from the training stream by :func:`expression_key`.

This module does not import ``torch``: the held-out set and the plain-Python stream work without it.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.search.mutations import Mutation
from dgsr.training.dismantle import mutation_path
from dgsr.training.generator import (
    DEFAULT_CONFIG,
    GeneratorConfig,
    Problem,
    acceptable_targets,
    random_expression,
    random_problem,
    sample_inputs,
)

#: Root seed of the held-out set; changing it (or the generator) changes every later benchmark.
HELDOUT_SEED = 20230723
HELDOUT_PER_DOMAIN = 500
HELDOUT_N_POINTS = 200  # enough for a train/test split of each held-out problem
OUT_OF_DOMAIN = GeneratorConfig(max_operators=40)  # Section 4.1: up to 40 operators instead of 25


@dataclass(frozen=True)
class TrainingExample:
    """One supervised step: given data ``(X, y)`` and ``state``, predict ``mutation`` (towards ``target``).

    ``X`` is [n_points, D] and ``y`` [n_points]; the whole path of one ``target`` shares them.
    """

    X: np.ndarray
    y: np.ndarray
    state: Expression
    mutation: Mutation
    target: Expression


def expression_key(expr: Expression) -> tuple[str, ...]:
    """Key by which held-out expressions are kept out of training: the structure (prefix symbols).

    Constants are left out on purpose, so a training expression with the held-out skeleton and
    other constants is excluded too; this removes about nothing from the stream (measured: 0 of
    5,000 draws, docs/notes/corpus_bench.md).
    """
    return expr.symbols


def example_stream(
    seed: int | Sequence[int],
    *,
    config: GeneratorConfig = DEFAULT_CONFIG,
    mutation_size: float = 10,
    n_points: int = 100,
    exclude: frozenset | None = None,
    steps_per_problem: int | None = None,
) -> Iterator[TrainingExample]:
    """Endless, seeded stream of training examples.

    Each drawn problem yields the steps of its mutation path in random order (all of them, or
    ``steps_per_problem`` of them). ``exclude`` holds :func:`expression_key` values to skip; by
    default the held-out keys (pass ``frozenset()`` to exclude nothing).
    """
    rng = np.random.default_rng(seed)
    for problem in training_problems(rng, config, n_points, exclude):
        path = mutation_path(problem.expression, rng, mutation_size)
        order = rng.permutation(len(path))
        if steps_per_problem is not None:
            order = order[:steps_per_problem]
        for i in order:
            state, mutation = path[i]
            yield TrainingExample(problem.X, problem.y, state, mutation, problem.expression)


def training_problems(rng: np.random.Generator, config: GeneratorConfig = DEFAULT_CONFIG, n_points: int = 100,
                      exclude: frozenset | None = None) -> Iterator[Problem]:
    """Endless random problems drawn with ``rng``, skipping those whose :func:`expression_key` is in
    ``exclude`` (default: the held-out set's keys; ``frozenset()`` excludes nothing)."""
    if exclude is None:
        exclude = heldout_keys()
    while True:
        problem = random_problem(rng, config, n_points)
        if not (exclude and expression_key(problem.expression) in exclude):
            yield problem


class ExampleEncoder:
    """Token ids of examples (:meth:`__call__`), encoding each problem's points once.

    The steps of one problem come one after another and share X and y, so the encoder keeps the
    latest problem's encoded points: one encoder per stream (e.g. per ``DataLoader`` worker).
    """

    def __init__(self, vocab: Any = None) -> None:
        from dgsr.neural.tokens import vocabulary

        self.vocab = vocab if vocab is not None else vocabulary()
        self._last: tuple[Any, Any, np.ndarray | None] = (None, None, None)  # X, y, their encoded points

    def __call__(self, example: TrainingExample) -> dict[str, np.ndarray]:
        """``points`` [n_points, POINT_WIDTH] (read-only, shared by one problem's steps),
        ``expression`` [T] and ``action`` [A]."""
        v = self.vocab
        X, y, points = self._last
        if points is None or X is not example.X or y is not example.y:
            points = v.encode_points(example.X, example.y)
            points.setflags(write=False)
            self._last = (example.X, example.y, points)
        return {
            "points": points,
            "expression": np.asarray(v.encode_expression(example.state), dtype=np.int64),
            "action": np.asarray(v.encode_action(example.mutation), dtype=np.int64),
        }


def encode_example(example: TrainingExample, vocab: Any = None) -> dict[str, np.ndarray]:
    """Token ids of one example (see :class:`ExampleEncoder`, which reuses a problem's points)."""
    return ExampleEncoder(vocab)(example)


# ---------------------------------------------------------------------------- held-out set
@dataclass(frozen=True)
class HeldoutProblem:
    """A held-out ground truth and how to regenerate its data (``n_points`` x ``n_variables`` inputs)."""

    expression: Expression
    n_points: int
    seed: int
    domain: Literal["in", "out"]
    n_variables: int
    name: str = ""

    def problem(self) -> Problem:
        """The inputs and targets, regenerated deterministically from ``seed`` (computed once, read-only)."""
        return self._problem

    @cached_property
    def _problem(self) -> Problem:
        X = sample_inputs(np.random.default_rng(self.seed), self.n_points, self.n_variables)
        y = evaluate(self.expression, X)
        X.setflags(write=False)  # shared by every caller: nobody may change the benchmark's data
        y.setflags(write=False)
        return Problem(self.expression, X, y)

    @property
    def X(self) -> np.ndarray:
        """Inputs [n_points, n_variables] (see :meth:`problem`)."""
        return self._problem.X

    @property
    def y(self) -> np.ndarray:
        """Targets [n_points] (see :meth:`problem`)."""
        return self._problem.y


def build_heldout(per_domain: int = HELDOUT_PER_DOMAIN, seed: int = HELDOUT_SEED) -> list[HeldoutProblem]:
    """Draw the held-out set: ``per_domain`` in-domain then ``per_domain`` out-of-domain problems.

    Problem ``i`` of a domain depends only on ``(seed, domain, i)`` and on the keys drawn before it
    (all keys are distinct), so the file can be checked problem by problem.
    """
    out: list[HeldoutProblem] = []
    seen: set = set()
    for code, (domain, config) in enumerate((("in", GeneratorConfig()), ("out", OUT_OF_DOMAIN))):
        for i in range(per_domain):
            rng = np.random.default_rng([seed, code, i])
            while True:
                item = _draw_heldout(rng, config, domain, f"{domain}-{i:03d}")
                if expression_key(item.expression) not in seen:
                    break
            seen.add(expression_key(item.expression))
            out.append(item)
    return out


def _draw_heldout(rng: np.random.Generator, config: GeneratorConfig, domain: str, name: str) -> HeldoutProblem:
    d = int(rng.integers(1, config.max_variables + 1))
    for _ in range(config.max_tries):
        data_seed = int(rng.integers(2**31))
        X = sample_inputs(np.random.default_rng(data_seed), HELDOUT_N_POINTS, d)
        for _ in range(20):
            expr = random_expression(rng, config, n_variables=d)
            if acceptable_targets(evaluate(expr, X), config.max_abs_value):
                return HeldoutProblem(expr, HELDOUT_N_POINTS, data_seed, domain, d, name)  # type: ignore[arg-type]
    raise RuntimeError("could not draw a held-out problem")


def _record(item: HeldoutProblem) -> dict:
    y = item.problem().y
    return {
        "name": item.name,
        "domain": item.domain,
        "n_variables": item.n_variables,
        "n_points": item.n_points,
        "seed": item.seed,
        "prefix": " ".join(item.expression.symbols),
        "constants": list(item.expression.constants),  # JSON keeps Python floats exactly (repr)
        "infix": item.expression.format(precision=4),
        "y_mean": float(f"{np.mean(y):.6g}"),  # lets a reader check that X regenerates as it did here
    }


def write_heldout(path: str | Path, items: Iterable[HeldoutProblem] | None = None) -> Path:
    """Write the held-out set as gzipped JSON lines, byte-for-byte reproducible (no gzip timestamp)."""
    items = build_heldout() if items is None else items
    text = "".join(json.dumps(_record(it), sort_keys=True) + "\n" for it in items).encode()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        f.write(text)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)
    return path


def read_heldout(path: str | Path) -> list[HeldoutProblem]:
    """Read a held-out file written by :func:`write_heldout`."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [_parse_record(json.loads(line)) for line in f if line.strip()]


def _parse_record(rec: dict) -> HeldoutProblem:
    expr = Expression(tuple(rec["prefix"].split()), tuple(float(c) for c in rec["constants"]))
    return HeldoutProblem(expr, int(rec["n_points"]), int(rec["seed"]), rec["domain"], int(rec["n_variables"]),
                          rec.get("name", ""))


def heldout_path() -> Path:
    """Location of the shipped held-out file."""
    return Path(str(resources.files("dgsr").joinpath("data", "heldout.jsonl.gz")))


@lru_cache(maxsize=1)
def _shipped_heldout() -> tuple[HeldoutProblem, ...]:
    return tuple(read_heldout(heldout_path()))


def load_heldout(domain: Literal["in", "out"] | None = None) -> list[HeldoutProblem]:
    """The shipped held-out problems (Section 4.1), optionally one domain only."""
    items = _shipped_heldout()
    return [it for it in items if domain is None or it.domain == domain]


@lru_cache(maxsize=1)
def heldout_keys() -> frozenset:
    """:func:`expression_key` of every held-out expression (empty if the file is missing)."""
    try:
        return frozenset(expression_key(it.expression) for it in _shipped_heldout())
    except FileNotFoundError:
        return frozenset()


__all__ = [
    "ExampleEncoder", "HeldoutProblem", "TrainingExample", "build_heldout", "encode_example", "example_stream",
    "expression_key", "heldout_keys", "load_heldout", "read_heldout", "write_heldout",
]
