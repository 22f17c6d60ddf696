"""Token vocabulary of the mutation policy (Appendix B of the paper).

* Floats: three tokens, sign (``+``/``-``), mantissa ``N0``..``N9999`` (4 significant digits) and
  exponent ``E-100``..``E100``: ``x = sign * mantissa * 10**exponent``.
* Expressions: prefix notation, constants as float triples; the empty expression is ``<empty>``.
* Datasets: one row of ``MAX_VARIABLES + 1`` float triples per point (x padded with ``<pad>``, then y),
  which the model embeds as ONE token per point.
* Actions: ``I<node> <op> [B tokens] <eos>`` with one token per node index 0..59 (CONTRACTS §1).

Decoding never raises on malformed input: :func:`decode_action` returns a :class:`DecodeFailure`
with a reason, so the search can count and skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dgsr.core.expression import Expression, MalformedExpression
from dgsr.core.operators import BINARY, CONSTANT, MAX_VARIABLES, TABLE_ONE, UNARY, arity, variable_symbol
from dgsr.search.mutations import MAX_SIZE, MUTATION_OPERATORS, Mutation

SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>", "<empty>")
MANTISSA_DIGITS = 4
MAX_MANTISSA = 10**MANTISSA_DIGITS - 1
MAX_EXPONENT = 100
FLOAT_WIDTH = 3  # tokens per float
POINT_WIDTH = (MAX_VARIABLES + 1) * FLOAT_WIDTH  # tokens per data point


@dataclass(frozen=True)
class DecodeFailure:
    """A token sequence that is not a well-formed action or expression."""

    reason: str


class Vocabulary:
    """The fixed token list; ids are stable across versions as long as this order is kept."""

    def __init__(self) -> None:
        words: list[str] = list(SPECIALS)
        words += ["+", "-"]
        words += [f"N{m}" for m in range(MAX_MANTISSA + 1)]
        words += [f"E{e}" for e in range(-MAX_EXPONENT, MAX_EXPONENT + 1)]
        words += list(TABLE_ONE)  # expression operators (also unary/binary mutation operators)
        words += [op for op in MUTATION_OPERATORS if op not in TABLE_ONE]  # root, radd, ...
        words += [variable_symbol(i) for i in range(MAX_VARIABLES)]
        words += [f"I{i}" for i in range(MAX_SIZE)]
        self.words: tuple[str, ...] = tuple(words)
        self.ids: dict[str, int] = {w: i for i, w in enumerate(words)}
        self.pad, self.bos, self.eos, self.sep, self.empty = (self.ids[s] for s in SPECIALS)
        self.plus, self.minus = self.ids["+"], self.ids["-"]
        self.mantissa0 = self.ids["N0"]
        self.exponent0 = self.ids[f"E{-MAX_EXPONENT}"]
        self.index0 = self.ids["I0"]
        self.variable0 = self.ids["x0"]

    def __len__(self) -> int:
        return len(self.words)

    # ----------------------------------------------------------------- floats
    def encode_float(self, value: float) -> list[int]:
        sign, mantissa, exponent = float_parts(value)
        return [self.minus if sign < 0 else self.plus, self.mantissa0 + mantissa,
                self.exponent0 + exponent + MAX_EXPONENT]

    def decode_float(self, ids: list[int]) -> float | DecodeFailure:
        if len(ids) != FLOAT_WIDTH:
            return DecodeFailure("float_width")
        s, m, e = ids
        if s not in (self.plus, self.minus):
            return DecodeFailure("float_sign")
        mantissa, exponent = m - self.mantissa0, e - self.exponent0 - MAX_EXPONENT
        if not 0 <= mantissa <= MAX_MANTISSA:
            return DecodeFailure("float_mantissa")
        if not -MAX_EXPONENT <= exponent <= MAX_EXPONENT:
            return DecodeFailure("float_exponent")
        return (-1.0 if s == self.minus else 1.0) * float(f"{mantissa}e{exponent}")

    # ----------------------------------------------------------------- expressions
    def encode_expression(self, expr: Expression) -> list[int]:
        if expr.is_empty:
            return [self.empty]
        out: list[int] = []
        ci = 0
        for s in expr.symbols:
            if s == CONSTANT:
                out += self.encode_float(expr.constants[ci])
                ci += 1
            else:
                out.append(self.ids[s])
        return out

    def decode_expression(self, ids: list[int]) -> Expression | DecodeFailure:
        if ids == [self.empty]:
            return Expression.empty()
        symbols: list[str] = []
        constants: list[float] = []
        i = 0
        while i < len(ids):
            t = ids[i]
            if t in (self.plus, self.minus):
                value = self.decode_float(ids[i:i + FLOAT_WIDTH])
                if isinstance(value, DecodeFailure):
                    return value
                symbols.append(CONSTANT)
                constants.append(value)
                i += FLOAT_WIDTH
                continue
            word = self.words[t] if 0 <= t < len(self.words) else None
            if word is None or not (word in TABLE_ONE or word.startswith("x") and word[1:].isdigit()):
                return DecodeFailure("expression_token")
            symbols.append(word)
            i += 1
        if not symbols:
            return DecodeFailure("empty_operand")
        try:
            return Expression(tuple(symbols), tuple(constants))
        except MalformedExpression:
            return DecodeFailure("malformed_expression")

    # ----------------------------------------------------------------- actions
    def encode_action(self, mutation: Mutation) -> list[int]:
        out = [self.index0 + mutation.node, self.ids[mutation.op]]
        if mutation.operand is not None:
            out += self.encode_expression(mutation.operand)
        out.append(self.eos)
        return out

    def decode_action(self, ids: list[int]) -> Mutation | DecodeFailure:
        """Decode ``I<node> <op> [B] <eos>`` (a trailing ``<eos>`` and padding are optional)."""
        ids = list(ids)
        if self.eos in ids:
            ids = ids[: ids.index(self.eos)]
        while ids and ids[-1] == self.pad:
            ids.pop()
        if len(ids) < 2:
            return DecodeFailure("too_short")
        node = ids[0] - self.index0
        if not 0 <= node < MAX_SIZE:
            return DecodeFailure("node_token")
        op = self.words[ids[1]] if 0 <= ids[1] < len(self.words) else None
        if op not in MUTATION_OPERATORS:
            return DecodeFailure("operator_token")
        rest = ids[2:]
        if op in UNARY:
            return Mutation(node, op) if not rest else DecodeFailure("unexpected_operand")
        if not rest:
            return DecodeFailure("missing_operand")
        operand = self.decode_expression(rest)
        if isinstance(operand, DecodeFailure):
            return operand
        if operand.is_empty:
            return DecodeFailure("missing_operand")
        return Mutation(node, op, operand)

    # ----------------------------------------------------------------- datasets
    def encode_points(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Token ids of shape [n_points, POINT_WIDTH]: x padded to MAX_VARIABLES, then y."""
        X = np.asarray(X, dtype=np.float64)
        n, d = X.shape
        if d > MAX_VARIABLES:
            raise ValueError(f"at most {MAX_VARIABLES} variables can be encoded, got {d}")
        values = np.column_stack([X, np.asarray(y, dtype=np.float64).reshape(n, 1)])
        signs, mantissas, exponents = float_parts_array(values)
        triples = np.stack([np.where(signs < 0, self.minus, self.plus), self.mantissa0 + mantissas,
                            self.exponent0 + exponents + MAX_EXPONENT], axis=-1)  # [n, d+1, 3]
        out = np.full((n, MAX_VARIABLES + 1, FLOAT_WIDTH), self.pad, dtype=np.int64)
        out[:, :d] = triples[:, :d]
        out[:, MAX_VARIABLES] = triples[:, d]
        return out.reshape(n, POINT_WIDTH)


def float_parts(value: float) -> tuple[int, int, int]:
    """(sign, mantissa, exponent) with 4 significant digits; saturates outside E-100..E100.

    Non-finite values have no token: nan encodes as 0 and +-inf as the largest magnitude, so a
    dataset never breaks encoding (the regressor rejects non-finite data before this point).
    """
    s, m, e = float_parts_array(np.array([value], dtype=np.float64))
    return int(s[0]), int(m[0]), int(e[0])


def float_parts_array(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`float_parts`."""
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isnan(v), 0.0, v)
    sign = np.where(np.signbit(v) & (v != 0), -1, 1)
    a = np.abs(v)
    a = np.where(np.isinf(a), np.finfo(np.float64).max, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp10 = np.floor(np.log10(np.where(a > 0, a, 1.0))).astype(np.int64)
        exponent = exp10 - (MANTISSA_DIGITS - 1)
        mantissa = np.rint(a / np.power(10.0, exponent.astype(np.float64))).astype(np.int64)
    carry = mantissa > MAX_MANTISSA  # 9999.5 rounds up to 10000
    mantissa = np.where(carry, mantissa // 10, mantissa)
    exponent = np.where(carry, exponent + 1, exponent)
    too_big = exponent > MAX_EXPONENT
    mantissa = np.where(too_big, MAX_MANTISSA, mantissa)
    exponent = np.where(too_big, MAX_EXPONENT, exponent)
    too_small = (exponent < -MAX_EXPONENT) | (a == 0)
    mantissa = np.where(too_small, 0, mantissa)
    exponent = np.where(too_small, 0, exponent)
    sign = np.where(too_small & (a == 0), 1, sign)
    return sign, mantissa, exponent


def round_float(value: float) -> float:
    """``value`` as it survives a token round trip (4 significant digits, saturated)."""
    s, m, e = float_parts(value)
    return s * float(f"{m}e{e}")


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The shared vocabulary instance."""
    return Vocabulary()


class ActionGrammar:
    """Incremental validity mask for constrained decoding of one action.

    Tracks where a partial action stands (node index, operator, operand prefix, float triple) so
    the sampler can mask tokens that could never complete a well-formed action for an expression
    of ``expression_size`` nodes over ``n_features`` variables.
    """

    def __init__(self, vocab: Vocabulary, expression_size: int, n_features: int, max_operand: int = MAX_SIZE):
        self.v = vocab
        self.expression_size = expression_size
        self.n_features = min(n_features, MAX_VARIABLES)
        self.max_operand = max_operand
        self.stage = "node"  # node -> op -> operand -> done
        self.need = 0  # open slots in the operand prefix sequence
        self.operand_nodes = 0
        self.float_pos = 0  # 0 = not inside a float triple, 1 = after sign, 2 = after mantissa
        self._masks = _grammar_masks(vocab)

    @property
    def done(self) -> bool:
        return self.stage == "done"

    def allowed(self) -> np.ndarray:
        """Boolean mask over the vocabulary for the next token."""
        m = self._masks
        if self.stage == "node":
            mask = np.zeros(len(self.v), dtype=bool)
            n = max(self.expression_size, 1)
            mask[self.v.index0:self.v.index0 + n] = True
            return mask
        if self.stage == "op":
            return m["root"] if self.expression_size == 0 else m["grow"]
        if self.stage == "operand":
            if self.float_pos == 1:
                return m["mantissa"]
            if self.float_pos == 2:
                return m["exponent"]
            mask = m["leaf"][self.n_features].copy()
            # An operator needs room for itself and at least one node per open slot: a unary one
            # keeps the open slots, a binary one adds one.
            if self.operand_nodes + self.need + 1 <= self.max_operand:
                mask |= m["unary_operator"]
            if self.operand_nodes + self.need + 2 <= self.max_operand:
                mask |= m["binary_operator"]
            return mask
        mask = np.zeros(len(self.v), dtype=bool)
        mask[self.v.eos] = True
        return mask

    def advance(self, token: int) -> None:
        """Consume ``token`` (assumed allowed)."""
        if self.stage == "node":
            self.stage = "op"
        elif self.stage == "op":
            word = self.v.words[token]
            if word in UNARY:
                self.stage = "eos"
            else:
                self.stage, self.need = "operand", 1
        elif self.stage == "operand":
            if self.float_pos == 1:
                self.float_pos = 2
                return
            if self.float_pos == 2:
                self.float_pos = 0
                self._close_slot(0)
                return
            if token in (self.v.plus, self.v.minus):
                self.float_pos = 1
                return
            self._close_slot(arity(self.v.words[token]))
        elif self.stage == "eos":
            self.stage = "done"

    def _close_slot(self, children: int) -> None:
        self.operand_nodes += 1
        self.need += children - 1
        if self.need == 0:
            self.stage = "eos"


@lru_cache(maxsize=4)
def _grammar_masks(vocab: Vocabulary) -> dict:
    size = len(vocab)

    def mask_of(words) -> np.ndarray:
        mask = np.zeros(size, dtype=bool)
        for w in words:
            mask[vocab.ids[w]] = True
        return mask

    mantissa = np.zeros(size, dtype=bool)
    mantissa[vocab.mantissa0:vocab.mantissa0 + MAX_MANTISSA + 1] = True
    exponent = np.zeros(size, dtype=bool)
    exponent[vocab.exponent0:vocab.exponent0 + 2 * MAX_EXPONENT + 1] = True
    leaf = {d: mask_of(["+", "-"] + [variable_symbol(i) for i in range(d)]) for d in range(MAX_VARIABLES + 1)}
    return {
        "root": mask_of(["root"]),
        "grow": mask_of([op for op in MUTATION_OPERATORS if op != "root"]),
        "mantissa": mantissa,
        "exponent": exponent,
        "leaf": leaf,
        "unary_operator": mask_of(list(UNARY)),
        "binary_operator": mask_of(list(BINARY)),
    }

