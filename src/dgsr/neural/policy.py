"""The neural mutation policy and critic behind the :class:`dgsr.search.policy.Policy` seam.

* ``prepare`` samples at most ``n_points`` rows and encodes them ONCE per trial; every expansion
  of the trial reuses that memory. This departs from the paper, which samples a new subset of
  points at each expansion: on a CPU the point encoder would otherwise dominate the cost of an
  expansion (see docs/notes/policy_bench.md). It also draws the trial's decoding temperature and
  length penalty from the paper's ranges (Appendix E.3) unless fixed values are given.
* ``propose`` samples K actions in one batch (:func:`dgsr.neural.sampling.sample_mutations`); priors
  are the distinct valid mutations' normalised (length-penalised) sequence probabilities.
* ``value`` runs the critic on a batch of expressions.

:class:`RerankPolicy` is the other way to use the network: another policy (the uniform one, or a
data-aimed one) proposes a longer list of candidates and the network scores them all in ONE
batched teacher-forced pass (:func:`dgsr.neural.sampling.score_mutations`), keeping the K it prefers:
a neural prior over cheap candidates, several times faster per expansion than decoding K samples
token by token.

No global torch state is changed: inference runs under ``torch.inference_mode`` with torch's
thread count set for the call (``num_threads``, default 1) and restored after it.
"""

from __future__ import annotations

import os
from collections import Counter, OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dgsr.core.expression import Expression
from dgsr.core.operators import MAX_VARIABLES, resolve_operators
from dgsr.neural.checkpoint import load_model
from dgsr.neural.model import PolicyModel
from dgsr.neural.sampling import (
    expression_ids,
    operator_token_keep,
    points_ids,
    sample_mutations,
    score_mutations,
)
from dgsr.runtime.threads import torch_threads
from dgsr.search.policy import Proposal

#: The shipped default weights (CONTRACTS §6).
WEIGHTS_DIR = Path(__file__).parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "dgsr-small.safetensors"
_VALUE_BATCH = 64  # expressions per critic forward pass
_ENCODING_CACHE = 4096  # cached expression encodings per trial (~25 KB each at d=128)


@dataclass
class NeuralContext:
    """Per-trial state: the encoded points and the trial's decoding settings and counters."""

    memory: torch.Tensor  # [1, P, d]
    n_features: int
    temperature: float
    length_penalty: float
    generator: torch.Generator
    stats: Counter = field(default_factory=Counter)  # sampled / valid / rejected:<reason> / ...
    #: expression encodings [1, T, d] from the critic pass, reused when that node is expanded
    encodings: OrderedDict = field(default_factory=OrderedDict)


def _draw(value: float | tuple[float, float], rng: np.random.Generator) -> float:
    if isinstance(value, tuple):
        return float(rng.uniform(value[0], value[1]))
    return float(value)


class NeuralPolicy:
    """Transformer mutation policy M_theta with critic C_psi (implements :class:`dgsr.search.policy.Policy`).

    Parameters
    ----------
    model:
        A :class:`~dgsr.neural.model.PolicyModel` (put in eval mode).
    device:
        Torch device for inference.
    temperature, length_penalty:
        Decoding settings: a number, or a ``(low, high)`` range drawn uniformly per trial
        (defaults: the paper's ranges, Appendix E.3).
    n_points:
        Rows encoded per trial (the model was trained on at most 100).
    num_threads:
        Torch threads during policy calls, restored afterwards (default 1: an expansion is a
        string of small matrix products that a second thread only slows down, and CONTRACTS §2
        compares methods at one thread each); None leaves torch's setting alone.
    rule_mask:
        Mask tokens that would break the nesting rule while decoding (no sample wasted on a
        mutation the rules reject); False samples from the grammar only, as the paper does.
    mantissa_digits:
        Significant digits of sampled constants (4 = every mantissa token; 3, the default, is
        ten times cheaper per constant and loses nothing the search's constant fitting needs).
    use_critic:
        Node values from the critic head (the paper). False makes the search score new nodes by
        their accuracy instead (:func:`dgsr.search.mcts.accuracy_value`), as it does for a policy
        without a critic: the right choice while the critic has only been pre-trained (it learned
        "on a dismantling path or not", which says little about closeness to the data's law)
        and not yet refined by search (``dgsr search`` / ``finetune=True``).
    operators:
        The Table 1 operators it may sample (None: all): the others' tokens are masked while
        decoding (:func:`dgsr.neural.sampling.operator_token_keep`).
    """

    has_critic = True
    #: Variables its tokens name (x0..x9): the estimator pre-selects this many columns of wider data.
    max_variables = MAX_VARIABLES

    def __init__(self, model: PolicyModel, *, device: str | torch.device = "cpu",
                 temperature: float | tuple[float, float] = (0.5, 1.0),
                 length_penalty: float | tuple[float, float] = (0.0, 1.2), n_points: int = 100,
                 num_threads: int | None = 1, rule_mask: bool = True, mantissa_digits: int = 3,
                 use_critic: bool = True, info: dict | None = None,
                 operators: Collection[str] | None = None):
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.temperature = temperature
        self.length_penalty = length_penalty
        self.n_points = min(n_points, model.config.max_points)
        self.num_threads = num_threads
        self.rule_mask = rule_mask
        self.mantissa_digits = mantissa_digits
        self.has_critic = bool(use_critic)
        self.info = dict(info or {})
        self.operators = resolve_operators(list(operators)) if operators is not None else None
        self._token_keep = operator_token_keep(self.operators)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, device: str = "cpu", **kwargs) -> NeuralPolicy:
        """A policy from a safetensors model file (config in its metadata; checksum checked)."""
        model, info = load_model(path, device=device)
        return cls(model, device=device, info=info, **kwargs)

    @classmethod
    def from_pretrained(cls, device: str = "cpu", **kwargs) -> NeuralPolicy:
        """The shipped default weights (``dgsr/neural/weights/dgsr-small.safetensors``); no network."""
        if not DEFAULT_WEIGHTS.is_file():
            raise FileNotFoundError(f"the shipped policy weights are missing: {DEFAULT_WEIGHTS}")
        return cls.from_checkpoint(DEFAULT_WEIGHTS, device=device, **kwargs)

    # ------------------------------------------------------------------ Policy protocol
    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> NeuralContext:
        """Encode (a random subset of at most ``n_points``) rows once for the whole trial."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.ndim != 2 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
            raise ValueError(f"X must be [n, D] and y [n] with n > 0, got {X.shape} and {y.shape}")
        if X.shape[1] > MAX_VARIABLES:
            raise ValueError(f"the neural policy handles at most {MAX_VARIABLES} features, got {X.shape[1]} "
                             "(select features first)")
        if X.shape[0] > self.n_points:
            rows = np.sort(rng.choice(X.shape[0], self.n_points, replace=False))
            X, y = X[rows], y[rows]
        seed = int(rng.integers(2**62))
        with torch_threads(self.num_threads), torch.inference_mode():
            memory = self.model.encode_points(points_ids(X, y, self.device))
        return NeuralContext(memory=memory, n_features=X.shape[1], temperature=_draw(self.temperature, rng),
                             length_penalty=_draw(self.length_penalty, rng),
                             generator=torch.Generator(device=self.device).manual_seed(seed))

    def propose(self, context: NeuralContext, expression: Expression, k: int,
                rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` distinct valid mutations of ``expression`` with normalised priors."""
        if k <= 0:
            return []
        with torch_threads(self.num_threads):
            result = sample_mutations(self.model, context.memory, expression, k=k, n_features=context.n_features,
                                      temperature=context.temperature, length_penalty=context.length_penalty,
                                      generator=context.generator, rule_mask=self.rule_mask,
                                      encoded=context.encodings.pop(expression.key(), None),
                                      mantissa_digits=self.mantissa_digits, token_keep=self._token_keep)
        s = context.stats
        s["expansions"] += 1
        s["sampled"] += result.n_sampled
        s["valid"] += result.n_valid
        s["distinct"] += len(result.samples)
        s["decode_failures"] += result.n_decode_failures
        for reason, n in result.rejected.items():
            s[f"rejected:{reason}"] += n
        return [Proposal(sample.mutation, float(p)) for sample, p in zip(result.samples, result.priors)]

    def value(self, context: NeuralContext, expressions: Sequence[Expression]) -> np.ndarray:
        """Critic values in [0, 1], shape [len(expressions)]."""
        out = np.empty(len(expressions))
        with torch_threads(self.num_threads), torch.inference_mode():
            for start in range(0, len(expressions), _VALUE_BATCH):
                chunk = list(expressions[start:start + _VALUE_BATCH])
                tokens = expression_ids(chunk, self.device)
                memory = context.memory.expand(len(chunk), -1, -1)
                h = self.model.encode_expression(tokens, memory)
                values = torch.sigmoid(self.model.value(h, tokens).float())
                out[start:start + len(chunk)] = values.cpu().numpy()
                lengths = (tokens != self.model.pad).sum(1).tolist()
                for i, expr in enumerate(chunk):  # padding does not change the real positions
                    context.encodings[expr.key()] = h[i:i + 1, :lengths[i]].clone()
                while len(context.encodings) > _ENCODING_CACHE:
                    context.encodings.popitem(last=False)
        return np.nan_to_num(out, nan=0.0, posinf=1.0, neginf=0.0)


@dataclass
class RerankContext:
    """Per-trial state of :class:`RerankPolicy`: the network's context and the source policy's."""

    neural: NeuralContext
    source: Any


class RerankPolicy:
    """A neural prior over another policy's candidates (implements :class:`dgsr.search.policy.Policy`).

    Each expansion asks ``source`` for ``n_candidates`` distinct mutations, scores them with the
    network in one batched pass (log-probability, length-penalised as in sampling), and keeps
    ``k`` of them: a Gumbel top-k draw at the trial's temperature (sampling without replacement
    in proportion to ``p ** (1 / temperature)``; greedy at temperature 0), with ``p`` the network's
    probability times the source's prior (``source_weight``). Priors are the kept candidates'
    normalised scores. Node values come from ``source`` (NaN for the uniform
    policy: the search then scores nodes by accuracy).

    Parameters
    ----------
    neural:
        The :class:`NeuralPolicy` whose model scores (its temperature, length penalty, point
        subset and thread settings are used).
    source:
        The candidate policy, e.g. :class:`dgsr.policies.random.RandomPolicy` or a data-aimed one.
    n_candidates:
        Candidates asked of ``source`` per expansion (at least ``k``).
    max_tokens:
        Score only each action's first tokens (None: all; see :func:`dgsr.neural.sampling.score_mutations`).
    source_weight:
        Weight of the source's own log-prior added to the network's score (1: the product of the
        two distributions; 0: the network alone). A uniform source's prior changes nothing.
    """

    def __init__(self, neural: NeuralPolicy, source: Any, n_candidates: int = 64, max_tokens: int | None = None,
                 source_weight: float = 1.0):
        self.neural = neural
        self.source = source
        self.n_candidates = int(n_candidates)
        self.max_tokens = max_tokens
        self.source_weight = float(source_weight)
        self.has_critic = bool(getattr(source, "has_critic", False))
        self.max_variables = MAX_VARIABLES

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> RerankContext:
        return RerankContext(self.neural.prepare(X, y, rng), self.source.prepare(X, y, rng))

    def propose(self, context: RerankContext, expression: Expression, k: int,
                rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` of the source's candidates, chosen and weighted by the network."""
        if k <= 0:
            return []
        candidates = self.source.propose(context.source, expression, max(self.n_candidates, k), rng)
        if not candidates:
            return []
        ctx = context.neural
        with torch_threads(self.neural.num_threads):
            logp, lengths = score_mutations(self.neural.model, ctx.memory, expression,
                                            [c.mutation for c in candidates],
                                            encoded=ctx.encodings.pop(expression.key(), None),
                                            max_tokens=self.max_tokens)
        scores = logp / np.maximum(lengths, 1) ** ctx.length_penalty
        if self.source_weight:  # a product of the two policies' opinions (uniform priors change nothing)
            source = np.array([c.prior for c in candidates], dtype=float)
            with np.errstate(divide="ignore"):
                scores = scores + self.source_weight * np.log(np.clip(source, 0.0, None))
        scores = np.where(np.isfinite(scores), scores, -1e30)
        if ctx.temperature > 0:
            keys = scores / ctx.temperature + rng.gumbel(size=len(scores))
        else:
            keys = scores
        chosen = np.argsort(-keys, kind="stable")[:k]
        w = np.exp(scores[chosen] - scores[chosen].max())
        priors = w / w.sum()
        ctx.stats["expansions"] += 1
        ctx.stats["candidates"] += len(candidates)
        return [Proposal(candidates[i].mutation, float(p)) for i, p in zip(chosen, priors)]

    def value(self, context: RerankContext, expressions: Sequence[Expression]) -> np.ndarray:
        """The source policy's values (NaN from a policy without a critic)."""
        return np.asarray(self.source.value(context.source, expressions), dtype=float)
