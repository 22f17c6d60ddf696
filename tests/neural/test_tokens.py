"""Tokens (Appendix B): float, expression, action and point encodings; malformed input never raises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgsr.core.expression import Expression
from dgsr.core.operators import MAX_VARIABLES
from dgsr.core.parser import parse
from dgsr.neural.tokens import (
    FLOAT_WIDTH,
    POINT_WIDTH,
    ActionGrammar,
    DecodeFailure,
    float_parts,
    round_float,
    vocabulary,
)
from dgsr.search.mutations import MAX_SIZE, MUTATION_OPERATORS, Mutation
from dgsr.training.generator import GeneratorConfig, random_expression

pytestmark = pytest.mark.timeout(60, method="thread")

V = vocabulary()


def words(ids) -> list[str]:
    return [V.words[i] for i in ids]


# ---------------------------------------------------------------------------- floats
@pytest.mark.parametrize(
    "value,tokens,decoded",
    [
        (0.0, ["+", "N0", "E0"], 0.0),
        (-0.0, ["+", "N0", "E0"], 0.0),
        (1.0, ["+", "N1000", "E-3"], 1.0),
        (-2.5, ["-", "N2500", "E-3"], -2.5),
        (123456789.0, ["+", "N1235", "E5"], 1.235e8),
        (9.9995, ["+", "N1000", "E-2"], 10.0),  # rounding carries into the exponent
        (1e-50, ["+", "N1000", "E-53"], 1e-50),
        (-1e50, ["-", "N1000", "E47"], -1e50),
        (1e-97, ["+", "N1000", "E-100"], 1e-97),  # smallest representable magnitude
        (1e-98, ["+", "N0", "E0"], 0.0),  # below it: zero
        (5e-324, ["+", "N0", "E0"], 0.0),  # subnormals
        (2.2250738585072014e-308, ["+", "N0", "E0"], 0.0),
        (1e104, ["+", "N9999", "E100"], 9.999e103),  # saturates
        (1.7976931348623157e308, ["+", "N9999", "E100"], 9.999e103),
        (math.inf, ["+", "N9999", "E100"], 9.999e103),
        (-math.inf, ["-", "N9999", "E100"], -9.999e103),
        (math.nan, ["+", "N0", "E0"], 0.0),
    ],
)
def test_float_tokens(value, tokens, decoded):
    ids = V.encode_float(value)
    assert words(ids) == tokens
    assert V.decode_float(ids) == decoded
    assert round_float(value) == decoded


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=2000, deadline=None)
def test_float_round_trip_keeps_four_significant_digits(value):
    ids = V.encode_float(value)
    assert len(ids) == FLOAT_WIDTH
    back = V.decode_float(ids)
    assert back == round_float(value)
    a = abs(value)
    if 1e-97 <= a <= 9.999e103:
        assert math.copysign(1, back) == math.copysign(1, value) or back == 0
        assert abs(back - value) <= 5.0001e-4 * a  # half a unit in the 4th significant digit
        assert V.encode_float(back) == ids  # rounding is idempotent
    sign, mantissa, exponent = float_parts(value)
    assert sign in (-1, 1) and 0 <= mantissa <= 9999 and -100 <= exponent <= 100


def test_points_encoding_pads_variables_and_puts_y_last():
    X = np.array([[1.0, -2.0], [3.0, 0.5]])
    y = np.array([10.0, math.inf])
    ids = V.encode_points(X, y)
    assert ids.shape == (2, POINT_WIDTH) and ids.dtype == np.int64
    row = ids[1].reshape(MAX_VARIABLES + 1, FLOAT_WIDTH)
    assert V.decode_float(list(row[0])) == 3.0 and V.decode_float(list(row[1])) == 0.5
    assert all(list(r) == [V.pad] * FLOAT_WIDTH for r in row[2:MAX_VARIABLES])
    assert V.decode_float(list(row[MAX_VARIABLES])) == 9.999e103  # non-finite still encodes
    vectorised = V.encode_points(X, y)[0].reshape(MAX_VARIABLES + 1, FLOAT_WIDTH)
    assert list(vectorised[1]) == V.encode_float(-2.0)  # vectorised path agrees with the scalar one
    with pytest.raises(ValueError):
        V.encode_points(np.zeros((1, MAX_VARIABLES + 1)), np.zeros(1))


# ---------------------------------------------------------------------------- expressions and actions
def rounded(expr: Expression) -> Expression:
    return expr.with_constants([round_float(c) for c in expr.constants])


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_expression_and_action_round_trip(seed):
    rng = np.random.default_rng(seed)
    expr = random_expression(rng, GeneratorConfig(max_operators=40))
    ids = V.encode_expression(expr)
    assert V.decode_expression(ids) == rounded(expr)
    node = int(rng.integers(MAX_SIZE))
    for op in MUTATION_OPERATORS:
        m = Mutation(node, op, None if op in ("sin", "cos", "tan", "exp", "log", "sqrt", "inv", "sq") else expr)
        action = V.encode_action(m)
        assert action[-1] == V.eos and words(action)[:2] == [f"I{node}", op]
        back = V.decode_action(action)
        assert back == Mutation(node, op, None if m.operand is None else rounded(expr))
        assert V.decode_action(action + [V.pad] * 3) == back  # padding after <eos> is ignored


def test_empty_expression_and_root_action():
    assert words(V.encode_expression(Expression.empty())) == ["<empty>"]
    assert V.decode_expression([V.empty]) == Expression.empty()
    m = Mutation(0, "root", parse("x0*sin(x1)"))
    assert words(V.encode_action(m)) == ["I0", "root", "mul", "x0", "sin", "x1", "<eos>"]
    assert V.decode_action(V.encode_action(m)) == m


def test_vocabulary_is_stable_and_complete():
    assert len(set(V.words)) == len(V)
    assert V.words[:5] == ("<pad>", "<bos>", "<eos>", "<sep>", "<empty>")
    for w in [f"I{i}" for i in range(MAX_SIZE)] + [f"x{i}" for i in range(MAX_VARIABLES)] + list(MUTATION_OPERATORS):
        assert w in V.ids


def ids_of(*ws: str) -> list[int]:
    return [V.ids[w] for w in ws]


@pytest.mark.parametrize(
    "tokens,reason",
    [
        ([], "too_short"),
        (["I3"], "too_short"),
        (["<eos>"], "too_short"),
        (["x0", "add", "x1"], "node_token"),
        (["I3", "N5"], "operator_token"),
        (["I3", "x0", "x1"], "operator_token"),
        (["I3", "sin", "x0"], "unexpected_operand"),
        (["I3", "add"], "missing_operand"),
        (["I3", "add", "<eos>", "x0"], "missing_operand"),
        (["I0", "root", "<empty>"], "missing_operand"),
        (["I3", "add", "add", "x0"], "malformed_expression"),
        (["I3", "add", "x0", "x1"], "malformed_expression"),
        (["I3", "mul", "+", "N12"], "float_width"),
        (["I3", "mul", "+", "E3", "E3"], "float_mantissa"),
        (["I3", "mul", "-", "N12", "N3"], "float_exponent"),
        (["I3", "mul", "I4"], "expression_token"),
        (["I3", "mul", "root"], "expression_token"),
        (["I3", "mul", "<bos>", "x0"], "expression_token"),
    ],
)
def test_malformed_actions_decode_to_failure(tokens, reason):
    result = V.decode_action(ids_of(*tokens))
    assert isinstance(result, DecodeFailure) and result.reason == reason


@given(st.lists(st.integers(-5, len(V) + 5), max_size=30))
@settings(max_examples=2000, deadline=None)
def test_random_token_soup_never_raises(ids):
    result = V.decode_action(ids)
    assert isinstance(result, (Mutation, DecodeFailure))
    expr = V.decode_expression(ids)
    assert isinstance(expr, (Expression, DecodeFailure))


def test_decode_float_rejects_wrong_tokens():
    assert isinstance(V.decode_float(ids_of("+", "N1")), DecodeFailure)
    assert isinstance(V.decode_float(ids_of("x0", "N1", "E0")), DecodeFailure)
    assert isinstance(V.decode_float(ids_of("+", "E1", "E0")), DecodeFailure)
    assert isinstance(V.decode_float(ids_of("+", "N1", "N0")), DecodeFailure)


# ---------------------------------------------------------------------------- constrained decoding grammar
def walk(grammar: ActionGrammar, rng: np.random.Generator) -> list[int]:
    ids = []
    for _ in range(500):
        if grammar.done:
            return ids
        allowed = np.flatnonzero(grammar.allowed())
        assert allowed.size > 0  # never a dead end
        token = int(rng.choice(allowed))
        ids.append(token)
        grammar.advance(token)
    raise AssertionError("grammar never finished")


def test_grammar_walks_always_decode_to_well_formed_actions():
    rng = np.random.default_rng(0)
    for _ in range(500):
        size = int(rng.integers(0, 8))
        features = int(rng.integers(1, MAX_VARIABLES + 1))
        ids = walk(ActionGrammar(V, size, features, max_operand=8), rng)
        action = V.decode_action(ids)
        assert isinstance(action, Mutation), action
        assert (action.op == "root") == (size == 0)
        assert action.node < max(size, 1)
        if action.operand is not None:
            assert all(v < features for v in action.operand.variables)


def test_grammar_respects_operand_budget():
    rng = np.random.default_rng(1)
    for _ in range(300):
        budget = int(rng.integers(1, 6))
        action = V.decode_action(walk(ActionGrammar(V, 3, 2, max_operand=budget), rng))
        assert action.operand is None or action.operand.size <= budget, (budget, str(action))


def test_action_padding_without_eos_decodes():
    from dgsr.core.parser import parse
    from dgsr.search.mutations import Mutation

    mutation = Mutation(2, "mul", parse("x1"))
    ids = V.encode_action(mutation)[:-1] + [V.pad, V.pad]
    assert V.decode_action(ids) == mutation
