"""The examples and batches of supervised pre-training (:mod:`dgsr.training.pretrain`).

The batch of step ``s`` is a pure function of ``(seed, s)`` (:func:`batch_examples`), so a resumed
run sees exactly the data the uninterrupted run would have seen. Validation batches are built
once from the shipped held-out problems, teacher labels and held-out solution paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from dgsr.core.expression import Expression
from dgsr.core.operators import arity
from dgsr.neural.model_config import symbol_targets
from dgsr.neural.sampling import pad_ids
from dgsr.neural.tokens import vocabulary
from dgsr.policies.random import RandomPolicy
from dgsr.search.mutations import Mutation
from dgsr.training.pretrain_config import TrainConfig, resolve_data


@dataclass(frozen=True)
class Example:
    """One supervised example (the fields of ``dgsr.training.corpus.TrainingExample`` that training uses)."""

    X: np.ndarray
    y: np.ndarray
    state: Expression
    mutation: Mutation


@dataclass(frozen=True)
class Batch:
    """Collated examples; examples of one dataset share one encoding of its points."""

    points: torch.Tensor  # [U, P, POINT_WIDTH] the U distinct datasets
    point_mask: torch.Tensor  # [U, P] True = real point
    dataset: torch.Tensor  # [B] index into the U datasets
    states: torch.Tensor  # [B, T]
    actions: torch.Tensor  # [B, L+1]: <bos> action <eos> <pad>...
    negatives: torch.Tensor  # [B, T'] off-path expressions (critic label 0)
    symbols: torch.Tensor | None = None  # [B, len(SYMBOLS)] multi-hot of the ground truth, when known

    def to(self, device: torch.device) -> Batch:
        """The batch with every tensor on ``device``."""
        return Batch(*(None if t is None else t.to(device)
                       for t in (self.points, self.point_mask, self.dataset, self.states, self.actions,
                                 self.negatives, self.symbols)))


def _example_stream(seed: int, config: TrainConfig) -> Iterator[Any]:
    """The dismantling examples of one stream seed, from the source ``config.data`` names."""
    if resolve_data(config).data == "generator":
        return _generator_stream(seed, config)
    from dgsr.training.corpus import example_stream

    return example_stream(seed, mutation_size=config.mutation_size, n_points=config.n_points,
                          steps_per_problem=config.steps_per_problem or None)


def _generator_stream(seed: int, config: TrainConfig) -> Iterator[Example]:
    """Generator + dismantling directly, without the corpus's held-out exclusion (``data="generator"``)."""
    from dgsr.training.dismantle import mutation_path
    from dgsr.training.generator import random_problem

    rng = np.random.default_rng(seed)
    while True:
        problem = random_problem(rng, n_points=config.n_points)
        for state, mutation in mutation_path(problem.expression, rng, config.mutation_size):
            yield Example(problem.X, problem.y, state, mutation)


@lru_cache(maxsize=2)
def _path_steps(files: str) -> tuple[Any, ...]:
    """Every step of the solution paths in the comma-separated ``files`` (loaded once per process)."""
    from dgsr.training.teacher import load_search_paths

    steps = tuple(step for path in load_search_paths(*files.split(",")) for step in path)
    if not steps:
        raise ValueError(f"no solution-path steps in {files}")
    return steps


def batch_examples(config: TrainConfig, step: int) -> list[Any]:
    """The training examples of ``step``: a pure function of ``(config.seed, step)`` (and the path
    files); a share ``config.teacher_share`` of them comes from the semantic-policy teacher
    (:mod:`dgsr.training.teacher`), a share ``config.paths_share`` from semantic-search solution paths."""
    n_teacher = round(config.batch_size * config.teacher_share)
    n_paths = round(config.batch_size * config.paths_share)  # > 0 only with path files (__post_init__)
    stream = _example_stream(int(np.random.SeedSequence([config.seed, step]).generate_state(1)[0]), config)
    examples = [next(stream) for _ in range(max(config.batch_size - n_teacher - n_paths, 0))]
    if n_paths:
        steps = _path_steps(config.paths)
        picks = np.random.default_rng([config.seed, step, 3]).integers(len(steps), size=n_paths)
        examples += [steps[i] for i in picks]
    if n_teacher:
        from dgsr.training.teacher import STEPS_PER_PROBLEM, teacher_stream

        taught = teacher_stream(int(np.random.SeedSequence([config.seed, step, 2]).generate_state(1)[0]),
                                mutation_size=config.mutation_size, n_points=config.n_points,
                                steps_per_problem=config.steps_per_problem or STEPS_PER_PROBLEM)
        examples += [next(taught) for _ in range(n_teacher)]
    return examples


def _random_expression_like(expr: Expression, n_features: int, rng: np.random.Generator) -> Expression:
    from dgsr.training.generator import random_tree

    n_ops = max(1, sum(1 for s in expr.symbols if arity(s) > 0))
    for _ in range(20):
        candidate = random_tree(rng, n_ops, n_features)
        if candidate.size <= 60:
            return candidate
    return Expression.variable(int(rng.integers(n_features)))


def negative_for(example: Any, rng: np.random.Generator) -> Expression:
    """An off-path expression for the critic: a wrong mutation of the state, or a random expression."""
    n_features = example.X.shape[1]
    if rng.random() < 0.5:
        target = example.target if hasattr(example, "target") else None
        for proposal in RandomPolicy().propose(n_features, example.state, 4, rng):
            if proposal.mutation == example.mutation:
                continue
            from dgsr.search.mutations import apply_mutation

            child = apply_mutation(example.state, proposal.mutation)
            if target is None or child.key() != target.key():
                return child
    return _random_expression_like(example.state, n_features, rng)


def encode_point_sets(datasets: list[tuple[np.ndarray, np.ndarray]]
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(points [U, P, W], mask [U, P], dataset index [B]) for B ``(X, y)`` pairs, padded to the
    longest; pairs that share the same ``X`` array are encoded once (consecutive examples of one
    dismantling path, or of one search trial, share their data)."""
    v = vocabulary()
    index_of: dict[int, int] = {}
    encoded, dataset = [], []
    for X, y in datasets:
        if id(X) not in index_of:
            index_of[id(X)] = len(encoded)
            encoded.append(v.encode_points(X, y))
        dataset.append(index_of[id(X)])
    n = max(p.shape[0] for p in encoded)
    points = np.full((len(encoded), n, encoded[0].shape[1]), v.pad, dtype=np.int64)
    mask = np.zeros((len(encoded), n), dtype=bool)
    for i, p in enumerate(encoded):
        points[i, :p.shape[0]] = p
        mask[i, :p.shape[0]] = True
    return torch.from_numpy(points), torch.from_numpy(mask), torch.tensor(dataset)


def collate(examples: list[Any], rng: np.random.Generator, *, with_negatives: bool = True) -> Batch:
    """Token tensors of a list of examples (points padded to the longest dataset)."""
    v = vocabulary()
    points, mask, dataset = encode_point_sets([(e.X, e.y) for e in examples])
    states = pad_ids([v.encode_expression(e.state) for e in examples], v.pad)
    actions = pad_ids([[v.bos] + v.encode_action(e.mutation) for e in examples], v.pad)
    negs = [negative_for(e, rng) for e in examples] if with_negatives else [e.state for e in examples]
    negatives = pad_ids([v.encode_expression(x) for x in negs], v.pad)
    symbols = None
    if all(getattr(e, "target", None) is not None for e in examples):
        symbols = torch.tensor([symbol_targets(e.target) for e in examples])
    return Batch(points, mask, dataset, states, actions, negatives, symbols)

# ---------------------------------------------------------------------- validation
def with_new_y(examples: list[Any], new_y: Callable[[np.ndarray], np.ndarray]) -> list[Example]:
    """``examples`` with each dataset's y replaced by ``new_y(y)``, called once per dataset (examples
    that share an ``X`` array share their data) so a dataset's examples keep sharing it."""
    replaced: dict[int, np.ndarray] = {}
    for e in examples:
        if id(e.X) not in replaced:
            replaced[id(e.X)] = new_y(np.asarray(e.y))
    return [Example(e.X, replaced[id(e.X)], e.state, e.mutation) for e in examples]


def validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False) -> list[Batch]:
    """Held-out examples (``dgsr.training.corpus.load_heldout`` when available), collated once.

    ``permute_y`` shuffles each dataset's y over its points (same marginal, no relation to x): the
    loss gap between the two sets measures how much the policy uses the data (0 = it ignores y).
    """
    return _collated(heldout_examples(config)[: config.val_examples], config, size, permute_y)


def _collated(examples: list[Any], config: TrainConfig, size: int, permute_y: bool) -> list[Batch]:
    """Validation batches of ``size`` examples (y shuffled over each dataset's points when ``permute_y``)."""
    if permute_y:
        examples = with_new_y(examples, np.random.default_rng([config.seed, 98]).permutation)
    rng = np.random.default_rng([config.seed, 99])
    return [collate(examples[i:i + size], rng) for i in range(0, len(examples), size)]


def teacher_validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False,
                               n_examples: int = 256) -> list[Batch]:
    """Held-out in-domain problems labelled by the semantic-policy teacher (:mod:`dgsr.training.teacher`).

    The labels are computed on the true y; ``permute_y`` then shuffles y over the points, so the
    loss gap says how much the model's imitation of the teacher rests on the x-y pairing.
    """
    return _collated(_teacher_heldout_examples(config.n_points, config.mutation_size, n_examples), config,
                     size, permute_y)


def path_validation_batches(config: TrainConfig, size: int = 64, *, permute_y: bool = False) -> list[Batch]:
    """Up to ``config.val_examples`` steps of the held-out ``config.val_paths`` files, spread evenly
    over them (so every file and problem kind is represented), collated once."""
    steps = _path_steps(config.val_paths)
    picks = np.unique(np.linspace(0, len(steps) - 1, min(config.val_examples, len(steps))).round().astype(int))
    return _collated([steps[i] for i in picks], config, size, permute_y)


def _teacher_heldout_examples(n_points: int, mutation_size: float, n_examples: int) -> list[Any]:
    from dgsr.training.corpus import load_heldout
    from dgsr.training.teacher import teacher_examples, teacher_policy

    teacher, rng, out = teacher_policy(), np.random.default_rng(8), []
    for problem in load_heldout("in"):
        X, y = problem.X[:n_points], problem.y[:n_points]
        out += [Example(e.X, e.y, e.state, e.mutation)
                for e in teacher_examples(X, y, problem.expression, rng, teacher=teacher,
                                          mutation_size=mutation_size)]
        if len(out) >= n_examples:
            break
    return out[:n_examples]


def heldout_examples(config: TrainConfig) -> list[Example]:
    """Up to ``config.val_examples`` validation examples: the dismantling paths of the shipped
    in-domain held-out problems (the distribution training draws from, never trained on)."""
    from dgsr.training.corpus import load_heldout
    from dgsr.training.dismantle import mutation_path

    try:
        problems = load_heldout("in")
    except FileNotFoundError:  # a source checkout without the data file
        problems = []
    out: list[Example] = []
    rng = np.random.default_rng([config.seed, 7])
    for problem in problems:
        X, y = problem.X[: config.n_points], problem.y[: config.n_points]
        out += [Example(X, y, s, m) for s, m in mutation_path(problem.expression, rng, config.mutation_size)]
        if len(out) >= config.val_examples:
            return out
    if out:
        return out
    # A stream seed that training never uses (training seeds come from SeedSequence([seed, step])).
    stream = _example_stream(10**9 + config.seed, config)
    return [next(stream) for _ in range(config.val_examples)]
