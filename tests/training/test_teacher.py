"""The semantic-policy teacher: data-dependent labels, deterministic streams, and its share of a batch."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest

from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.search.mutations import apply_mutation
from dgsr.training.batches import batch_examples
from dgsr.training.dismantle import mutation_path
from dgsr.training.pretrain import train
from dgsr.training.pretrain_config import TrainConfig
from dgsr.training.teacher import teacher_examples, teacher_policy, teacher_stream


def _problem(column: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Expression]:
    X = np.random.default_rng(seed).uniform(0.5, 3.0, size=(100, 3))
    truth = parse(f"sin(x{column}) * x{(column + 1) % 3} + x{column} ** 2")
    from dgsr.core.evaluate import evaluate

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


def _replay(path) -> Expression:
    current = Expression.empty()
    for e in path:
        assert e.state.key() == current.key()  # each step starts where the previous one ended
        current = apply_mutation(current, e.mutation, max_size=60)
    return current


def test_search_path_replays_to_a_fit_of_the_data():
    from dgsr.core.evaluate import evaluate, r2_score
    from dgsr.training.teacher import search_path_examples

    X, y, truth = _problem(1)
    path = search_path_examples(X, y, truth, np.random.default_rng(0), evaluations=2000)
    assert path and path[0].state.is_empty
    assert all(e.target is truth for e in path)
    found = _replay(path)
    # The search scores a node after refitting its constants and the weights of its additive
    # terms (linear scaling): do the same by least squares, and the replayed path fits the data.
    from dgsr.core.linear_terms import additive_terms

    terms = np.column_stack([evaluate(t, X) for _, t in additive_terms(found)] + [np.ones(len(y))])
    assert np.all(np.isfinite(terms))
    weights, *_ = np.linalg.lstsq(terms, y, rcond=None)
    assert r2_score(y, terms @ weights) >= 0.99


def test_search_path_is_kept_only_when_its_solution_fits_the_check_rows():
    from dgsr.core.evaluate import evaluate
    from dgsr.training.teacher import search_path_examples

    X, y, truth = _problem(1)
    X_check = np.random.default_rng(7).uniform(0.5, 3.0, size=(50, 3))
    kept = search_path_examples(X, y, truth, np.random.default_rng(0), X_check=X_check,
                                y_check=evaluate(truth, X_check))
    # the same search, checked against rows of another law, is dropped
    other = evaluate(parse("exp(x2) - x0"), X_check)
    dropped = search_path_examples(X, y, truth, np.random.default_rng(0), X_check=X_check, y_check=other)
    assert kept and dropped == []


def test_search_path_is_empty_when_nothing_fits():
    from dgsr.training.teacher import search_path_examples

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(60, 2))
    y = rng.normal(size=60)  # noise: no expression reaches R² 0.99
    assert search_path_examples(X, y, parse("x0"), rng, evaluations=200) == []


def test_a_failed_search_gives_its_partial_path_only_when_asked_and_when_it_generalises():
    from dgsr.core.evaluate import evaluate
    from dgsr.training.teacher import search_path_examples

    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 3.0, size=(100, 3))
    truth = parse("sin(x0) * x1 + x2 ** 2")
    y = evaluate(truth, X) + rng.normal(scale=0.5, size=100)  # noise: R² 0.99 is out of reach
    X_check = rng.uniform(0.5, 3.0, size=(100, 3))
    y_check = evaluate(truth, X_check)

    def run(**kw):
        return search_path_examples(X, y, truth, np.random.default_rng(0), evaluations=600,
                                    X_check=X_check, y_check=y_check, **kw)

    assert run() == []  # no solution: solution paths alone label nothing
    partial = run(partial_r2=0.8)
    assert partial and partial[0].state.is_empty and all(e.target is truth for e in partial)
    _replay(partial)  # a chain of valid steps from the empty expression
    assert run(partial_r2=0.9999) == []  # the best expression does not reach that bar
    # the same search checked against rows of another law is dropped
    shuffled = np.random.default_rng(1).permutation(y_check)
    assert search_path_examples(X, y, truth, np.random.default_rng(0), evaluations=600, X_check=X_check,
                                y_check=shuffled, partial_r2=0.8) == []


@pytest.fixture(scope="module")
def collected_paths():
    from dgsr.training.teacher import collect_search_paths

    collected = [examples for _, examples in collect_search_paths(5, n_problems=6, n_points=40, evaluations=300)]
    assert len(collected) >= 2, "the semantic search solves some of six generated problems"
    return collected


@pytest.mark.usefixtures("torch_one_thread")
def test_search_paths_round_trip_and_feed_a_share_of_the_batch(tmp_path, collected_paths):
    from dgsr.training.teacher import load_search_paths, save_search_paths

    collected = collected_paths
    file = tmp_path / "paths.pkl"
    save_search_paths(file, collected)
    loaded = load_search_paths(file)
    assert [[(e.state.key(), e.mutation) for e in p] for p in loaded] == \
        [[(e.state.key(), e.mutation) for e in p] for p in collected]
    steps = {(e.state.key(), e.mutation) for p in loaded for e in p}

    config = replace(TINY, paths=str(file), paths_share=0.5)
    batch = batch_examples(config, 3)
    assert len(batch) == 8
    assert [(e.state.key(), e.mutation) for e in batch] == [(e.state.key(), e.mutation) for e in batch_examples(config, 3)]
    plain = batch_examples(TINY, 3)
    assert [(e.state, e.mutation) for e in batch[:4]] == [(e.state, e.mutation) for e in plain[:4]]
    assert all((e.state.key(), e.mutation) in steps for e in batch[4:])

    # the command line trains on them and records the share in the run's config
    from dgsr.cli.app import main
    from dgsr.neural.checkpoint import load_model

    out = tmp_path / "run"
    assert main(["pretrain", "--config", "tiny", "--steps", "2", "--out", str(out), "--batch-size", "4",
                 "--eval-every", "2", "--data", "generator", "--val-examples", "4", "--points", "20",
                 "--paths", str(file), "--paths-share", "0.5"]) == 0
    _, info = load_model(out / "model.safetensors")
    assert info["train_config"]["paths"] == str(file) and info["train_config"]["paths_share"] == 0.5
    assert main(["pretrain", "--config", "tiny", "--steps", "2", "--out", str(tmp_path / "r2"),
                 "--paths-share", "0.5"]) == 2  # a share with no files is refused

    bad = tmp_path / "bad.pkl"
    import pickle

    bad.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(ValueError, match="not a search-path file"):
        load_search_paths(bad)


def test_train_config_rejects_shares_that_do_not_fit_a_batch():
    with pytest.raises(ValueError, match="at most 1"):
        replace(TINY, teacher_share=0.6, paths="x.pkl", paths_share=0.6)
    with pytest.raises(ValueError, match="path files"):
        replace(TINY, paths_share=0.2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        replace(TINY, teacher_share=1.5)


@pytest.mark.usefixtures("torch_one_thread")
def test_held_out_path_files_are_scored_at_each_evaluation_and_cannot_also_be_trained_on(tmp_path, collected_paths,
                                                                                          capsys):
    import torch

    from dgsr.cli.app import main
    from dgsr.neural.checkpoint import load_model
    from dgsr.training.batches import path_validation_batches
    from dgsr.training.pretrain import evaluate_batches
    from dgsr.training.teacher import save_search_paths

    cpu = torch.device("cpu")
    train_file, held_file = tmp_path / "train.pkl", tmp_path / "held.pkl"
    save_search_paths(train_file, collected_paths[:1])
    save_search_paths(held_file, collected_paths[1:])
    with pytest.raises(ValueError, match="both trained on and held out"):
        replace(TINY, paths=f"{train_file},{held_file}", paths_share=0.5, val_paths=str(held_file))

    out = tmp_path / "run"
    assert main(["pretrain", "--config", "tiny", "--steps", "2", "--out", str(out), "--batch-size", "4",
                 "--eval-every", "2", "--data", "generator", "--val-examples", "4", "--points", "20",
                 "--paths", str(train_file), "--paths-share", "0.5", "--val-paths", str(held_file)]) == 0
    logged = json.loads((out / "log.jsonl").read_text().splitlines()[-1])
    model, info = load_model(out / "model.safetensors")
    config = TrainConfig(**info["train_config"])
    assert config.val_paths == str(held_file)
    # the logged figure is the saved model's action loss on the held-out file's steps, y shuffled for the gap
    held = evaluate_batches(model, path_validation_batches(config), cpu)["val_action_loss"]
    shuffled = evaluate_batches(model, path_validation_batches(config, permute_y=True), cpu)
    assert logged["val_paths_loss"] == pytest.approx(held, abs=1e-5)
    assert logged["val_paths_gap"] == pytest.approx(shuffled["val_action_loss"] - held, abs=1e-5)
    # ... and not the training file's: scoring the other file gives another figure
    other = replace(config, val_paths=str(train_file), paths="", paths_share=0.0)
    assert evaluate_batches(model, path_validation_batches(other), cpu)["val_action_loss"] != \
        pytest.approx(held, abs=1e-4)
    n_held = sum(map(len, collected_paths[1:]))
    assert sum(len(b.states) for b in path_validation_batches(config)) == min(4, n_held)

    # bench/experiments/path_loss.py gives the same figure for a weights file after the fact
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "experiments" / "path_loss.py"
    spec = importlib.util.spec_from_file_location("dgsr_path_loss", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--val-paths", str(held_file), "--examples", "4", "--points", "20",
                       str(out / "model.safetensors")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "model.safetensors" in line)
    assert float(row.split("|")[3]) == pytest.approx(logged["val_paths_loss"], abs=1e-4)
