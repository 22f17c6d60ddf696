"""Pre-training: deterministic batches, grouped loss, exact resume, the CLI plug-in."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dgsr.neural.checkpoint import CheckpointError, load_model, load_training_state
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.tokens import MAX_EXPONENT, MAX_MANTISSA, vocabulary
from dgsr.training.batches import batch_examples, collate
from dgsr.training.pretrain import grouped_action_loss, losses, lr_at, train
from dgsr.training.pretrain_config import TrainConfig

TINY = TrainConfig(model="tiny", batch_size=6, warmup=2, eval_every=2, checkpoint_every=2, val_examples=4,
                   n_points=20, data="generator")

pytestmark = pytest.mark.usefixtures("torch_one_thread")



@pytest.mark.timeout(60, method="thread")
def test_batches_are_a_function_of_seed_and_step():
    a, b = batch_examples(TINY, 3), batch_examples(TINY, 3)
    assert [(e.state, e.mutation) for e in a] == [(e.state, e.mutation) for e in b]
    c = batch_examples(TINY, 4)
    assert [(e.state, e.mutation) for e in a] != [(e.state, e.mutation) for e in c]
    batch = collate(a, np.random.default_rng(0))
    assert batch.states.shape[0] == batch.actions.shape[0] == batch.negatives.shape[0] == 6
    assert batch.points.shape[0] == int(batch.dataset.max()) + 1 <= 6  # shared datasets encoded once
    assert batch.points.shape[1] == 20
    assert torch.all(batch.actions[:, 0] == vocabulary().bos)
    # negatives are off the path: never the positive state itself
    assert not any(torch.equal(n, s) for n, s in zip(batch.negatives, batch.states))


@pytest.mark.timeout(60, method="thread")
def test_grouped_loss_equals_constrained_softmax():
    """Each target is normalised within its token group (what constrained decoding samples from)."""
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny"))
    v = vocabulary()
    hidden = torch.randn(2, 3, 32)
    target = torch.tensor([[v.ids["I3"], v.mantissa0 + 1234, v.exponent0 + 90], [v.ids["x1"], v.eos, v.pad]])
    loss, right, keep = grouped_action_loss(model, hidden, target)
    logits = hidden @ model.tok.weight.T
    groups = {0: range(v.mantissa0, v.mantissa0 + MAX_MANTISSA + 1),
              1: range(v.exponent0, v.exponent0 + 2 * MAX_EXPONENT + 1)}
    manual = []
    for i in range(2):
        for j in range(3):
            t = int(target[i, j])
            if t == v.pad:
                continue
            mask = torch.zeros(len(v), dtype=torch.bool)
            g = next((g for g, r in groups.items() if t in r), 2)
            if g == 2:
                mask[:] = True
                for r in groups.values():
                    mask[r.start:r.stop] = False
            else:
                mask[groups[g].start:groups[g].stop] = True
            manual.append(-torch.log_softmax(logits[i, j].masked_fill(~mask, float("-inf")), -1)[t])
    assert loss.item() == pytest.approx(torch.stack(manual).mean().item(), rel=1e-5)
    assert keep.sum() == 5 and bool(right[1, 2])
    # the mantissa target (row 0, position 1 = manual[1]) is down-weighted, the mean still over 5 tokens
    weighted, _, _ = grouped_action_loss(model, hidden, target, mantissa_weight=0.25)
    expected = (sum(manual) - 0.75 * manual[1]) / 5
    assert weighted.item() == pytest.approx(expected.item(), rel=1e-5)


def test_learning_rate_schedule():
    cfg = TrainConfig(lr=1.0, warmup=10)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(39, cfg) == pytest.approx(0.5)


@pytest.mark.timeout(60, method="thread")
def test_losses_are_finite_and_backpropagate():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny"))
    batch = collate(batch_examples(TINY, 0), np.random.default_rng(0))
    parts = losses(model, batch)
    assert all(torch.isfinite(v) for v in parts.values())
    parts["loss"].backward()
    grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert all(torch.isfinite(g).all() for g in grads.values())
    # both heads and the point encoder learn from this loss
    for name in ("critic.0.weight", "pair_mlp.0.weight", "tok.weight"):
        assert grads[name].abs().sum() > 0, name


@pytest.mark.timeout(60, method="thread")
def test_resume_after_interrupt_continues_at_the_same_step(tmp_path):
    torch.manual_seed(0)
    straight = train(TINY, tmp_path / "a", 3, device="cpu", progress=False)
    torch.manual_seed(0)
    train(TINY, tmp_path / "b", 2, device="cpu", progress=False)  # "interrupted" after step 2
    state = load_training_state(tmp_path / "b" / "ckpt.pt")
    assert state["step"] == 2
    torch.manual_seed(123)  # the resumed process starts from other global state
    resumed = train(TINY, tmp_path / "b", 3, resume=True, device="cpu", progress=False)
    assert resumed["step"] == straight["step"] == 3
    assert resumed["loss"] == pytest.approx(straight["loss"], abs=1e-6)
    a, _ = load_model(tmp_path / "a" / "model.safetensors")
    b, info = load_model(tmp_path / "b" / "model.safetensors")
    assert info["steps"] == 3 and "val_action_acc" in info
    assert info["hardware"].startswith("CPU only, ")  # for the model card: where the run trained
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.allclose(pa, pb, atol=1e-6), name
    steps = [json.loads(line)["step"] for line in (tmp_path / "b" / "log.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]


def test_broken_training_checkpoint_is_a_clear_error(tmp_path):
    path = tmp_path / "ckpt.pt"
    path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="ckpt.pt"):
        load_training_state(path)


@pytest.mark.timeout(60, method="thread")
def test_cli_pretrain(tmp_path, capsys):
    from dgsr.cli.app import main

    out = tmp_path / "run"
    status = main(["pretrain", "--config", "tiny", "--steps", "2", "--out", str(out), "--batch-size", "4",
                   "--eval-every", "2", "--data", "generator", "--val-examples", "4", "--points", "20"])
    assert status == 0
    assert (out / "ckpt.pt").is_file() and (out / "model.safetensors").is_file()
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["step"] == 2
    assert main(["pretrain", "--config", "nope", "--steps", "1", "--out", str(out)]) == 2


@pytest.mark.timeout(60, method="thread")
def test_init_from_weights_continues_the_step_count(tmp_path):
    torch.manual_seed(0)
    train(TINY, tmp_path / "a", 2, device="cpu", progress=False)
    record = train(TINY, tmp_path / "b", 3, device="cpu", progress=False, init=tmp_path / "a" / "model.safetensors")
    assert record["step"] == 3
    assert [json.loads(line)["step"] for line in (tmp_path / "b" / "log.jsonl").read_text().splitlines()] == [3]
    assert record["lr"] == pytest.approx(TINY.lr * lr_at(3, TINY))  # the schedule goes on, no new warm-up


@pytest.mark.timeout(120, method="thread")
def test_init_extends_weights_trained_without_point_features(tmp_path):
    from dataclasses import replace

    from dgsr.neural.checkpoint import save_model
    from dgsr.training.pretrain import init_model

    torch.manual_seed(0)
    points = replace(ModelConfig.preset("tiny"), encoder="points")
    old = PolicyModel(replace(points, point_features=False)).eval()
    save_model(old, tmp_path / "old.safetensors", info={"steps": 5})
    new, info = init_model(tmp_path / "old.safetensors", points, torch.device("cpu"))
    assert new.config.point_features and info["steps"] == 5
    batch = collate(batch_examples(TINY, 0), np.random.default_rng(0))
    with torch.no_grad():
        assert float(losses(new.eval(), batch)["loss"]) == pytest.approx(float(losses(old, batch)["loss"]), abs=1e-6)
    record = train(replace(TINY, encoder="points"), tmp_path / "b", 7, device="cpu", progress=False,
                   init=tmp_path / "old.safetensors")
    trained, _ = load_model(tmp_path / "b" / "model.safetensors")
    assert trained.config.point_features and record["step"] == 7
    assert trained.point_num[2].weight.abs().sum() > 0  # the new layer learns
    assert "val_data_gap" in record


@pytest.mark.timeout(60, method="thread")
def test_init_switches_the_point_encoder_and_keeps_every_other_weight(tmp_path):
    from dgsr.neural.checkpoint import save_model
    from dgsr.training.pretrain import init_model

    torch.manual_seed(0)
    old = PolicyModel(replace(ModelConfig.preset("tiny"), encoder="points", point_features=False)).eval()
    save_model(old, tmp_path / "old.safetensors", info={"steps": 5})
    new, info = init_model(tmp_path / "old.safetensors", ModelConfig.preset("tiny"), torch.device("cpu"))
    assert new.config.encoder == "variables" and info["steps"] == 5
    kept = {k: v for k, v in old.state_dict().items() if not k.startswith(("point_tok.", "point_proj."))}
    state = new.state_dict()
    assert kept and all(torch.equal(state[k], v) for k, v in kept.items())
    assert not any(k.startswith(("point_tok.", "point_proj.")) for k in state)
    X = np.random.default_rng(0).normal(size=(30, 3))
    memory = new.encode_points(torch.from_numpy(vocabulary().encode_points(X, X[:, 1] ** 2))[None])
    assert memory.shape == (1, 11, new.config.d_model) and torch.isfinite(memory).all()


def test_symbol_targets_mark_the_ground_truths_operators_variables_and_constants():
    from dgsr.core.parser import parse
    from dgsr.neural.model_config import SYMBOLS, symbol_targets

    hot = dict(zip(SYMBOLS, symbol_targets(parse("sin(x1) * 2.5 + x3", ["x0", "x1", "x2", "x3"]))))
    assert {s for s, h in hot.items() if h} == {"sin", "mul", "add", "x1", "x3", "c"}


@pytest.mark.timeout(120, method="thread")
def test_auxiliary_symbol_loss_trains_the_point_encoder():
    from dgsr.training.corpus import example_stream

    torch.manual_seed(0)
    model = PolicyModel(replace(ModelConfig.preset("tiny"), target_symbols=True))
    stream = example_stream(3, n_points=20)
    batch = collate([next(stream) for _ in range(16)], np.random.default_rng(0))
    assert batch.symbols is not None and batch.symbols.shape == (16, len(model.symbol_head[2].bias))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(100):
        parts = losses(model, batch, aux_weight=1.0)
        optimizer.zero_grad()
        parts["loss"].backward()
        optimizer.step()
    # better than the best data-blind guess (each symbol's frequency in the batch): it reads the points
    p = batch.symbols.mean(0).clamp(1e-6, 1 - 1e-6)
    blind = F.binary_cross_entropy(p.expand_as(batch.symbols), batch.symbols)
    assert len(set(batch.dataset.tolist())) > 1 and float(blind) > 0.1
    assert float(parts["aux_loss"].detach()) < 0.5 * float(blind)
    assert "aux_loss" not in losses(model, batch)  # off unless asked for


@pytest.mark.timeout(120, method="thread")
def test_variable_pointer_extends_a_file_as_a_no_op_and_its_scores_reach_every_loss(tmp_path):
    """A file without the pointer gains it at zero (same loss); once non-zero, the grouped loss
    equals a softmax over the full logits of ``decode`` with the pointer's keys, and changes when
    the variables' memory tokens are swapped (the pointer reads them)."""
    from dgsr.neural.checkpoint import save_model
    from dgsr.training.pretrain import init_model, teacher_forced

    torch.manual_seed(0)
    old = PolicyModel(replace(ModelConfig.preset("tiny"), variable_pointer=False)).eval()
    path = tmp_path / "old.safetensors"
    save_model(old, path, info={"steps": 3})
    new, _ = init_model(path, ModelConfig.preset("tiny"), torch.device("cpu"))
    assert new.config.variable_pointer and float(new.pointer.weight.detach().abs().sum()) == 0.0
    batch = collate(batch_examples(TINY, 0), np.random.default_rng(0))
    with torch.no_grad():
        assert float(losses(new.eval(), batch)["loss"]) == pytest.approx(float(losses(old, batch)["loss"]), abs=1e-6)
        torch.nn.init.normal_(new.pointer.weight, std=0.5)
        _, memory, point_mask, h, hidden = teacher_forced(new, batch)
        target = batch.actions[:, 1:]
        keys = new.variable_keys(memory)
        loss, _, keep = grouped_action_loss(new, hidden, target, keys=keys)
        from dgsr.neural.sampling import token_groups

        groups = token_groups()
        mem, mask = new.decoder_memory(memory, h, batch.states, vocabulary().pad, point_mask)
        full = new.decode(batch.actions[:, :-1], mem, mask, keys)
        manual = []
        for b, t in keep.nonzero().tolist():
            tok = int(target[b, t])
            same = groups == groups[tok]
            manual.append(-torch.log_softmax(full[b, t][same], -1)[int(same[:tok].sum())])
        assert float(loss) == pytest.approx(float(torch.stack(manual).mean()), abs=1e-4)
        swapped = memory.clone()
        swapped[:, [0, 1]] = memory[:, [1, 0]]
        loss_swapped, _, _ = grouped_action_loss(new, hidden, target, keys=new.variable_keys(swapped))
        assert abs(float(loss_swapped) - float(loss)) > 1e-4


@pytest.mark.timeout(120, method="thread")
def test_worker_processes_build_the_same_batches_and_the_same_run(tmp_path):
    from dgsr.training.prefetch import BatchPrefetcher, step_batch

    with BatchPrefetcher(TINY, 5, workers=2) as coming:
        ahead = [next(coming) for _ in range(3)]
    for offset, batch in enumerate(ahead):
        inline = step_batch(TINY, 5 + offset)
        for name in ("points", "states", "actions", "negatives"):
            assert torch.equal(getattr(batch, name), getattr(inline, name)), (offset, name)
    torch.manual_seed(0)
    alone = train(TINY, tmp_path / "a", 3, device="cpu", progress=False)
    torch.manual_seed(0)
    helped = train(TINY, tmp_path / "b", 3, device="cpu", progress=False, workers=2)
    assert helped["loss"] == pytest.approx(alone["loss"], abs=1e-6)
    with pytest.raises(ValueError, match="workers"):
        BatchPrefetcher(TINY, 0, workers=-1)
