"""Batched constrained sampling: K, temperature, validity mask, priors, KV-cache consistency."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dgsr.core.expression import Expression
from dgsr.core.parser import parse
from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.neural.sampling import points_ids, sample_mutations
from dgsr.neural.tokens import vocabulary
from dgsr.search.mutations import MAX_SIZE, Mutation, apply_mutation

NAMES = ["x0", "x1", "x2"]

pytestmark = pytest.mark.usefixtures("torch_one_thread")



@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = PolicyModel(ModelConfig.preset("tiny")).eval()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = X[:, 0] * X[:, 1]
    with torch.inference_mode():
        memory = model.encode_points(points_ids(X, y))
    return model, memory


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("k", [1, 5, 16])
def test_k_sequences_and_valid_results(setup, k):
    model, memory = setup
    expr = parse("x0*sin(x1) + x2", NAMES)
    r = sample_mutations(model, memory, expr, k=k, n_features=3, generator=_gen(1))
    assert r.n_sampled == k
    assert r.n_decode_failures == 0  # the grammar only lets well-formed actions through
    assert len(r.samples) <= k
    assert r.n_valid + sum(r.rejected.values()) == k
    assert len(r.samples) + r.n_duplicates == r.n_valid
    keys = set()
    for s in r.samples:
        assert 0 <= s.mutation.node < expr.size
        assert s.mutation.op != "root"
        assert apply_mutation(expr, s.mutation) == s.result
        assert s.result.variables <= {0, 1, 2}  # operands use only the dataset's variables
        assert s.logprob <= 0
        keys.add(s.result.key())
    assert len(keys) == len(r.samples)
    if r.samples:
        assert r.priors.shape == (len(r.samples),)
        assert np.isclose(r.priors.sum(), 1.0) and np.all(r.priors > 0)


@pytest.mark.timeout(60, method="thread")
def test_empty_expression_gets_root_mutations(setup):
    model, memory = setup
    r = sample_mutations(model, memory, Expression.empty(), k=8, n_features=2, generator=_gen(2))
    assert r.samples
    for s in r.samples:
        assert s.mutation.node == 0 and s.mutation.op == "root"
        assert s.result.variables <= {0, 1}


@pytest.mark.timeout(60, method="thread")
def test_operand_respects_size_budget(setup):
    model, memory = setup
    big = parse(" + ".join(["x0*x1"] * 14), NAMES)  # 55 nodes
    assert big.size == 55
    r = sample_mutations(model, memory, big, k=16, n_features=3, generator=_gen(3))
    for s in r.samples:
        assert s.result.size <= MAX_SIZE
    assert set(r.rejected) <= {"too_large", "nested_transcendental"}


@pytest.mark.timeout(60, method="thread")
def test_same_generator_seed_same_samples(setup):
    model, memory = setup
    expr = parse("x0 + x1", NAMES)
    a = sample_mutations(model, memory, expr, k=8, n_features=3, generator=_gen(7))
    b = sample_mutations(model, memory, expr, k=8, n_features=3, generator=_gen(7))
    assert [s.mutation for s in a.samples] == [s.mutation for s in b.samples]
    assert np.allclose(a.priors, b.priors)


@pytest.mark.timeout(60, method="thread")
def test_temperature_controls_diversity(setup):
    model, memory = setup
    expr = parse("x0 + x1", NAMES)
    greedy = sample_mutations(model, memory, expr, k=8, n_features=3, temperature=0.0)
    assert greedy.n_valid + sum(greedy.rejected.values()) == 8
    assert len(greedy.samples) <= 1  # all K rows decode the same argmax sequence
    cold = [len(sample_mutations(model, memory, expr, k=16, n_features=3, temperature=0.05,
                                 generator=_gen(s)).samples) for s in range(3)]
    hot = [len(sample_mutations(model, memory, expr, k=16, n_features=3, temperature=3.0,
                                generator=_gen(s)).samples) for s in range(3)]
    assert sum(hot) > sum(cold)


@pytest.mark.timeout(60, method="thread")
def test_logprob_matches_teacher_forced_score(setup):
    """The sampler's constrained log-probability equals a teacher-forced recomputation."""
    model, memory = setup
    v = vocabulary()
    expr = parse("x0*x1", NAMES)
    r = sample_mutations(model, memory, expr, k=4, n_features=3, generator=_gen(11), rule_mask=False,
                         mantissa_digits=4)
    from dgsr.neural.sampling import expression_ids
    from dgsr.neural.tokens import ActionGrammar

    tokens = expression_ids([expr])
    with torch.no_grad():
        h = model.encode_expression(tokens, memory)
        mem, mask = model.decoder_memory(memory, h, tokens, v.pad)
        for s in r.samples:
            seq = v.encode_action(s.mutation)
            logits = model.decode(torch.tensor([[v.bos] + seq[:-1]]), mem, mask, model.variable_keys(memory))[0]
            g = ActionGrammar(v, expr.size, 3, max_operand=MAX_SIZE - expr.size - 1)
            total = 0.0
            for t, tok in enumerate(seq):
                allowed = torch.from_numpy(g.allowed())
                lp = torch.log_softmax(logits[t].masked_fill(~allowed, float("-inf")), -1)
                total += lp[tok].item()
                g.advance(tok)
            assert total == pytest.approx(s.logprob, abs=1e-3)


@pytest.mark.timeout(60, method="thread")
def test_rule_mask_removes_nesting_rejections(setup):
    """With the nesting rule as a mask, hot sampling around transcendentals yields no rejections."""
    model, memory = setup
    rejected_without, rejected_with, n = 0, 0, 0
    for text in ("sin(x0) + x1", "x0*exp(x1 + x2)", "log(x0) * cos(x1)", "x0 + x1"):
        expr = parse(text, NAMES)
        for seed in range(3):
            a = sample_mutations(model, memory, expr, k=16, n_features=3, temperature=2.0, generator=_gen(seed),
                                 rule_mask=False)
            b = sample_mutations(model, memory, expr, k=16, n_features=3, temperature=2.0, generator=_gen(seed))
            rejected_without += a.rejected["nested_transcendental"]
            rejected_with += b.rejected["nested_transcendental"]
            n += len(b.samples)
            for s in b.samples:
                assert apply_mutation(expr, s.mutation) == s.result
    assert rejected_without > 0
    assert rejected_with == 0
    assert n > 0


@pytest.mark.timeout(60, method="thread")
def test_rule_mask_keeps_transcendental_operands_where_the_rule_allows_them(setup):
    """The nesting mask removes only what the rule forbids: at ``x0`` in ``x0 + sq(x1)`` (no
    transcendental around) hot sampling still adds operands holding sin/cos/exp/log, while under
    the ``sin`` of ``sin(x0 + x1)`` no operand ever holds one."""
    from dgsr.core.operators import TRANSCENDENTAL

    model, memory = setup

    def operands(text: str, node: int) -> list[Expression]:
        expr = parse(text, NAMES)
        found = []
        for seed in range(8):
            r = sample_mutations(model, memory, expr, k=16, n_features=3, temperature=2.0, generator=_gen(seed))
            found += [s.mutation.operand for s in r.samples
                      if s.mutation.node == node and s.mutation.operand is not None]
        return found

    def has_transcendental(e: Expression) -> bool:
        return any(sym in TRANSCENDENTAL for sym in e.symbols)

    free = operands("x0 + sq(x1)", 1)
    assert any(has_transcendental(b) for b in free)
    under_sin = operands("sin(x0 + x1)", 2)
    assert under_sin and not any(has_transcendental(b) for b in under_sin)


@pytest.mark.timeout(60, method="thread")
def test_coarse_mantissas(setup):
    """Sampled constants have at most ``mantissa_digits`` significant digits."""
    from dgsr.neural.tokens import float_parts

    model, memory = setup
    expr = parse("x0 + x1", NAMES)
    seen = 0
    for seed in range(6):
        r = sample_mutations(model, memory, expr, k=16, n_features=3, temperature=2.0, generator=_gen(seed),
                             mantissa_digits=2)
        for s in r.samples:
            for c in s.result.constants:
                _, mantissa, _ = float_parts(c)
                assert mantissa % 100 == 0
                seen += 1
    assert seen > 0


@pytest.mark.timeout(60, method="thread")
def test_batched_scores_equal_one_by_one_grouped_log_probabilities(setup):
    """score_mutations: each candidate's log-probability, every token normalised within its token
    group (mantissa / exponent / other), mantissas left out unless asked; a prefix scores exactly
    that prefix."""
    from dgsr.neural.sampling import expression_ids, score_mutations, token_groups

    model, memory = setup
    v = vocabulary()
    expr = parse("x0*x1 + 2.5", NAMES)
    mutations = [Mutation(0, "sin"), Mutation(1, "add", parse("x2", NAMES)),
                 Mutation(4, "mul", parse("x0 * -0.75", NAMES)), Mutation(0, "radd", parse("1.25", NAMES))]
    groups = token_groups()
    tokens = expression_ids([expr])
    with torch.no_grad():
        h = model.encode_expression(tokens, memory)
        mem, mask = model.decoder_memory(memory, h, tokens, v.pad)
        expected = {False: [], True: [], 3: []}
        for m in mutations:
            seq = v.encode_action(m)
            logits = model.decode(torch.tensor([[v.bos] + seq[:-1]]), mem, mask, model.variable_keys(memory))[0]
            parts = []
            for t, tok in enumerate(seq):
                same = groups == groups[tok]
                parts.append((int(groups[tok]), torch.log_softmax(logits[t][same], -1)[int(same[:tok].sum())].item()))
            expected[False].append(sum(lp for g, lp in parts if g != 0))
            expected[True].append(sum(lp for _, lp in parts))
            expected[3].append(sum(lp for g, lp in parts[:3] if g != 0))
    without, n_scored = score_mutations(model, memory, expr, mutations)
    with_constants, n_all = score_mutations(model, memory, expr, mutations, constants=True)
    prefix, n_prefix = score_mutations(model, memory, expr, mutations, max_tokens=3)
    np.testing.assert_allclose(without, expected[False], atol=1e-4)
    np.testing.assert_allclose(with_constants, expected[True], atol=1e-4)
    np.testing.assert_allclose(prefix, expected[3], atol=1e-4)
    assert list(n_all) == [len(v.encode_action(m)) for m in mutations]
    assert list(n_scored) == [len(v.encode_action(m)) - sum(1 for c in ([] if m.operand is None else
                                                                           m.operand.constants)) for m in mutations]
    assert all(n <= 3 for n in n_prefix)
