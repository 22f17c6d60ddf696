"""The learned policy: the semantic policy's proposals, re-weighted by a prior learned from
dgsr's own searches, and optionally a learned value (the paper's critic) for new nodes.

The semantic policy proposes K mutations as always; :func:`~dgsr.policies.learned.features.proposal_features`
describes each, and the prior net turns the descriptions into PUCT's prior (a softmax over the K).
With its starting weights the prior is exactly the semantic one. The value net, when used
(``use_value``), scores new nodes from their accuracy on the trial's scoring rows, size and
the same data descriptors.

Expert iteration (Section 3.2 of the paper): after each trial the search hands the policy its
record (:meth:`LearnedPriorPolicy.learn`); the policy labels the expansions on the path to the
trial's best expression and the nodes' values. ``record=True`` keeps these examples for offline
training (``python -m dgsr.bench.train_prior``); ``online=True`` updates the weights at once, so
a run over many datasets (``dgsr search --policy learned``) adapts as it goes, and with
``checkpoint`` writes them after every update.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from dgsr.core.expression import Expression
from dgsr.policies.learned.features import describe_data, node_features, proposal_features
from dgsr.policies.learned.network import Adam
from dgsr.policies.learned.training import Examples, train, trial_examples, value_sample
from dgsr.policies.learned.weights import SHIPPED, LearnedWeights, load_weights, save_weights
from dgsr.policies.semantic.policy import SemanticContext, SemanticPolicy, match_priors
from dgsr.search.policy import Proposal

__all__ = ["LearnedContext", "LearnedPriorPolicy"]

_REPLAY_GROUPS, _REPLAY_VALUES = 256, 1024  # the online update's window of recent examples


@dataclass
class LearnedContext(SemanticContext):
    """The semantic context plus the data's descriptors, the trial's search state and (when
    learning) its expansions' features by expression."""

    data: Any = None
    expansions: int = 0
    best_match: float = float("-inf")
    groups: dict = field(default_factory=dict)


class LearnedPriorPolicy(SemanticPolicy):
    """:class:`SemanticPolicy` with a learned prior (and optionally value) over its proposals.

    Parameters
    ----------
    weights:
        A :class:`~dgsr.policies.learned.weights.LearnedWeights`, a path to a weights file, or
        None for the shipped file.
    use_value:
        Value new nodes with the learned value net (the paper's critic) rather than their accuracy.
    online:
        Update the weights after every trial from that trial (expert iteration while searching).
    record:
        Keep every trial's examples in :attr:`examples` (for offline training).
    checkpoint:
        With ``online``, write the weights to this path after every update.
    online_epochs, online_lr:
        Passes over the replay window per update, and Adam's step size.
    **semantic_options:
        The :class:`SemanticPolicy` arguments.
    """

    def __init__(self, weights: LearnedWeights | str | os.PathLike | None = None, *, use_value: bool = False,
                 online: bool = False, record: bool = False, checkpoint: str | os.PathLike | None = None,
                 online_epochs: int = 2, online_lr: float = 0.003, **semantic_options: Any):
        super().__init__(**semantic_options)
        self.weights = weights if isinstance(weights, LearnedWeights) else load_weights(weights or SHIPPED)
        if use_value and self.weights.value is None:
            raise ValueError("use_value=True needs weights with a value net; these have none")
        self.use_value = use_value
        self.online, self.record = online, record
        self.checkpoint = checkpoint
        self.online_epochs, self.online_lr = online_epochs, online_lr
        self.examples = Examples()
        self.updates = 0
        self._optimizers: tuple[Adam, Adam | None] | None = None

    @property
    def has_critic(self) -> bool:  # type: ignore[override]
        return self.use_value

    @property
    def learns(self) -> bool:
        """Whether the search should hand this policy its trial records (:meth:`learn`)."""
        return self.online or self.record

    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> LearnedContext:
        base = super().prepare(X, y, rng)
        context = LearnedContext(**{f.name: getattr(base, f.name) for f in fields(base)})
        context.data = describe_data(base.columns, base.y, len(y))
        return context

    def propose(self, context: LearnedContext, expression: Expression, k: int,  # type: ignore[override]
                rng: np.random.Generator) -> list[Proposal]:
        """The semantic policy's proposals with the learned prior."""
        found = self.scored_proposals(context, expression, k, rng)
        if not found:
            return []
        semantic = match_priors(np.array([c.match for c in found]), self.temperature)
        F = proposal_features(expression, found, semantic, self.max_size, context.data,
                              (context.expansions, context.best_match))
        context.expansions += 1
        matches = [c.match for c in found if not c.explore and np.isfinite(c.match)]
        if matches:
            context.best_match = max(context.best_match, max(matches))
        if self.learns:
            context.groups.setdefault(expression.key(), []).append((F, [c.mutation for c in found]))
        priors = match_priors(self.weights.prior.score(F), 1.0)  # the softmax of the net's scores
        return [Proposal(c.mutation, p, c.child) for c, p in zip(found, priors)]

    def value(self, context: LearnedContext, expressions: Sequence[Expression]) -> np.ndarray:  # type: ignore[override]
        """The learned value in [0, 1] (NaN for all when ``use_value`` is off)."""
        if not self.use_value or self.weights.value is None:
            return np.full(len(expressions), np.nan)
        G = node_features(expressions, context.columns, context.y, context.data,
                          (context.expansions, context.best_match))
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-np.clip(self.weights.value.score(G), -30, 30)))

    def learn(self, context: LearnedContext, record: Any) -> None:
        """Take a finished trial's record: keep its examples, and (``online``) update the weights."""
        targets = [record.critic_targets[i] for i in value_sample(len(record.critic_targets))]
        value_rows = node_features([e for e, _ in targets], context.columns, context.y, context.data,
                                   (context.expansions, context.best_match)) if targets else None
        found = trial_examples(context.groups, record.top_paths, value_rows, [t for _, t in targets])
        context.groups.clear()
        self.examples.extend(found)
        if self.online and found.groups:
            self._update()
        if not self.record:  # online only: the replay window is all it needs
            self.examples = self.examples.tail(_REPLAY_GROUPS, _REPLAY_VALUES)

    def _update(self) -> None:
        if self._optimizers is None:
            value = self.weights.value
            self._optimizers = (Adam(self.weights.prior, self.online_lr),
                                Adam(value, self.online_lr) if value is not None else None)
        window = self.examples.tail(_REPLAY_GROUPS, _REPLAY_VALUES)
        train(self.weights, window, epochs=self.online_epochs, seed=self.updates, optimizers=self._optimizers)
        self.updates += 1
        self.weights.info = {**self.weights.info, "online_updates": int(self.weights.info.get("online_updates", 0)) + 1}
        if self.checkpoint is not None:
            save_weights(self.checkpoint, self.weights)
