"""Batched sampling of K mutations per expansion (Section 3.3, Appendix E.3 of the paper).

The K samples of one expansion decode together as one batch with a KV cache: the decoder memory
(points + expression encoding) is encoded once and its cross-attention keys/values are computed
once and broadcast over the K rows; rows that reach ``<eos>`` leave the batch. Every step is
constrained by :class:`dgsr.neural.tokens.ActionGrammar` (node index in range, ``root`` only on the
empty expression, operand ``B`` well-formed and within the size budget), so decoding failures
are rare; what remains invalid is what the rules of :mod:`dgsr.search.mutations` reject.

Priors: each distinct valid mutation gets ``exp(log p / len**length_penalty)`` normalised over the
distinct valid mutations (``log p`` = the model's constrained log-probability at temperature 1;
``len`` = action length in tokens), as E2E/fairseq rank beams.

Also the tensor helpers that turn expressions and datasets into padded id batches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch

from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, TABLE_ONE, TRANSCENDENTAL, UNARY
from dgsr.neural.model import PolicyModel
from dgsr.neural.tokens import (
    MANTISSA_DIGITS,
    MAX_EXPONENT,
    MAX_MANTISSA,
    ActionGrammar,
    DecodeFailure,
    vocabulary,
)
from dgsr.search.mutations import MAX_SIZE, InvalidMutation, Mutation, apply_mutation


@dataclass(frozen=True)
class SampledMutation:
    """A distinct valid mutation, its result, log-probability and token length."""

    mutation: Mutation
    result: Expression
    logprob: float
    length: int


@dataclass(frozen=True)
class SampleResult:
    """The outcome of one expansion's sampling."""

    samples: list[SampledMutation]
    priors: np.ndarray  # [len(samples)] normalised, sums to 1 (empty when no sample is valid)
    n_sampled: int  # sequences decoded (K)
    n_decode_failures: int  # not a well-formed action (should be 0 with the grammar)
    rejected: Counter = field(default_factory=Counter)  # validity-rule reason -> count
    n_duplicates: int = 0

    @property
    def n_valid(self) -> int:
        """Valid samples, duplicates included (the paper's "valid mutations" rate numerator)."""
        return self.n_sampled - self.n_decode_failures - sum(self.rejected.values())


def expression_ids(expressions: Sequence[Expression], device: torch.device | str = "cpu") -> torch.Tensor:
    """Padded token ids [B, T] of ``expressions`` (the empty expression is ``<empty>``)."""
    v = vocabulary()
    seqs = [v.encode_expression(e) for e in expressions]
    return pad_ids(seqs, v.pad, device)


def pad_ids(seqs: Sequence[Sequence[int]], pad: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Right-padded [B, max len] int64 tensor."""
    width = max((len(s) for s in seqs), default=1)
    out = np.full((len(seqs), max(width, 1)), pad, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return torch.from_numpy(out).to(device)


def points_ids(X: np.ndarray, y: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """Point tokens [1, n, POINT_WIDTH] of one dataset (non-finite values encode, see dgsr.neural.tokens)."""
    return torch.from_numpy(vocabulary().encode_points(X, y)).unsqueeze(0).to(device)


@torch.inference_mode()
def sample_mutations(model: PolicyModel, memory: torch.Tensor, expression: Expression, *, k: int,
                     n_features: int, temperature: float = 1.0, length_penalty: float = 1.0,
                     generator: torch.Generator | None = None, max_size: int = MAX_SIZE,
                     rule_mask: bool = True, encoded: torch.Tensor | None = None,
                     mantissa_digits: int = 3, token_keep: np.ndarray | None = None) -> SampleResult:
    """Sample ``k`` actions for ``expression`` given the encoded points ``memory`` [1, P, d].

    ``temperature <= 0`` decodes greedily (all K rows then agree). ``rule_mask`` also masks the
    tokens that would break the nesting rule (a transcendental operator above or below another),
    so no sample is wasted on a mutation the rules reject. ``encoded`` [1, T, d] is the
    expression's encoding when the caller already has it (e.g. from the critic pass).
    ``mantissa_digits`` < 4 samples constants among mantissas with that many significant digits
    only (each standing for its bucket of 4-digit neighbours; the search refits constants): the
    10k-row mantissa block of the output layer is memory-bound and dominated an expansion.
    ``token_keep`` (a boolean vector over the vocabulary) masks the tokens it clears, e.g. the
    operators the user excluded (:func:`operator_token_keep`); a row it would leave without any
    token keeps its grammar's choices (the search rejects what it then samples). Returns the
    distinct valid mutations with priors; invalid and malformed samples are counted, never raised.
    """
    v = vocabulary()
    device = memory.device
    tokens = expression_ids([expression], device)
    h = model.encode_expression(tokens, memory) if encoded is None else encoded
    mem, mem_mask = model.decoder_memory(memory, h, tokens, v.pad)
    keys = model.variable_keys(memory)  # [1, K, d] shared by the rows, or None
    rows = _DecodingRows(model, mem, mem_mask, k)
    budget = max_size - expression.size - 1 if expression.size else max_size
    grammars = [ActionGrammar(v, expression.size, n_features, max_operand=max(budget, 1)) for _ in range(k)]
    rules = [_NestingMask(expression, g) for g in grammars] if rule_mask else None
    out_tokens: list[list[int]] = [[] for _ in range(k)]
    logprobs = np.zeros(k)
    token = torch.full((k,), v.bos, dtype=torch.long, device=device)
    for position in range(model.config.max_action_tokens):
        allowed_np = _allowed_tokens(grammars, rules, rows.active, mantissa_digits, token_keep)  # [A, V]
        cols_np = np.flatnonzero(allowed_np.any(axis=0))  # tokens some row may take
        cols = torch.from_numpy(cols_np).to(device)
        contiguous = cols_np[-1] - cols_np[0] + 1 == len(cols_np)  # mantissa/exponent blocks: a view
        which = slice(int(cols_np[0]), int(cols_np[-1]) + 1) if contiguous else cols
        logits = model.decode_step(token, position, rows.caches, rows.cross, rows.mem_mask, which, keys).float()
        sub = allowed_np[:, cols_np]
        if not sub.all():
            logits = logits.masked_fill(~torch.from_numpy(sub).to(device), float("-inf"))  # [A, C]
        choice, picked = _draw(logits, temperature, generator)
        choice = cols[choice]  # back to token ids
        keep = []
        for j, (row, t) in enumerate(zip(rows.active, choice.cpu().numpy())):
            logprobs[row] += picked[j]
            out_tokens[row].append(int(t))
            if rules is not None:
                rules[row].advance(int(t))
            else:
                grammars[row].advance(int(t))
            if not grammars[row].done:
                keep.append(j)
        if not keep:
            break
        if len(keep) < len(rows.active):
            idx = torch.tensor(keep, device=device)
            rows.narrow(keep, idx)
            choice = choice[idx]
        token = choice
    return _collect(expression, out_tokens, logprobs, length_penalty, max_size)


class _DecodingRows:
    """The decoder state of the rows of a batch still decoding: their indices in the batch, the
    self-attention caches, the cross-attention keys/values (computed once for the shared memory,
    expanded over the rows: no copy) and the memory mask (None: no padding, the fast kernel)."""

    def __init__(self, model: PolicyModel, mem: torch.Tensor, mem_mask: torch.Tensor, k: int):
        self.base = model.cross_kv(mem)  # per layer [1, H, S, d/H]
        # one unpadded expression and (per-variable encoder) unpadded memory: no mask
        self.base_mask = None if bool(mem_mask.all()) else mem_mask
        self.caches: list[dict] = [{} for _ in model.dec_blocks]
        self.active = np.arange(k)  # rows of the original batch still decoding
        self._expand(k)

    def _expand(self, n: int) -> None:
        self.cross = [(kk.expand(n, -1, -1, -1), vv.expand(n, -1, -1, -1)) for kk, vv in self.base]
        self.mem_mask = None if self.base_mask is None else self.base_mask.expand(n, -1, -1, -1)

    def narrow(self, keep: list[int], idx: torch.Tensor) -> None:
        """Keep the rows at positions ``keep`` (``idx``, the same as a tensor) of the active ones."""
        for cache in self.caches:
            cache["k"], cache["v"] = cache["k"][idx], cache["v"][idx]
        self._expand(len(keep))
        self.active = self.active[keep]


def _allowed_tokens(grammars: list[ActionGrammar], rules: list[_NestingMask] | None, active: np.ndarray,
                    mantissa_digits: int, token_keep: np.ndarray | None) -> np.ndarray:
    """The tokens each active row may take next [A, V]: its grammar's, narrowed to coarse
    mantissas, to ``token_keep`` and by the nesting rules, except where that would leave none."""
    allowed_np = np.stack([grammars[i].allowed() for i in active])
    if mantissa_digits < MANTISSA_DIGITS:
        allowed_np &= _coarse_mantissa_keep(mantissa_digits)
    if token_keep is not None:
        restricted = allowed_np & token_keep
        ok = restricted.any(axis=1)
        allowed_np[ok] = restricted[ok]
    if rules is not None:
        for j, row in enumerate(active):
            before = allowed_np[j].copy()
            rules[row].restrict(allowed_np[j])
            if not allowed_np[j].any():
                # the rules leave nothing (e.g. only transcendental operators allowed, below
                # one): keep the grammar's choices, and let the search reject the mutation
                allowed_np[j] = before
    return allowed_np


def _draw(logits: torch.Tensor, temperature: float, generator: torch.Generator | None
          ) -> tuple[torch.Tensor, np.ndarray]:
    """One column per row of ``logits`` [A, C] (sampled at ``temperature``, greedy at 0) and its
    log-probability at temperature 1."""
    logp = torch.log_softmax(logits, dim=-1)
    if temperature > 0:
        # inverse-CDF draw: much faster than torch.multinomial over a 10k-token mantissa block
        cdf = torch.softmax(logits / temperature, dim=-1).cumsum(dim=-1)
        u = torch.rand(len(cdf), 1, generator=generator, device=logits.device).clamp_min(1e-7) * cdf[:, -1:]
        choice = torch.searchsorted(cdf, u).squeeze(1).clamp_max(logits.shape[1] - 1)
    else:
        choice = logits.argmax(dim=-1)
    return choice, logp.gather(1, choice[:, None]).squeeze(1).cpu().numpy()


def operator_token_keep(operators: tuple[str, ...] | None) -> np.ndarray | None:
    """Vocabulary mask clearing the operator tokens (and their ``r``-reversed mutation tokens) not
    in ``operators``; None when every operator is allowed."""
    if operators is None:
        return None
    v = vocabulary()
    keep = np.ones(len(v), dtype=bool)
    for name in UNARY + BINARY:  # the vocabulary's operators (user-defined ones are refused before)
        if name not in operators:
            keep[v.ids[name]] = False
            if "r" + name in v.ids:
                keep[v.ids["r" + name]] = False
    return keep


@torch.inference_mode()
def score_mutations(model: PolicyModel, memory: torch.Tensor, expression: Expression,
                    mutations: Sequence[Mutation], *, encoded: torch.Tensor | None = None,
                    constants: bool = False, max_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The model's log-probabilities of given ``mutations`` of ``expression`` in ONE batched pass.

    Teacher-forced: every candidate action is decoded at once against the shared memory (its
    cross-attention keys/values computed once), instead of K sequential sampling steps; this is
    how the network re-ranks another policy's candidates (:class:`dgsr.neural.policy.RerankPolicy`).
    Each token is normalised within its group (mantissa / exponent / other), as in training.
    Mantissa tokens are left out unless ``constants`` (the search refits constants, and their
    10,000-way softmax would dominate the pass). ``max_tokens`` scores only each action's first
    tokens (node, operator, the operand's start): the decoder is causal, so this is the exact
    probability of that prefix at a fraction of the cost. Returns (log-probabilities [N], tokens
    scored [N]).
    """
    v = vocabulary()
    if not mutations:
        return np.zeros(0), np.zeros(0)
    device = memory.device
    tokens = expression_ids([expression], device)
    h = model.encode_expression(tokens, memory) if encoded is None else encoded
    mem, mem_mask = model.decoder_memory(memory, h, tokens, v.pad)
    actions = pad_ids([([v.bos] + v.encode_action(m))[:None if max_tokens is None else max_tokens + 1]
                       for m in mutations], v.pad, device)  # [N, L+1]
    n = len(mutations)
    cross = [(kk.expand(n, -1, -1, -1), vv.expand(n, -1, -1, -1)) for kk, vv in model.cross_kv(mem)]
    # one expression and (for the per-variable encoder) no padded memory: every key is real, and
    # attention without a mask takes the fast kernel
    mask = None if bool(mem_mask.all()) else mem_mask.expand(n, -1, -1, -1)
    hidden = model.decode_hidden(actions[:, :-1], mem, mask, cross)  # [N, L, d]
    keys = model.variable_keys(memory)
    target = actions[:, 1:]
    groups = _token_groups().to(device)[target]  # 0 mantissa, 1 exponent, 2 other
    logp = torch.zeros(target.shape, dtype=hidden.dtype, device=device)
    for g, cols in enumerate(_group_columns()):
        if g == 0 and not constants:
            continue
        cols = cols.to(device)
        where = (groups == g) & (target != v.pad)
        if not bool(where.any()):
            continue
        logits = model.output_logits(hidden[where], cols, keys if g == 2 else None)  # [n_g, |group|]
        local = torch.searchsorted(cols, target[where])
        logp[where] = torch.log_softmax(logits.float(), dim=-1).gather(1, local[:, None]).squeeze(1)
    scored = (target != v.pad) & ((groups != 0) | constants)
    return logp.sum(1).double().cpu().numpy(), scored.sum(1).cpu().numpy()


def token_groups() -> torch.Tensor:
    """Group of each token id: 0 = mantissa, 1 = exponent, 2 = everything else.

    Under constrained decoding a mantissa step can only emit a mantissa and an exponent step an
    exponent, so the action loss (and :func:`score_mutations`) normalises each target over its own
    group: the same distribution the sampler uses, at a fraction of the cost of a 10k-way softmax.
    """
    v = vocabulary()
    groups = torch.full((len(v),), 2, dtype=torch.long)
    groups[v.mantissa0:v.mantissa0 + MAX_MANTISSA + 1] = 0
    groups[v.exponent0:v.exponent0 + 2 * MAX_EXPONENT + 1] = 1
    return groups


@lru_cache(maxsize=1)
def _token_groups() -> torch.Tensor:
    return token_groups()


@lru_cache(maxsize=1)
def _group_columns() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    groups = _token_groups()
    return tuple(torch.nonzero(groups == g).squeeze(1) for g in range(3))  # ascending token ids


class _NestingMask:
    """The nesting rule as a decoding mask, layered on one row's :class:`ActionGrammar`.

    With ``T`` the transcendental operators: a unary ``T`` mutation is masked at a node that has a
    ``T`` ancestor or a ``T`` inside its subtree; an operand ``B`` may hold a ``T`` operator only if
    the node has no ``T`` ancestor and only outside another ``T`` of ``B`` (a ``T`` opened in ``B``
    at ``need = n`` closes when the grammar's open-slot count falls back to ``n - 1``).
    """

    def __init__(self, expression: Expression, grammar: ActionGrammar):
        self.g = grammar
        self.expression = expression
        self.node = 0
        self.inside_until: int | None = None  # open-slot count at which B's open T subtree closes
        self.ancestor_t = False
        self.t_ids = _transcendental_ids()

    def _above_or_below(self, node: int) -> tuple[bool, bool]:
        e = self.expression
        if e.is_empty:
            return False, False
        ends = e.subtree_ends
        below = any(s in TRANSCENDENTAL for s in e.symbols[node + 1:ends[node]])
        above = any(e.symbols[q] in TRANSCENDENTAL and ends[q] > node for q in range(node))
        return above, below

    def restrict(self, mask: np.ndarray) -> None:
        """Clear, in place, the tokens of ``mask`` that would break the nesting rule."""
        g = self.g
        if g.stage == "op":
            above, below = self._above_or_below(self.node)
            here = not self.expression.is_empty and self.expression.symbols[self.node] in TRANSCENDENTAL
            if above or below or here:
                mask[self.t_ids] = False
        elif g.stage == "operand" and g.float_pos == 0 and (self.ancestor_t or self.inside_until is not None):
            mask[self.t_ids] = False

    def advance(self, token: int) -> None:
        g = self.g
        if g.stage == "node":
            self.node = token - g.v.index0
            self.ancestor_t = False
        elif g.stage == "op":
            above, _ = self._above_or_below(self.node)
            self.ancestor_t = above
        opened = g.stage == "operand" and g.float_pos == 0 and token in self._t_set()
        need_before = g.need
        g.advance(token)
        if opened and self.inside_until is None:
            self.inside_until = need_before - 1
        if self.inside_until is not None and g.need <= self.inside_until:
            self.inside_until = None

    def _t_set(self) -> frozenset:
        return _transcendental_set()


@lru_cache(maxsize=4)
def _coarse_mantissa_keep(digits: int) -> np.ndarray:
    """Vocabulary mask that keeps every token but the mantissas with more than ``digits`` significant digits."""
    v = vocabulary()
    keep = np.ones(len(v), dtype=bool)
    step = 10 ** (MANTISSA_DIGITS - max(digits, 1))
    mantissas = np.arange(MAX_MANTISSA + 1)
    keep[v.mantissa0 + mantissas[mantissas % step != 0]] = False
    return keep


@lru_cache(maxsize=1)
def _transcendental_ids() -> np.ndarray:
    v = vocabulary()
    return np.array(sorted(v.ids[w] for w in TRANSCENDENTAL if w in TABLE_ONE), dtype=np.int64)  # the vocabulary's


@lru_cache(maxsize=1)
def _transcendental_set() -> frozenset:
    return frozenset(int(i) for i in _transcendental_ids())


def _collect(expression: Expression, out_tokens: list[list[int]], logprobs: np.ndarray,
             length_penalty: float, max_size: int) -> SampleResult:
    v = vocabulary()
    failures, duplicates = 0, 0
    rejected: Counter = Counter()
    best: dict[tuple, SampledMutation] = {}
    for seq, lp in zip(out_tokens, logprobs):
        mutation = v.decode_action(seq)
        if isinstance(mutation, DecodeFailure):
            failures += 1
            continue
        try:
            result = apply_mutation(expression, mutation, max_size=max_size)
        except InvalidMutation as err:
            rejected[err.reason] += 1
            continue
        key = (mutation.node, mutation.op, None if mutation.operand is None else mutation.operand.key())
        if key in best:
            duplicates += 1
            continue
        best[key] = SampledMutation(mutation, result, float(lp), len(seq))
    samples = list(best.values())
    if samples:
        scores = np.array([s.logprob / max(s.length, 1) ** length_penalty for s in samples])
        scores = np.where(np.isfinite(scores), scores, -1e30)
        w = np.exp(scores - scores.max())
        priors = w / w.sum()
    else:
        priors = np.zeros(0)
    return SampleResult(samples, priors, len(out_tokens), failures, rejected, duplicates)
