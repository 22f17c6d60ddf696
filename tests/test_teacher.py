"""The semantic-policy teacher: data-dependent labels, deterministic streams, and its share of a batch."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest

from dgsr.dismantle import mutation_path
from dgsr.expression import Expression
from dgsr.mutations import apply_mutation
from dgsr.parser import parse
from dgsr.pretrain import TrainConfig, batch_examples, train
from dgsr.teacher import teacher_examples, teacher_policy, teacher_stream


def _problem(column: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Expression]:
    X = np.random.default_rng(seed).uniform(0.5, 3.0, size=(100, 3))
    truth = parse(f"sin(x{column}) * x{(column + 1) % 3} + x{column} ** 2")
    from dgsr.evaluate import evaluate

    return X, evaluate(truth, X), truth


def _empty_label(examples) -> object:
    return next(e.mutation for e in examples if e.state.is_empty)


def test_labels_are_the_teachers_first_choice_and_valid():
    X, y, truth = _problem(0)
    examples = teacher_examples(X, y, truth, np.random.default_rng(1))
    states = {e.state.key() for e in examples}
    path_states = {s.key() for s, _ in mutation_path(truth, np.random.default_rng(1))}
    assert Expression.empty().key() in states
    assert len(states) == len(examples)  # one label per state
    assert len(states - path_states) >= 1  # the greedy rollout adds states off the dismantling path
    teacher = teacher_policy()
    for e in examples:
        apply_mutation(e.state, e.mutation, max_size=teacher.max_size)  # raises if invalid
        if e.state.size > teacher.max_nodes:
            continue  # larger states: the teacher samples which nodes to score (rng-dependent)
        # a fresh teacher asked once about the state gives the same first choice
        context = teacher.prepare(X, y, np.random.default_rng(1))
        assert teacher.propose(context, e.state, 1, np.random.default_rng(1))[0].mutation == e.mutation


def test_labels_follow_the_x_y_pairing():
    """Same y, same column marginals, only which column y is paired with changes (x0 and x2 swap):
    the teacher's first mutation follows the pairing."""
    X, y, truth = _problem(0)
    first = _empty_label(teacher_examples(X, y, truth, np.random.default_rng(1)))
    swapped = _empty_label(teacher_examples(X[:, [2, 1, 0]], y, truth, np.random.default_rng(1)))
    assert "x0" in first.operand.symbols and "x2" not in first.operand.symbols
    assert "x2" in swapped.operand.symbols and "x0" not in swapped.operand.symbols


def test_stream_is_a_function_of_its_seed():
    a = [(e.state, e.mutation) for e in itertools.islice(teacher_stream(3, n_points=40), 10)]
    b = [(e.state, e.mutation) for e in itertools.islice(teacher_stream(3, n_points=40), 10)]
    c = [(e.state, e.mutation) for e in itertools.islice(teacher_stream(4, n_points=40), 10)]
    assert a == b and a != c


TINY = TrainConfig(model="tiny", batch_size=8, warmup=2, eval_every=2, checkpoint_every=2, val_examples=4,
                   n_points=20, data="generator")


@pytest.mark.usefixtures("torch_one_thread")
def test_teacher_share_of_a_batch_and_its_validation_gap(tmp_path):
    config = replace(TINY, teacher_share=0.5)
    batch = batch_examples(config, 3)
    assert len(batch) == 8
    assert [(e.state, e.mutation) for e in batch] == [(e.state, e.mutation) for e in batch_examples(config, 3)]
    plain = batch_examples(TINY, 3)
    # the first half is the dismantling corpus, unchanged; the second half is labelled by the teacher
    assert [(e.state, e.mutation) for e in batch[:4]] == [(e.state, e.mutation) for e in plain[:4]]
    teacher = teacher_policy()
    for e in batch[4:]:
        if e.state.size > teacher.max_nodes:
            continue
        context = teacher.prepare(e.X, e.y, np.random.default_rng(0))
        assert teacher.propose(context, e.state, 1, np.random.default_rng(0))[0].mutation == e.mutation
    record = train(config, tmp_path / "run", 2, progress=False)
    assert np.isfinite(record["val_teacher_loss"]) and np.isfinite(record["val_teacher_gap"])
    logged = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert "val_teacher_gap" in logged[-1]
