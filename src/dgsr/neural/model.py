"""The mutation policy M_theta and critic C_psi (Sections 3.1, 3.3 and Appendix C of the paper).

An encoder-decoder transformer in three parts (pre-LayerNorm blocks, as nanoGPT):

* **point encoder** (``ModelConfig.encoder``), whose output ``memory`` [B, M, d] depends only on
  the dataset, so :mod:`dgsr.neural.policy` computes it once per trial and reuses it for every
  expansion (a documented departure: the paper re-encodes a fresh point subset at each expansion):

  - ``"variables"`` (the default for new models; a departure, see docs/notes/design_history.md): ONE memory
    token per variable plus one for y. The values are decoded from the point tokens; a shared MLP
    reads each point's ``(x_i, y)`` pair (rank-normalised, standardised and log-magnitude
    features, all of order 1), its outputs are averaged over the points, and per-column
    statistics (scale, centre, sign) are added; y's token does the same with y alone. Then
    self-attention over the 11 tokens. It learns the x-y pairing in a few hundred CPU steps, and
    11 memory tokens instead of 100 make every expansion cheaper.
  - ``"points"`` (the paper, for GPU runs): each data point ``(x, y)`` is ONE token (the E2E point
    embedder: the ``POINT_WIDTH`` float tokens of a point are embedded, concatenated and
    projected), followed by self-attention over the points.
* **expression encoder**: the current expression's prefix tokens, self-attention plus
  cross-attention to the point memory -> ``h`` [B, T, d].
* **decoder**: the action ``I<node> <op> [B] <eos>`` token by token, causal self-attention plus
  cross-attention to ``[memory; h]``, with a KV cache for sampling (:mod:`dgsr.neural.sampling`).
* **critic**: a value in [0, 1] from the masked mean of ``h`` (weights shared with the policy,
  Section 3.1).

Numeric inputs enter through layers with PyTorch's default initialisation: with the transformer's
std-0.02 initialisation the first GELU is nearly linear, each point's embedding is nearly a sum
of one term per column, and its mean over the points depends only on each column's marginal, so
the gradient that would make the encoder read how y depends on x starts near zero (a saddle;
docs/notes/design_history.md). Mantissa and exponent embeddings start from a smooth sinusoidal code of the
number they stand for, so that neighbouring values start close (10,000 mantissa rows are too
many to learn from scratch in a CPU-sized training run).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from dgsr.core.operators import TABLE_ONE
from dgsr.neural.model_config import SYMBOLS, ModelConfig
from dgsr.neural.numeric_features import (
    N_COLUMN_STATS,
    N_LEGENDRE,
    N_PAIR_FEATURES,
    N_POINT_FEATURES,
    column_features,
    legendre_basis,
    point_features,
)
from dgsr.neural.tokens import MAX_EXPONENT, MAX_MANTISSA, MAX_VARIABLES, POINT_WIDTH, vocabulary


class _Attention(nn.Module):
    """Multi-head attention with separate query and key/value inputs; K/V can be precomputed."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    def split(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, d] -> [B, H, T, d/H]
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def keys_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = self.kv(x).chunk(2, dim=-1)
        return self.split(k), self.split(v)

    def attend(self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               mask: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
        """``x`` [B, T, d] attends to ``k, v`` [B, H, S, d/H]; ``mask`` [B, 1, T|1, S] True = keep."""
        q = self.split(self.q(x))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
        b, _, t, _ = y.shape
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class _Block(nn.Module):
    """Pre-LN block: self-attention, optional cross-attention, feed-forward."""

    def __init__(self, d: int, heads: int, ff_mult: int, cross: bool, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.self_attn = _Attention(d, heads)
        self.cross = cross
        if cross:
            self.ln2 = nn.LayerNorm(d)
            self.cross_attn = _Attention(d, heads)
        self.ln3 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, ff_mult * d), nn.GELU(), nn.Linear(ff_mult * d, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, self_mask: torch.Tensor | None = None, causal: bool = False,
                mem_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
                mem_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.ln1(x)
        k, v = self.self_attn.keys_values(h)
        x = x + self.drop(self.self_attn.attend(h, k, v, self_mask, causal))
        if self.cross:
            x = x + self.drop(self.cross_attn.attend(self.ln2(x), *mem_kv, mem_mask))
        return x + self.drop(self.ff(self.ln3(x)))

    def step(self, x: torch.Tensor, cache: dict, mem_kv: tuple[torch.Tensor, torch.Tensor],
             mem_mask: torch.Tensor | None) -> torch.Tensor:
        """One decoding step: ``x`` [B, 1, d]; appends this step's keys/values to ``cache``."""
        h = self.ln1(x)
        k, v = self.self_attn.keys_values(h)
        if "k" in cache:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        cache["k"], cache["v"] = k, v
        x = x + self.self_attn.attend(h, k, v)
        x = x + self.cross_attn.attend(self.ln2(x), *mem_kv, mem_mask)
        return x + self.ff(self.ln3(x))


def _smooth_rows(values: torch.Tensor, dim: int, scale: float) -> torch.Tensor:
    """Sinusoidal code [len(values), dim] of scalar ``values`` in [0, 1] (nearby values, nearby rows)."""
    freqs = torch.exp(torch.linspace(0.0, math.log(200.0), dim // 2)) * math.pi
    angles = values[:, None] * freqs[None, :]
    code = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if code.shape[1] < dim:
        code = torch.cat([code, torch.zeros(len(values), dim - code.shape[1])], dim=1)
    return code * scale


def _init_number_rows(emb: nn.Embedding) -> None:
    v = vocabulary()
    dim = emb.weight.shape[1]
    with torch.no_grad():
        m = torch.arange(MAX_MANTISSA + 1, dtype=torch.float32) / (MAX_MANTISSA + 1)
        emb.weight[v.mantissa0:v.mantissa0 + MAX_MANTISSA + 1] = _smooth_rows(m, dim, 0.05)
        e = torch.arange(2 * MAX_EXPONENT + 1, dtype=torch.float32) / (2 * MAX_EXPONENT + 1)
        emb.weight[v.exponent0:v.exponent0 + 2 * MAX_EXPONENT + 1] = _smooth_rows(e, dim, 0.05)


@functools.cache
def _variable_ids() -> tuple[int, ...]:
    """Token ids of x0..x9 (contiguous); looked up on first use, not at import."""
    return tuple(vocabulary().ids[f"x{i}"] for i in range(MAX_VARIABLES))


def _variable_columns(columns: torch.Tensor | slice | None, width: int, device: torch.device
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions within ``columns`` that hold x0..x9, which variable each is)."""
    first, last = _variable_ids()[0], _variable_ids()[-1]
    if columns is None or isinstance(columns, slice):
        start = 0 if columns is None else columns.start
        lo, hi = max(first, start), min(last, start + width - 1)
        ids = torch.arange(lo, max(lo, hi + 1), device=device)
        return ids - start, ids - first
    sel = (columns >= first) & (columns <= last)
    positions = torch.nonzero(sel).squeeze(1)
    return positions, columns[positions] - first


def _masked_mean(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` [B, T, d] over the positions where ``keep`` [B, T] is True -> [B, d]."""
    weight = keep.unsqueeze(-1).to(x.dtype)
    return (x * weight).sum(1) / weight.sum(1).clamp_min(1.0)


class PolicyModel(nn.Module):
    """Point encoder + expression encoder + action decoder + critic head."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        c = self.config = config
        d = c.d_model
        self.pad = vocabulary().pad
        numeric: list[nn.Module] = []  # layers that read numbers: PyTorch's default initialisation
        if c.encoder == "variables":
            # a shared MLP over each point's (x_i, y) features, averaged over the points, then a
            # projection (applied after the mean: the same function, P times cheaper)
            w = c.pair_width
            self.pair_mlp = nn.Sequential(nn.Linear(2 * N_PAIR_FEATURES, w), nn.GELU(), nn.Linear(w, w), nn.GELU())
            self.pair_out = nn.Linear(w, d)
            self.y_mlp = nn.Sequential(nn.Linear(N_PAIR_FEATURES, w), nn.GELU(), nn.Linear(w, w), nn.GELU())
            self.y_out = nn.Linear(w, d)
            self.pair_moments = nn.Linear(N_LEGENDRE ** 2, d)
            self.column_stats = nn.Linear(N_COLUMN_STATS, d)
            self.slot = nn.Embedding(MAX_VARIABLES + 1, d)  # which variable (last: y) a token stands for
            self.absent = nn.Parameter(torch.zeros(d))  # the token of a variable the dataset lacks
            numeric += [self.pair_mlp, self.pair_out, self.pair_moments, self.y_mlp, self.y_out, self.column_stats]
        else:
            # point embedder: 33 float tokens -> ONE token of width d
            self.point_tok = nn.Embedding(c.vocab_size, c.point_token_dim)
            self.point_proj = nn.Sequential(nn.Linear(POINT_WIDTH * c.point_token_dim, d), nn.GELU(),
                                            nn.Linear(d, d))
            if c.point_features:
                self.point_num = nn.Sequential(nn.Linear(N_POINT_FEATURES * (MAX_VARIABLES + 1), d), nn.GELU(),
                                               nn.Linear(d, d))
                numeric.append(self.point_num)
        self.point_blocks = nn.ModuleList(_Block(d, c.n_heads, c.ff_mult, False, c.dropout)
                                          for _ in range(c.point_layers))
        self.point_ln = nn.LayerNorm(d)
        # shared token embedding for expressions and actions (tied with the output layer)
        self.tok = nn.Embedding(c.vocab_size, d)
        self.expr_pos = nn.Embedding(c.max_expression_tokens, d)
        self.expr_blocks = nn.ModuleList(_Block(d, c.n_heads, c.ff_mult, True, c.dropout)
                                         for _ in range(c.expr_layers))
        self.expr_ln = nn.LayerNorm(d)
        self.dec_pos = nn.Embedding(c.max_action_tokens + 1, d)
        self.dec_blocks = nn.ModuleList(_Block(d, c.n_heads, c.ff_mult, True, c.dropout)
                                        for _ in range(c.dec_layers))
        self.dec_ln = nn.LayerNorm(d)
        self.critic = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 1))
        if c.variable_pointer:
            self.pointer = nn.Linear(d, d, bias=False)
        if c.target_symbols:
            self.symbol_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, len(SYMBOLS)))
            if c.encoder == "variables":
                # "is x_i in the ground truth?" read off x_i's own memory token, so that token (which
                # the decoder attends to when it names a variable) learns to say it
                self.symbol_head_variables = nn.Linear(d, 1)
        self.apply(self._init)
        _init_number_rows(self.tok)
        for part in numeric:
            for module in part.modules():
                if isinstance(module, nn.Linear):
                    module.reset_parameters()
        if c.encoder == "variables":
            # of the order of the numeric contributions, so identity and data both show at the start
            nn.init.normal_(self.slot.weight, std=0.2)
            nn.init.normal_(self.absent, std=0.2)
        else:
            _init_number_rows(self.point_tok)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    # ------------------------------------------------------------------ encoders
    def encode_points(self, points: torch.Tensor, point_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``points`` [B, P, POINT_WIDTH] token ids -> memory [B, M, d]; ``point_mask`` [B, P] True = real.

        M = MAX_VARIABLES + 1 (one token per variable, then y) for the ``"variables"`` encoder, P
        for ``"points"``; :meth:`memory_mask` turns ``point_mask`` into the memory's key mask.
        """
        if self.config.encoder == "variables":
            x, mask = self._variable_tokens(points, point_mask), None
        else:
            b, p, w = points.shape
            x = self.point_proj(self.point_tok(points).reshape(b, p, w * self.config.point_token_dim))
            if self.config.point_features:
                x = x + self.point_num(point_features(points, point_mask).to(x.dtype))
            mask = None if point_mask is None else point_mask[:, None, None, :]
        for block in self.point_blocks:
            x = block(x, self_mask=mask)
        return self.point_ln(x)

    def _variable_tokens(self, points: torch.Tensor, point_mask: torch.Tensor | None) -> torch.Tensor:
        """The ``"variables"`` encoder's tokens [B, MAX_VARIABLES + 1, d] before self-attention."""
        per_point, stats, present = column_features(points, point_mask)  # [B, P, C, 3], [B, C, 5], [B, P, C]
        dtype = self.slot.weight.dtype
        per_point, stats = per_point.to(dtype), stats.to(dtype)
        x_feats, y_feats = per_point[:, :, :MAX_VARIABLES], per_point[:, :, MAX_VARIABLES:]
        pairs = torch.cat([x_feats, y_feats.expand_as(x_feats)], dim=-1)  # [B, P, D, 6]
        keep = present[:, :, :MAX_VARIABLES].to(dtype)  # a pair counts where x_i and the point exist
        count = keep.sum(1).clamp_min(1.0)[..., None]  # [B, D, 1]
        pooled = (self.pair_mlp(pairs) * keep[..., None]).sum(1) / count
        # rank co-moments: zero in expectation when y does not depend on x_i, of order 1 when it does,
        # so the pairing is visible from the first step (the MLP's own view of it starts second-order)
        basis_x = legendre_basis(x_feats[..., 0])  # [B, P, D, 3]
        basis_y = legendre_basis(y_feats.expand_as(x_feats)[..., 0])
        moments = torch.einsum("bpda,bpde->bdae", basis_x * keep[..., None], basis_y) / count[..., None]
        y_keep = present[:, :, MAX_VARIABLES:].to(dtype)  # [B, P, 1]
        y_pooled = (self.y_mlp(y_feats) * y_keep[..., None]).sum(1) / y_keep.sum(1).clamp_min(1.0)[..., None]
        x_tokens = (self.pair_out(pooled) + self.pair_moments(moments.flatten(2))
                    + self.column_stats(stats[:, :MAX_VARIABLES]))
        x_tokens = torch.where(present[:, :, :MAX_VARIABLES].any(1)[..., None], x_tokens, self.absent)
        y_token = self.y_out(y_pooled) + self.column_stats(stats[:, MAX_VARIABLES:])
        return torch.cat([x_tokens, y_token], dim=1) + self.slot.weight

    def memory_mask(self, point_mask: torch.Tensor | None) -> torch.Tensor | None:
        """Key mask [B, M] of the memory for the point mask [B, P] it was encoded with (None: all real).

        The ``"variables"`` memory has no padding: a variable the dataset lacks has its own token.
        """
        return point_mask if self.config.encoder == "points" else None

    def encode_expression(self, tokens: torch.Tensor, memory: torch.Tensor,
                          point_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``tokens`` [B, T] (pad-padded) attending to ``memory`` [B, P, d] -> h [B, T, d]."""
        t = tokens.shape[1]
        x = self.tok(tokens) + self.expr_pos(torch.arange(t, device=tokens.device))
        self_mask = (tokens != self.pad)[:, None, None, :]
        point_mask = self.memory_mask(point_mask)
        mem_mask = None if point_mask is None else point_mask[:, None, None, :]
        for block in self.expr_blocks:
            x = block(x, self_mask=self_mask, mem_kv=block.cross_attn.keys_values(memory), mem_mask=mem_mask)
        return self.expr_ln(x)

    def value(self, h: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Critic logits [B] from the masked mean of the expression encoding (sigmoid -> [0, 1])."""
        return self.critic(_masked_mean(h, tokens != self.pad)).squeeze(-1)

    def decoder_memory(self, memory: torch.Tensor, h: torch.Tensor, tokens: torch.Tensor, pad: int,
                       point_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``[memory; h]`` [B, M+T, d] and its key mask [B, 1, 1, M+T] for the decoder."""
        b, p, _ = memory.shape
        point_mask = self.memory_mask(point_mask)
        pm = torch.ones(b, p, dtype=torch.bool, device=memory.device) if point_mask is None else point_mask
        mask = torch.cat([pm, tokens != pad], dim=1)[:, None, None, :]
        return torch.cat([memory, h], dim=1), mask

    # ------------------------------------------------------------------ decoder
    def decode_hidden(self, actions_in: torch.Tensor, mem: torch.Tensor, mem_mask: torch.Tensor,
                      cross: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> torch.Tensor:
        """Teacher-forced final decoder states [B, L, d] for inputs ``actions_in`` [B, L] (from <bos>).

        ``cross`` (from :meth:`cross_kv`, e.g. of one memory expanded over B candidate actions)
        replaces the per-layer keys/values of ``mem``.
        """
        t = actions_in.shape[1]
        x = self.tok(actions_in) + self.dec_pos(torch.arange(t, device=actions_in.device))
        for i, block in enumerate(self.dec_blocks):
            kv = block.cross_attn.keys_values(mem) if cross is None else cross[i]
            x = block(x, causal=True, mem_kv=kv, mem_mask=mem_mask)
        return self.dec_ln(x)

    def decode(self, actions_in: torch.Tensor, mem: torch.Tensor, mem_mask: torch.Tensor,
               keys: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced logits [B, L, V] (the output layer is tied to the token embedding; ``keys``
        from :meth:`variable_keys` add the variable pointer's scores)."""
        hidden = self.decode_hidden(actions_in, mem, mem_mask)
        logits = hidden @ self.tok.weight.T
        if keys is not None:
            logits[..., list(_variable_ids())] += torch.einsum("bld,bkd->blk", hidden, keys)
        return logits

    def output_logits(self, hidden: torch.Tensor, columns: torch.Tensor | slice | None = None,
                      keys: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [N, C] of decoder states ``hidden`` [N, d] over the token ids ``columns`` (ids, a
        slice, or None for the whole vocabulary), with the variable pointer's scores when ``keys``
        ([N, K, d] or [1, K, d]) are given: the one output layer every caller shares."""
        weight = self.tok.weight if columns is None else self.tok.weight[columns]
        return self.add_variable_scores(hidden @ weight.T, hidden, keys, columns)

    # ------------------------------------------------------------------ variable pointer
    def variable_keys(self, memory: torch.Tensor) -> torch.Tensor | None:
        """Pointer keys [B, MAX_VARIABLES, d] of the per-variable memory [B, M, d] (None without a pointer)."""
        if not self.config.variable_pointer:
            return None
        return self.pointer(memory[:, :MAX_VARIABLES])

    @staticmethod
    def add_variable_scores(logits: torch.Tensor, hidden: torch.Tensor, keys: torch.Tensor | None,
                            columns: torch.Tensor | slice | None = None) -> torch.Tensor:
        """``logits`` [N, C] over the token ids ``columns`` (None: the whole vocabulary) plus the
        pointer's score ``hidden . key_k`` on the columns of x0..x9. ``keys`` is [N, K, d], or
        [1, K, d] shared by every row; None leaves ``logits`` unchanged."""
        if keys is None:
            return logits
        positions, variables = _variable_columns(columns, logits.shape[-1], logits.device)
        if len(positions) == 0:
            return logits
        k = keys[:, variables]  # [N or 1, n, d]
        scores = hidden @ k[0].T if k.shape[0] == 1 else torch.einsum("nd,nkd->nk", hidden, k)
        logits = logits.clone()
        logits[:, positions] += scores.to(logits.dtype)
        return logits

    def cross_kv(self, mem: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer cross-attention keys/values of the decoder memory (computed once per expansion)."""
        return [block.cross_attn.keys_values(mem) for block in self.dec_blocks]

    def decode_step(self, token: torch.Tensor, position: int, caches: list[dict],
                    cross: list[tuple[torch.Tensor, torch.Tensor]], mem_mask: torch.Tensor,
                    columns: torch.Tensor | slice | None = None, keys: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, V] of the next token after ``token`` [B] at ``position``; updates ``caches``.

        ``columns`` (ids, or a slice: a view, no copy) restricts the output to those tokens: the grammar
        usually allows a few dozen of the ~10k tokens, and the full projection dominates a step.
        """
        x = self.tok(token)[:, None, :] + self.dec_pos.weight[position]
        for block, cache, kv in zip(self.dec_blocks, caches, cross):
            x = block.step(x, cache, kv, mem_mask)
        return self.output_logits(self.dec_ln(x)[:, 0], columns, keys)

    def forward(self, points: torch.Tensor, expr: torch.Tensor, actions_in: torch.Tensor,
                point_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Training pass: (action logits [B, L, V], critic logits [B])."""
        memory = self.encode_points(points, point_mask)
        h = self.encode_expression(expr, memory, point_mask)
        mem, mem_mask = self.decoder_memory(memory, h, expr, self.pad, point_mask)
        return self.decode(actions_in, mem, mem_mask, self.variable_keys(memory)), self.value(h, expr)

    def symbol_logits(self, memory: torch.Tensor, point_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, len(SYMBOLS)]: does the ground truth contain each operator / variable / a constant?"""
        point_mask = self.memory_mask(point_mask)
        logits = self.symbol_head(memory.mean(1) if point_mask is None else _masked_mean(memory, point_mask))
        if self.config.encoder == "variables":
            first = len(TABLE_ONE)  # SYMBOLS: operators, variables, constant
            per_variable = self.symbol_head_variables(memory[:, :MAX_VARIABLES]).squeeze(-1)
            logits = torch.cat([logits[:, :first], per_variable, logits[:, first + MAX_VARIABLES:]], dim=1)
        return logits

    def n_parameters(self) -> int:
        """Number of scalar parameters."""
        return sum(p.numel() for p in self.parameters())
