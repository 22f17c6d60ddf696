"""The transformer policy/critic: shapes, masking, config round trip, a tiny model overfits one batch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dgsr.core.parser import parse
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.numeric_features import N_POINT_FEATURES, column_features, point_features
from dgsr.neural.sampling import expression_ids, pad_ids, points_ids
from dgsr.neural.tokens import vocabulary
from dgsr.search.mutations import Mutation
from dgsr.training.pretrain import grouped_action_loss

NAMES = ["x0", "x1"]


def _batch(n_points: int = 12):
    """Four hand-built (dataset, state, action) triples."""
    v = vocabulary()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_points, 2))
    cases = [
        ("x0", Mutation(0, "mul", parse("x1", NAMES)), X[:, 0] * X[:, 1]),
        ("x0*x1", Mutation(0, "sin"), np.sin(X[:, 0] * X[:, 1])),
        ("x0 + x1", Mutation(2, "add", parse("2.5", NAMES)), X[:, 0] + X[:, 1] + 2.5),
        ("x1", Mutation(0, "radd", parse("x0**2", NAMES)), X[:, 0] ** 2 + X[:, 1]),
    ]
    points = torch.cat([points_ids(X, y) for _, _, y in cases])
    states = expression_ids([parse(s, NAMES) for s, _, _ in cases])
    actions = pad_ids([[v.bos] + v.encode_action(m) for _, m, _ in cases], v.pad)
    return points, states, actions


def _loss(model, points, states, actions):
    memory = model.encode_points(points)
    h = model.encode_expression(states, memory)
    mem, mask = model.decoder_memory(memory, h, states, vocabulary().pad)
    loss, _, _ = grouped_action_loss(model, model.decode_hidden(actions[:, :-1], mem, mask), actions[:, 1:])
    return loss


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_presets_and_dict_round_trip():
    for name in ("tiny", "small", "large"):
        cfg = ModelConfig.preset(name)
        assert ModelConfig.from_dict(cfg.to_dict()) == cfg
        assert cfg.vocab_size == len(vocabulary())
    with pytest.raises(ValueError, match="unknown model preset"):
        ModelConfig.preset("huge")
    with pytest.raises(ValueError, match="unknown ModelConfig fields"):
        ModelConfig.from_dict({"d_model": 32, "colour": 1})


def test_small_model_fits_the_cpu_budget():
    n = PolicyModel(ModelConfig.preset("small")).n_parameters()
    assert n * 4 < 16 * 2**20  # float32 weights under the 16 MiB package limit


@pytest.mark.timeout(60, method="thread")
def test_shapes_and_critic_range():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    points, states, actions = _batch()
    logits, value = model(points, states, actions)
    assert logits.shape == (4, actions.shape[1], len(vocabulary()))
    assert value.shape == (4,)
    p = torch.sigmoid(value)
    assert torch.all((p >= 0) & (p <= 1))


@pytest.mark.timeout(60, method="thread")
def test_expression_padding_does_not_change_outputs():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    points, states, actions = _batch()
    padded = torch.cat([states, torch.full((4, 5), vocabulary().pad)], dim=1)
    with torch.no_grad():
        a, va = model(points, states, actions)
        b, vb = model(points, padded, actions)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)


@pytest.mark.timeout(60, method="thread")
def test_decoder_is_causal():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    points, states, actions = _batch()
    changed = actions.clone()
    changed[:, -1] = vocabulary().ids["x1"]
    with torch.no_grad():
        a, _ = model(points, states, actions)
        b, _ = model(points, states, changed)
    assert torch.allclose(a[:, :-1], b[:, :-1], atol=1e-5)
    assert not torch.allclose(a[:, -1], b[:, -1])


@pytest.mark.timeout(60, method="thread")
def test_kv_cache_step_matches_full_decode():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    points, states, actions = _batch()
    with torch.no_grad():
        memory = model.encode_points(points)
        h = model.encode_expression(states, memory)
        mem, mask = model.decoder_memory(memory, h, states, vocabulary().pad)
        full = model.decode(actions, mem, mask)
        caches = [{} for _ in model.dec_blocks]
        cross = model.cross_kv(mem)
        for t in range(actions.shape[1]):
            step = model.decode_step(actions[:, t], t, caches, cross, mask)
            assert torch.allclose(step, full[:, t], atol=1e-4)
        cols = torch.tensor([3, 17, 500])
        step_cols = model.decode_step(actions[:, 0], 0, [{} for _ in model.dec_blocks], cross, mask, cols)
        assert torch.allclose(step_cols, full[:, 0][:, cols], atol=1e-4)


@pytest.mark.timeout(60, method="thread")
def test_tiny_model_overfits_one_batch():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny"))
    points, states, actions = _batch()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = _loss(model, points, states, actions).item()
    for _ in range(120):
        opt.zero_grad()
        loss = _loss(model, points, states, actions)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05 < first
    with torch.no_grad():
        memory = model.encode_points(points)
        h = model.encode_expression(states, memory)
        mem, mask = model.decoder_memory(memory, h, states, vocabulary().pad)
        _, right, _ = grouped_action_loss(model, model.decode_hidden(actions[:, :-1], mem, mask), actions[:, 1:])
    assert bool(right.all())  # every action token predicted exactly


@pytest.mark.timeout(60, method="thread")
def test_critic_learns_labels():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny"))
    points, states, _actions = _batch()
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(100):
        opt.zero_grad()
        value = model.value(model.encode_expression(states, model.encode_points(points)), states)
        loss = F.binary_cross_entropy_with_logits(value, labels)
        loss.backward()
        opt.step()
    assert torch.equal((torch.sigmoid(value) > 0.5).float(), labels)


def test_point_features_are_the_decoded_values_standardised_per_column():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(1, 5, 30), rng.normal(1e6, 3e5, 30)])
    y = X[:, 0] ** 2 - 7.0
    feats = point_features(points_ids(X, y)).view(1, 30, -1, N_POINT_FEATURES)[0].double()
    for column, values in [(0, X[:, 0]), (1, X[:, 1]), (-1, y)]:
        z = (values - values.mean()) / values.std()
        np.testing.assert_allclose(feats[:, column, 1].numpy(), np.clip(z, -6, 6) / 3, atol=2e-3)  # 4 digits
        np.testing.assert_allclose(feats[:, column, 3].numpy(), np.log10(values.std()) / 10, atol=1e-3)
        assert (feats[:, column, 0] == 1).all()
    assert (feats[:, 2:-1] == 0).all()  # the 8 absent variables carry nothing


def test_point_features_ignore_padded_points_and_stay_finite():
    X = np.array([[1.0], [2.0], [3.0], [1e200], [-np.inf], [np.nan]])
    y = np.array([1.0, 4.0, 9.0, np.inf, 0.0, 1e-300])
    points = points_ids(X, y)
    feats = point_features(points)
    assert torch.isfinite(feats).all()
    mask = torch.tensor([[True, True, True, False, False, False]])
    masked = point_features(points, mask).view(1, 6, -1, N_POINT_FEATURES)
    np.testing.assert_allclose(masked[0, :3, 0, 1].numpy(), np.array([-1.0, 0.0, 1.0]) / np.sqrt(2 / 3) / 3,
                               atol=1e-3)
    assert (masked[0, 3:] == 0).all()


def test_point_features_make_the_encoding_depend_on_y():
    torch.manual_seed(0)
    model = PolicyModel(replace(ModelConfig.preset("tiny"), encoder="points")).eval()
    X = np.random.default_rng(0).normal(size=(20, 2))
    a = model.encode_points(points_ids(X, X[:, 0] * 3.0))
    b = model.encode_points(points_ids(X, X[:, 0] * 3.0 + 1e-3 * X[:, 1]))
    c = model.encode_points(points_ids(X, np.sin(X[:, 1])))
    assert (a - c).abs().max() > 10 * (a - b).abs().max()


def test_column_features_rank_each_column_with_shared_ranks_for_ties():
    X = np.array([[3.0, 5.0], [1.0, 5.0], [2.0, 5.0], [2.0, 5.0]])
    y = np.array([10.0, -1.0, 0.5, 7.0])
    per_point, stats, present = column_features(points_ids(X, y))
    uniform = per_point[0, :, :, 0].double().numpy()  # [P, C]
    scale = np.sqrt(12.0)
    np.testing.assert_allclose(uniform[:, 0], ((np.array([3, 0, 1.5, 1.5]) + 0.5) / 4 - 0.5) * scale, atol=1e-6)
    np.testing.assert_allclose(uniform[:, 1], 0.0, atol=1e-6)  # a constant column: one shared mid rank
    np.testing.assert_allclose(uniform[:, -1], ((np.array([3, 0, 1, 2]) + 0.5) / 4 - 0.5) * scale, atol=1e-6)
    assert stats[0, 1, 4] == 1.0 and stats[0, 0, 4] == 0.0  # the constant-column flag
    assert (per_point[0, :, 2:-1] == 0).all() and (stats[0, 2:-1] == 0).all()  # absent variables carry nothing
    assert present[0, :, :2].all() and not present[0, :, 2:-1].any()


def test_column_features_ignore_masked_points_and_stay_finite():
    X = np.array([[1.0], [2.0], [3.0], [1e200], [-np.inf], [np.nan]])
    y = np.array([1.0, 4.0, 9.0, np.inf, 0.0, 1e-300])
    points = points_ids(X, y)
    per_point, stats, _ = column_features(points)
    assert torch.isfinite(per_point).all() and torch.isfinite(stats).all()
    mask = torch.tensor([[True, True, True, False, False, False]])
    masked, _, _ = column_features(points, mask)
    np.testing.assert_allclose(masked[0, :3, 0, 0].numpy(), (np.arange(3) + 0.5 - 1.5) / 3 * np.sqrt(12.0), atol=1e-6)
    assert (masked[0, 3:] == 0).all()
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    with torch.no_grad():
        memory = model.encode_points(points, mask)
    assert memory.shape == (1, 11, model.config.d_model) and torch.isfinite(memory).all()
