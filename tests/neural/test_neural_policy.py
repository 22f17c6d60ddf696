"""NeuralPolicy (the Policy seam), model files and checksums, the shipped weights."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch

from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.neural.checkpoint import CheckpointError, file_sha256, load_model, read_metadata, save_model
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.policy import DEFAULT_WEIGHTS, NeuralPolicy
from dgsr.search.mutations import apply_mutation
from dgsr.search.policy import Policy, Proposal

NAMES = ["x0", "x1"]

pytestmark = pytest.mark.usefixtures("torch_one_thread")



def _data(n: int = 150, d: int = 2):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] * np.sin(X[:, 1 % d]) + 1.0


@pytest.fixture(scope="module")
def tiny_model() -> PolicyModel:
    torch.manual_seed(0)
    return PolicyModel(ModelConfig.preset("tiny")).eval()


@pytest.mark.timeout(60, method="thread")
def test_policy_protocol_propose_and_value(tiny_model):
    policy = NeuralPolicy(tiny_model, temperature=1.0, length_penalty=1.0)
    assert isinstance(policy, Policy)
    X, y = _data()
    ctx = policy.prepare(X, y, np.random.default_rng(1))
    assert ctx.memory.shape == (1, 11, tiny_model.config.d_model)  # one token per variable slot, then y
    expr = parse("x0*x1 + 1.5", NAMES)
    proposals = policy.propose(ctx, expr, 8, np.random.default_rng(2))
    assert 0 < len(proposals) <= 8
    assert np.isclose(sum(p.prior for p in proposals), 1.0)
    children = [apply_mutation(expr, p.mutation) for p in proposals]  # all valid
    assert len({c.key() for c in children}) == len(children)  # all distinct
    assert ctx.stats["sampled"] == 8 and ctx.stats["expansions"] == 1
    values = policy.value(ctx, children + [Expression.empty()] + children * 30)  # > one critic batch
    assert values.shape == (len(children) * 31 + 1,)
    assert np.all((values >= 0) & (values <= 1))
    assert np.allclose(values[: len(children)], values[len(children) + 1: 2 * len(children) + 1], atol=1e-5)
    assert policy.propose(ctx, expr, 0, np.random.default_rng(2)) == []


@pytest.mark.timeout(60, method="thread")
def test_same_rng_same_proposals(tiny_model):
    policy = NeuralPolicy(tiny_model)
    X, y = _data()
    expr = parse("x0 + x1", NAMES)

    def run():
        rng = np.random.default_rng(5)
        ctx = policy.prepare(X, y, rng)
        return [(p.mutation, round(p.prior, 6)) for p in policy.propose(ctx, expr, 8, rng)]

    assert run() == run()


@pytest.mark.timeout(60, method="thread")
def test_thread_setting_is_restored(tiny_model):
    before = torch.get_num_threads()
    policy = NeuralPolicy(tiny_model, num_threads=1)
    X, y = _data()
    ctx = policy.prepare(X, y, np.random.default_rng(0))
    policy.propose(ctx, parse("x0", NAMES), 4, np.random.default_rng(0))
    policy.value(ctx, [parse("x0", NAMES)])
    assert torch.get_num_threads() == before


def test_too_many_features_is_a_clear_error(tiny_model):
    X = np.zeros((5, 11))
    with pytest.raises(ValueError, match="at most 10 features"):
        NeuralPolicy(tiny_model).prepare(X, np.zeros(5), np.random.default_rng(0))


@pytest.mark.timeout(60, method="thread")
def test_save_load_round_trip_gives_identical_outputs(tiny_model, tmp_path):
    path = tmp_path / "m.safetensors"
    digest = save_model(tiny_model, path, info={"steps": 7})
    meta = read_metadata(path)
    assert meta["dgsr_sha256"] == digest
    assert json.loads(meta["dgsr_config"]) == tiny_model.config.to_dict()
    loaded, info = load_model(path)
    assert info == {"steps": 7}
    assert loaded.config == tiny_model.config
    X, y = _data()
    a, b = NeuralPolicy(tiny_model), NeuralPolicy.from_checkpoint(path)
    assert b.info == {"steps": 7}
    expr = parse("x0*x1", NAMES)
    ca, cb = a.prepare(X, y, np.random.default_rng(3)), b.prepare(X, y, np.random.default_rng(3))
    assert torch.equal(ca.memory, cb.memory)
    pa = a.propose(ca, expr, 8, np.random.default_rng(4))
    pb = b.propose(cb, expr, 8, np.random.default_rng(4))
    assert pa == pb
    exprs = [apply_mutation(expr, p.mutation) for p in pa]
    assert np.array_equal(a.value(ca, exprs), b.value(cb, exprs))


def test_missing_and_corrupt_files(tiny_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        NeuralPolicy.from_checkpoint(tmp_path / "nope.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file at all")
    with pytest.raises(CheckpointError, match="bad.safetensors"):
        load_model(bad)
    # flip one byte of the tensor data: the stored tensor checksum catches it
    path = tmp_path / "m.safetensors"
    save_model(tiny_model, path)
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    flipped = tmp_path / "flipped.safetensors"
    flipped.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="checksum"):
        load_model(flipped)
    # truncated
    truncated = tmp_path / "cut.safetensors"
    truncated.write_bytes(path.read_bytes()[: len(raw) // 2])
    with pytest.raises(CheckpointError):
        load_model(truncated)


def test_half_precision_file_is_half_the_bytes_and_loads_into_float32(tiny_model, tmp_path):
    full, half = tmp_path / "full.safetensors", tmp_path / "half.safetensors"
    save_model(tiny_model, full)
    save_model(tiny_model, half, half=True, write_sha256_file=True)
    assert half.stat().st_size < 0.6 * full.stat().st_size
    loaded, _ = load_model(half)
    assert all(p.dtype == torch.float32 for p in loaded.parameters())
    for name, p in loaded.state_dict().items():  # each weight is its float16 rounding
        original = tiny_model.state_dict()[name]
        assert torch.equal(p, original.half().to(original.dtype)) if original.is_floating_point() else torch.equal(p, original)
    X, y = _data()
    ca = NeuralPolicy(tiny_model).prepare(X, y, np.random.default_rng(3))
    cb = NeuralPolicy(loaded).prepare(X, y, np.random.default_rng(3))
    assert torch.allclose(ca.memory, cb.memory, atol=2e-2, rtol=2e-2)


@pytest.mark.timeout(120, method="thread")
def test_medium_preset_ships_under_the_16_mib_limit_in_half_precision(tmp_path):
    model = PolicyModel(ModelConfig.preset("medium"))
    small = sum(p.numel() for p in PolicyModel(ModelConfig.preset("small")).parameters())
    assert sum(p.numel() for p in model.parameters()) > 2 * small  # worth training on a GPU
    path = tmp_path / "medium.safetensors"
    save_model(model, path, half=True)
    assert path.stat().st_size <= 16 * 2**20
    assert load_model(path)[0].config == model.config


def test_sidecar_checksum_is_checked(tiny_model, tmp_path):
    path = tmp_path / "m.safetensors"
    save_model(tiny_model, path, write_sha256_file=True)
    sidecar = Path(f"{path}.sha256")
    assert sidecar.read_text().split()[0] == file_sha256(path)
    load_model(path)
    sidecar.write_text("0" * 64 + "  m.safetensors\n")
    with pytest.raises(CheckpointError, match="does not match"):
        load_model(path)


def test_not_a_dgsr_checkpoint(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "other.safetensors"
    save_file({"w": torch.zeros(2)}, str(path))
    with pytest.raises(CheckpointError, match="not a dgsr policy checkpoint"):
        load_model(path)


@pytest.mark.timeout(60, method="thread")
def test_search_runs_with_the_neural_policy(tiny_model, tmp_path):
    from dgsr.search.mcts import SearchConfig, run_search

    X, y = _data(60)
    policy = NeuralPolicy(tiny_model, num_threads=1)
    result = run_search(X, y, policy, config=SearchConfig(n_samples=4, iterations_per_trial=20, max_trials=1),
                        rng=0)
    assert result.n_trials == 1 and result.n_evaluations > 1  # the neural proposals were evaluated
    front = result.archive.front()
    assert result.best in front
    # a front: each larger expression fits strictly better, and only the dataset's variables appear
    assert all(a.size < b.size and a.mse > b.mse for a, b in pairwise(front))
    assert all(e.expression.variables <= set(range(X.shape[1])) for e in front)


@pytest.mark.timeout(60, method="thread")
@pytest.mark.skipif(not DEFAULT_WEIGHTS.is_file(), reason="shipped weights not trained yet")
def test_shipped_weights_load_and_checksum_matches():
    sidecar = Path(f"{DEFAULT_WEIGHTS}.sha256")
    if sidecar.is_file():
        assert sidecar.read_text().split()[0] == file_sha256(DEFAULT_WEIGHTS)
    assert DEFAULT_WEIGHTS.stat().st_size <= 16 * 2**20
    policy = NeuralPolicy.from_pretrained()
    # the shipped file has the preset's shape; its encoder options may predate the preset's
    shipped = policy.model.config
    assert replace(shipped, point_features=True, encoder="variables", pair_width=64,
                   target_symbols=False, variable_pointer=True) == ModelConfig.preset("small")
    assert policy.info.get("steps", 0) > 0
    X, y = _data()
    ctx = policy.prepare(X, y, np.random.default_rng(0))
    assert policy.propose(ctx, parse("x0*x1", NAMES), 16, np.random.default_rng(0))


@pytest.mark.timeout(60, method="thread")
def test_critic_encodings_are_reused_exactly(tiny_model):
    """An expression valued by the critic is expanded from its cached encoding, with the same result."""
    X, y = _data()
    expr = parse("x0*x1 + 1.5", NAMES)
    short = parse("x0", NAMES)
    policy = NeuralPolicy(tiny_model)
    ctx = policy.prepare(X, y, np.random.default_rng(1))
    policy.value(ctx, [expr, short])  # batched with padding
    assert expr.key() in ctx.encodings
    cached = policy.propose(ctx, expr, 8, np.random.default_rng(2))
    assert expr.key() not in ctx.encodings  # used once, then dropped
    fresh_ctx = policy.prepare(X, y, np.random.default_rng(1))
    fresh = policy.propose(fresh_ctx, expr, 8, np.random.default_rng(2))
    assert [p.mutation for p in cached] == [p.mutation for p in fresh]
    assert np.allclose([p.prior for p in cached], [p.prior for p in fresh], atol=1e-5)


@pytest.mark.timeout(60, method="thread")
def test_accuracy_values_never_call_the_critic(tiny_model, tmp_path):
    """use_critic=False: the search scores nodes by accuracy and never runs the critic head."""
    from dgsr.core.budget import Budget
    from dgsr.estimator.policy_loading import load_policy
    from dgsr.search.mcts import SearchConfig, run_search

    class NoCritic(NeuralPolicy):
        def value(self, context, expressions):
            raise AssertionError("the critic was called")

    X, y = _data()
    policy = NoCritic(tiny_model, use_critic=False)
    assert policy.has_critic is False
    result = run_search(X, y, policy, config=SearchConfig(n_samples=4), rng=0, budget=Budget(max_evaluations=40))
    assert result.n_evaluations > 0 and result.best is not None
    with pytest.raises(AssertionError, match="critic was called"):
        run_search(X, y, NoCritic(tiny_model), config=SearchConfig(n_samples=4), rng=0,
                   budget=Budget(max_evaluations=40))
    # a user's checkpoint keeps the paper's critic values; the shipped weights use accuracy
    path = tmp_path / "mine.safetensors"
    save_model(tiny_model, path)
    assert load_policy(str(path)).has_critic is True
    if DEFAULT_WEIGHTS.is_file():
        assert load_policy("neural").has_critic is False


@pytest.mark.timeout(60, method="thread")
def test_rerank_keeps_the_networks_favourite_candidates(tiny_model):
    """RerankPolicy: k of the source's candidates, the best-scored ones at temperature 0, with
    priors that follow the scores; values from the source (NaN: the search uses accuracy)."""
    from dgsr.core.budget import Budget
    from dgsr.neural.policy import RerankPolicy
    from dgsr.neural.sampling import score_mutations
    from dgsr.policies.random import RandomPolicy
    from dgsr.search.mcts import SearchConfig, run_search

    class Fixed(RandomPolicy):  # the same candidate list whatever the rng
        def propose(self, context, expression, k, rng):
            return super().propose(context, expression, k, np.random.default_rng(7))

    X, y = _data()
    expr = parse("x0*x1 + 1.5", NAMES)
    policy = RerankPolicy(NeuralPolicy(tiny_model, temperature=0.0, length_penalty=0.0), Fixed(), n_candidates=24)
    ctx = policy.prepare(X, y, np.random.default_rng(1))
    chosen = policy.propose(ctx, expr, 6, np.random.default_rng(2))
    candidates = [p.mutation for p in Fixed().propose(2, expr, 24, None)]
    scores, _ = score_mutations(tiny_model, ctx.neural.memory, expr, candidates)
    best = [candidates[i] for i in np.argsort(-scores, kind="stable")[:6]]
    assert [p.mutation for p in chosen] == best
    priors = np.array([p.prior for p in chosen])
    assert np.isclose(priors.sum(), 1.0) and np.all(np.diff(priors) <= 1e-12)  # best first, highest prior
    assert np.isnan(policy.value(ctx, [expr])).all() and policy.has_critic is False

    class Confident(Fixed):  # a source sure of its last candidate: the product follows it
        def propose(self, context, expression, k, rng):
            found = super().propose(context, expression, k, rng)
            rest = 1e-6 / (len(found) - 1)
            return [Proposal(p.mutation, rest) for p in found[:-1]] + [Proposal(found[-1].mutation, 1 - 1e-6)]

    product = RerankPolicy(policy.neural, Confident(), n_candidates=24)
    assert product.propose(product.prepare(X, y, np.random.default_rng(1)), expr, 6,
                           np.random.default_rng(2))[0].mutation == candidates[-1]
    sampled = RerankPolicy(NeuralPolicy(tiny_model, temperature=1.0), RandomPolicy(), n_candidates=24)
    result = run_search(X, y, sampled, config=SearchConfig(n_samples=4), rng=0, budget=Budget(max_evaluations=40))
    assert result.n_evaluations > 0 and result.best is not None


@pytest.mark.timeout(120, method="thread")
def test_shipped_weights_read_y():
    """The shipped policy's held-out action loss rises when y is shuffled over the points (same X,
    same marginal of y): it uses the x-y pairing. The file shipped before 2026-11-24 gave -0.000003
    here; this one gives about +0.03 nats per token on these 256 steps."""
    from dgsr.training.batches import collate, heldout_examples, with_new_y
    from dgsr.training.pretrain import evaluate_batches
    from dgsr.training.pretrain_config import TrainConfig

    model, _ = load_model(DEFAULT_WEIGHTS)
    examples = heldout_examples(TrainConfig(data="corpus", val_examples=256))[:256]

    def loss(exs):
        batches = [collate(exs[i:i + 64], np.random.default_rng(0)) for i in range(0, len(exs), 64)]
        return evaluate_batches(model, batches, torch.device("cpu"))["val_action_loss"]

    gap = loss(with_new_y(examples, np.random.default_rng(1).permutation)) - loss(examples)
    assert gap > 0.01
