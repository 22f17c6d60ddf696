"""The learned prior and value over the semantic policy's proposals (issue 51)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dgsr.core.budget import Budget
from dgsr.core.operators import UNARY
from dgsr.core.parser import parse
from dgsr.policies.learned.features import NODE_FEATURES, PROPOSAL_FEATURES, describe_data
from dgsr.policies.learned.policy import LearnedPriorPolicy
from dgsr.policies.learned.training import Examples, initial_weights, train, trial_examples
from dgsr.policies.learned.weights import SHIPPED, WeightsError, load_weights, save_weights
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.search.mcts import SearchConfig, run_search

pytestmark = pytest.mark.timeout(180)
NAMES = ["x0", "x1", "x2"]


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X = np.random.default_rng(seed).uniform(0.5, 2.0, size=(200, 3))
    return X, X[:, 0] * X[:, 1] + np.sin(X[:, 2])


def _proposals(policy, X, y, formula: str = "x0 * x1"):
    context = policy.prepare(X, y, np.random.default_rng(1))
    return policy.propose(context, parse(formula, NAMES), 12, np.random.default_rng(2))


def test_starting_weights_give_the_semantic_priors_exactly():
    X, y = _data()
    semantic = _proposals(SemanticPolicy(), X, y)
    learned = _proposals(LearnedPriorPolicy(initial_weights(0)), X, y)
    assert [p.mutation for p in learned] == [p.mutation for p in semantic]
    np.testing.assert_allclose([p.prior for p in learned], [p.prior for p in semantic], rtol=1e-9)


def _unary_groups(policy, X, y) -> Examples:
    """Groups whose labels are 'the proposals that apply a unary operator' (the semantic policy
    ranks them last here), from real proposals' features."""
    context = policy.prepare(X, y, np.random.default_rng(1))
    examples = Examples()
    for formula in ("x0 * x1", "x0 + x1", "x1", "x0 * x1 + x2", "x2 * x0"):
        policy.propose(context, parse(formula, NAMES), 12, np.random.default_rng(3))
    for features, mutations in (g for groups in context.groups.values() for g in groups):
        labels = np.array([m.op in UNARY for m in mutations], dtype=float)
        if labels.any() and not labels.all():
            examples.groups.append((features, labels))
    return examples


def test_training_moves_the_prior_toward_what_it_was_taught():
    X, y = _data()
    recorder = LearnedPriorPolicy(initial_weights(0), record=True)
    examples = _unary_groups(recorder, X, y)
    assert len(examples.groups) >= 3
    weights = initial_weights(0)
    train(weights, examples, epochs=150, seed=0)
    before = _proposals(LearnedPriorPolicy(initial_weights(0)), X, y, "x2 * x1")
    after = _proposals(LearnedPriorPolicy(weights), X, y, "x2 * x1")
    unary_before = sum(p.prior for p in before if p.mutation.op in UNARY)
    unary_after = sum(p.prior for p in after if p.mutation.op in UNARY)
    assert unary_before < 0.3 and unary_after > 0.6
    assert max(after, key=lambda p: p.prior).mutation.op in UNARY
    assert max(before, key=lambda p: p.prior).mutation.op not in UNARY


def test_training_is_deterministic_for_a_seed():
    X, y = _data()
    examples = _unary_groups(LearnedPriorPolicy(initial_weights(0), record=True), X, y)
    rng = np.random.default_rng(4)
    examples.value_features = list(rng.uniform(0, 1, size=(40, len(NODE_FEATURES))))
    examples.value_targets = list(rng.uniform(0, 1, size=40))
    runs = []
    for seed in (5, 5, 6):
        weights = initial_weights(1)
        train(weights, examples, epochs=5, batch=2, seed=seed)
        runs.append(np.concatenate([v.ravel() for net in (weights.prior, weights.value)
                                    for v in net.arrays().values()]))
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_the_path_to_the_best_expressions_labels_the_groups():
    X, y = _data()
    policy = LearnedPriorPolicy(initial_weights(0), record=True)
    context = policy.prepare(X, y, np.random.default_rng(1))
    state = parse("x0 * x1", NAMES)
    proposals = policy.propose(context, state, 8, np.random.default_rng(2))
    chosen = proposals[3].mutation
    found = trial_examples(context.groups, [[(state, chosen)]], None, [])
    (features, labels), = found.groups
    assert features.shape == (len(proposals), len(PROPOSAL_FEATURES))
    assert labels.tolist() == [float(i == 3) for i in range(len(proposals))]


def test_weights_round_trip_and_corrupted_files_are_refused(tmp_path):
    path = save_weights(tmp_path / "w.json", initial_weights(2))
    loaded = load_weights(path)
    np.testing.assert_array_equal(loaded.prior.W, initial_weights(2).prior.W)
    text = path.read_text()
    data = json.loads(text)
    data["prior"]["a"][0] = 2.0  # an edit the checksum does not cover
    (tmp_path / "edited.json").write_text(json.dumps(data))
    with pytest.raises(WeightsError, match="checksum"):
        load_weights(tmp_path / "edited.json")
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    with pytest.raises(WeightsError, match="not valid JSON"):
        load_weights(tmp_path / "cut.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(WeightsError, match="not a learned-prior weights file"):
        load_weights(tmp_path / "other.json")


def test_a_corrupted_weights_file_is_a_clear_error_through_the_estimator(tmp_path):
    from dgsr import SymbolicRegressor

    path = save_weights(tmp_path / "w.json", initial_weights(0))
    path.write_text(path.read_text().replace('"a": [', '"a": [9, ', 1))
    X, y = _data()
    with pytest.raises(ValueError, match="w.json"):
        SymbolicRegressor(policy=str(path), max_evaluations=200, random_state=0).fit(X, y)


def test_online_learning_changes_the_weights_and_checkpoints_them(tmp_path):
    X, y = _data()
    start = initial_weights(0)
    checkpoint = tmp_path / "online.json"
    policy = LearnedPriorPolicy(start.copy(), online=True, checkpoint=checkpoint)
    run_search(X, y, policy, config=SearchConfig(iterations_per_trial=15), rng=0,
               budget=Budget(max_evaluations=1500))
    assert policy.updates >= 2
    assert not np.allclose(policy.weights.prior.a, start.prior.a)
    saved = load_weights(checkpoint)
    np.testing.assert_array_equal(saved.prior.a, policy.weights.prior.a)
    assert saved.info["online_updates"] == policy.updates


def test_the_learned_value_values_new_nodes():
    X, y = _data()
    policy = LearnedPriorPolicy(initial_weights(0), use_value=True)
    assert policy.has_critic
    context = policy.prepare(X, y, np.random.default_rng(0))
    good, poor = parse("x0 * x1 + sin(x2)", NAMES), parse("x2", NAMES)
    values = policy.value(context, [good, poor])
    assert 0 <= values[1] < values[0] <= 1
    result = run_search(X, y, policy, rng=0, budget=Budget(max_evaluations=800))
    assert result.best is not None and result.best.r2 > 0.9


def test_noise_descriptor_separates_a_law_from_noise():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(2, 100))
    smooth = describe_data(X, np.sin(3 * X[0]) + X[1], 100)
    noise = describe_data(X, rng.normal(size=100), 100)
    assert smooth.noise < 0.2
    assert noise.noise > 0.7


def test_the_shipped_weights_load_and_say_how_they_were_trained():
    weights = load_weights(SHIPPED)
    assert "python -m dgsr.bench.train_prior" in weights.info["trained_by"]
    assert weights.value is not None
    assert SHIPPED.stat().st_size < 200_000


def test_the_estimator_fits_with_the_learned_policy_by_name():
    from dgsr import SymbolicRegressor

    X, y = _data()
    model = SymbolicRegressor(policy="learned", max_evaluations=600, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.predict(X)))
    assert model.score(X, y) > 0.9


def test_node_features_stay_finite_on_huge_and_broken_values():
    X, y = _data()
    policy = LearnedPriorPolicy(initial_weights(0), use_value=True)
    context = policy.prepare(X, y, np.random.default_rng(0))
    nodes = [parse(f, NAMES) for f in ("exp(exp(x0 * 6))", "1e300 * x0 * x1", "log(x0 - 5)", "x0 / (x1 - x1)")]
    values = policy.value(context, nodes)
    assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))
    assert values[1] > values[2]  # a rescaled x0*x1 explains most of y; a NaN everywhere nothing


def test_learned_policy_with_two_processes_and_a_pickle_loaded_in_a_fresh_process(tmp_path):
    import pickle

    from dgsr import SymbolicRegressor
    from tests.cli.dgsr_process import run_python

    X, y = _data()
    model = SymbolicRegressor(policy="learned", n_jobs=2, max_evaluations=800, random_state=0).fit(X, y)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(model))
    np.save(tmp_path / "X.npy", X)
    code = (f"import json, pickle, numpy as np; m = pickle.load(open({str(path)!r}, 'rb')); "
            f"print(json.dumps(m.predict(np.load({str(tmp_path / 'X.npy')!r}))[:5].tolist()), m.policy)")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    values, policy = proc.stdout.strip().rsplit(" ", 1)
    assert policy == "learned"
    np.testing.assert_allclose(json.loads(values), model.predict(X)[:5], rtol=1e-12)
