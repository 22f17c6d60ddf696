"""Expert iteration's learning step for the learned prior and value (Section 3.2 of the paper).

The examples come from dgsr's own trials (:func:`trial_examples`): each expansion on the path to
a trial's best expression is a *group* (its proposals' features) whose label marks the
proposal that was taken on that path; every node with a critic target (1 on a path to a
solution, else its mean value, :class:`~dgsr.search.results.TrialRecord`) is a *value* example.
:func:`train` fits both nets to them, deterministically for a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgsr.policies.learned.features import NODE_FEATURES, PROPOSAL_FEATURES
from dgsr.policies.learned.network import Adam, ScoreNet, listwise_loss, value_loss
from dgsr.policies.learned.weights import LearnedWeights

__all__ = ["Examples", "initial_weights", "train", "trial_examples", "value_sample"]

HIDDEN = 16  # hidden units of both nets
_MAX_VALUE_EXAMPLES = 64  # per trial, evenly spaced over its targets (a tree holds thousands)


@dataclass
class Examples:
    """Labelled groups for the prior and (features, target) rows for the value."""

    groups: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    value_features: list[np.ndarray] = field(default_factory=list)
    value_targets: list[float] = field(default_factory=list)

    def extend(self, other: Examples) -> None:
        self.groups.extend(other.groups)
        self.value_features.extend(other.value_features)
        self.value_targets.extend(other.value_targets)

    def __len__(self) -> int:
        return len(self.groups) + len(self.value_targets)

    def tail(self, groups: int, values: int) -> Examples:
        """The last ``groups`` groups and ``values`` value rows (a replay window)."""
        return Examples(self.groups[-groups:] if groups else [], self.value_features[-values:] if values else [],
                        self.value_targets[-values:] if values else [])


def trial_examples(groups: dict[tuple, list[tuple[np.ndarray, list]]], paths: Sequence[Sequence],
                   value_rows: np.ndarray | None, value_targets: Sequence[float]) -> Examples:
    """A trial's examples: ``groups`` maps an expanded expression's key to its expansions
    (features, mutations); ``paths`` are ``(state, mutation)`` pairs down to the trial's best
    expressions, and every expansion of a state on them whose proposals include a mutation taken
    there is a group, those mutations its labels; ``value_rows`` [m, d] are the node features of
    the ``value_targets`` (:func:`value_sample` picks which)."""
    out = Examples()
    taken: dict[tuple, list] = {}
    for path in paths:
        for state, mutation in path:
            taken.setdefault(state.key(), []).append(mutation)
    for key, mutations_taken in taken.items():
        for features, mutations in groups.get(key, ()):
            labels = np.array([m in mutations_taken for m in mutations], dtype=np.float64)
            if labels.any() and not labels.all():
                out.groups.append((features, labels))
    if value_rows is not None and len(value_targets):
        out.value_features.extend(value_rows)
        out.value_targets.extend(float(t) for t in value_targets)
    return out


def value_sample(n: int) -> np.ndarray:
    """Which of a trial's ``n`` critic targets become value examples: at most 64, evenly spaced
    (a tree holds thousands, and their features cost an evaluation each)."""
    return np.unique(np.linspace(0, n - 1, min(n, _MAX_VALUE_EXAMPLES)).astype(int)) if n else np.zeros(0, int)


def initial_weights(seed: int = 0, hidden: int = HIDDEN) -> LearnedWeights:
    """The starting point of training: a prior equal to the semantic policy's, and a value that
    is a sigmoid of the node's accuracy."""
    rng = np.random.default_rng(seed)
    start = np.zeros(len(PROPOSAL_FEATURES))
    start[PROPOSAL_FEATURES.index("semantic_log_prior")] = 1.0
    value_start = np.zeros(len(NODE_FEATURES))
    value_start[NODE_FEATURES.index("accuracy")] = 6.0
    value = ScoreNet.initial(len(NODE_FEATURES), hidden, rng, value_start)
    value.c = -3.0
    return LearnedWeights(ScoreNet.initial(len(PROPOSAL_FEATURES), hidden, rng, start), value,
                          {"trained": "not yet: the semantic prior"})


def train(weights: LearnedWeights, examples: Examples, *, epochs: int = 10, batch: int = 64, lr: float = 0.01,
          l2: float = 1e-3, seed: int = 0, optimizers: tuple[Adam, Adam] | None = None) -> dict[str, Any]:
    """Fit ``weights`` (in place) to ``examples`` by minibatch Adam; deterministic for ``seed``.

    ``optimizers``: the prior's and value's Adam states to continue (online learning keeps them
    between updates); new ones otherwise. Returns the losses before and after, and the counts."""
    rng = np.random.default_rng(seed)
    prior_opt, value_opt = optimizers or (Adam(weights.prior, lr), Adam(weights.value, lr) if weights.value else None)
    report: dict[str, Any] = {"groups": len(examples.groups), "value_examples": len(examples.value_targets)}
    groups = examples.groups
    if groups:
        report["prior_loss_before"] = listwise_loss(weights.prior, groups)[0]
        for _ in range(epochs):
            order = rng.permutation(len(groups))
            for start in range(0, len(order), batch):
                _, F, d_score = listwise_loss(weights.prior, [groups[i] for i in order[start:start + batch]])
                prior_opt.step(weights.prior, weights.prior.gradient(F, d_score), l2)
        report["prior_loss_after"] = listwise_loss(weights.prior, groups)[0]
    if weights.value is not None and value_opt is not None and examples.value_targets:
        G, t = np.array(examples.value_features), np.array(examples.value_targets)
        report["value_loss_before"] = value_loss(weights.value, G, t)[0]
        for _ in range(epochs):
            order = rng.permutation(len(t))
            for start in range(0, len(order), batch * 4):
                rows = order[start:start + batch * 4]
                _, d_score = value_loss(weights.value, G[rows], t[rows])
                value_opt.step(weights.value, weights.value.gradient(G[rows], d_score), l2)
        report["value_loss_after"] = value_loss(weights.value, G, t)[0]
    return report
