"""Online trainer: equal mutation/critic shares, corpus mixing, a step lowers the loss, exact state round trip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.online.buffers import CriticItem, ExpertBuffers, Points
from dgsr.online.trainer import OnlineTrainer, TrainBatch, TrainerConfig
from dgsr.search.mutations import Mutation

NAMES = ["x0", "x1"]


def _buffers() -> ExpertBuffers:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(30, 2))
    points = Points(X, X[:, 0] * X[:, 1])
    buffers = ExpertBuffers()
    path = [(Expression.empty(), Mutation(0, "root", parse("x0", NAMES))),
            (parse("x0", NAMES), Mutation(0, "mul", parse("x1", NAMES)))]
    targets = [(parse("x0", NAMES), 1.0), (parse("x0*x1", NAMES), 1.0), (parse("sin(x1)", NAMES), 0.1),
               (parse("x1 + 2.5", NAMES), 0.3)]
    buffers.add_trial(points, [path], targets)
    return buffers


def _trainer(**kwargs) -> OnlineTrainer:
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny"))
    return OnlineTrainer(model, TrainerConfig(**kwargs), buffers=_buffers())


@pytest.mark.timeout(60, method="thread")
def test_batches_hold_equal_shares_and_corpus_examples():
    trainer = _trainer(batch_size=8, synthetic_share=0.5)
    batch = trainer.make_batch()
    assert len(batch.mutation_examples) == 4 and len(batch.critic_items) == 4
    assert batch.n_synthetic == 2  # half of the mutation share comes from the pre-training corpus
    assert all(isinstance(c, CriticItem) for c in batch.critic_items)
    no_mix = _trainer(batch_size=8, synthetic_share=0.0).make_batch()
    assert no_mix.n_synthetic == 0 and len(no_mix.mutation_examples) == 4
    empty = OnlineTrainer(PolicyModel(ModelConfig.preset("tiny")), TrainerConfig(batch_size=8)).make_batch()
    assert empty.n_synthetic == 4 and not empty.critic_items  # buffer empty: corpus only


@pytest.mark.timeout(60, method="thread")
def test_trainer_steps_lower_the_loss_on_a_fixed_batch():
    torch.set_num_threads(1)
    trainer = _trainer(batch_size=8, lr=1e-3)
    batch = trainer.make_batch()
    before = trainer.evaluate(batch)
    assert before["loss"] == pytest.approx(before["action_loss"] + before["critic_loss"], rel=1e-5)  # equal weights
    for _ in range(6):
        trainer.step(batch)
    after = trainer.evaluate(batch)
    assert after["action_loss"] < before["action_loss"]
    assert after["critic_loss"] < before["critic_loss"]
    assert trainer.version == 6


@pytest.mark.timeout(60, method="thread")
def test_state_round_trip_continues_identically():
    torch.set_num_threads(1)
    a = _trainer(batch_size=6, lr=1e-3)
    a.train(2)
    b = OnlineTrainer.from_state_dict(a.state_dict())
    a.train(2)
    b.train(2)
    for (name, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(x, y), name
    assert a.steps == b.steps == 4
    assert a.rng.bit_generator.state == b.rng.bit_generator.state


@pytest.mark.timeout(60, method="thread")
def test_empty_batch_is_a_no_op():
    trainer = _trainer(batch_size=4)
    assert trainer.step(TrainBatch([], [], 0)) == {}
    assert trainer.steps == 0
