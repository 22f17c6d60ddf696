"""A scorer small enough to run at every expansion: a linear part plus one tanh hidden layer.

``score(f) = a·f + c + v·tanh(W f + b)``. The linear part carries what a linear model can say
(the semantic prior, the match); the hidden layer the interactions between proposal and data
(an operator that helps on noisy data, say). With ``v = 0`` and ``a`` the unit vector of the
semantic log prior, the prior it gives is exactly the semantic policy's, which is where training
starts. Two losses: *listwise*, for the prior (the softmax over one expansion's proposals should
put its mass on the proposals that led to the trial's best expression), and *squared error of a
sigmoid*, for the value. Plain numpy with Adam, deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Adam", "ScoreNet", "listwise_loss", "value_loss"]


@dataclass
class ScoreNet:
    """The parameters: ``a`` [d], ``c`` scalar, ``W`` [h, d], ``b`` [h], ``v`` [h]."""

    a: np.ndarray
    c: float
    W: np.ndarray
    b: np.ndarray
    v: np.ndarray

    @classmethod
    def initial(cls, n_features: int, hidden: int, rng: np.random.Generator,
                start: np.ndarray | None = None) -> ScoreNet:
        """A net whose output is ``start·f`` (zeros when None) at first: ``v = 0``, and ``W``
        small random so that training can move ``v``."""
        a = np.zeros(n_features) if start is None else np.asarray(start, dtype=np.float64).copy()
        W = rng.normal(0.0, 0.3 / np.sqrt(max(n_features, 1)), size=(hidden, n_features))
        return cls(a, 0.0, W, np.zeros(hidden), np.zeros(hidden))

    @property
    def n_features(self) -> int:
        return int(self.a.size)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"a": self.a, "c": np.array([self.c]), "W": self.W, "b": self.b, "v": self.v}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ScoreNet:
        return cls(arrays["a"], float(arrays["c"][0]), arrays["W"], arrays["b"], arrays["v"])

    def score(self, F: np.ndarray) -> np.ndarray:
        """Scores of the rows of ``F`` [n, d]."""
        hidden = np.tanh(F @ self.W.T + self.b)
        return F @ self.a + self.c + hidden @ self.v

    def gradient(self, F: np.ndarray, d_score: np.ndarray) -> dict[str, np.ndarray]:
        """Gradients of a loss with ``d loss / d score = d_score`` [n] with respect to each array."""
        hidden = np.tanh(F @ self.W.T + self.b)
        d_hidden = np.outer(d_score, self.v) * (1.0 - hidden * hidden)
        return {"a": F.T @ d_score, "c": np.array([d_score.sum()]), "W": d_hidden.T @ F,
                "b": d_hidden.sum(axis=0), "v": hidden.T @ d_score}

    def apply(self, steps: dict[str, np.ndarray]) -> None:
        self.a = self.a - steps["a"]
        self.c = float(self.c - steps["c"][0])
        self.W = self.W - steps["W"]
        self.b = self.b - steps["b"]
        self.v = self.v - steps["v"]


def listwise_loss(net: ScoreNet, groups: Sequence[tuple[np.ndarray, np.ndarray]]
                  ) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean over ``groups`` (features [n_i, d], labels [n_i] in {0, 1} with at least one 1) of
    ``-log`` of the softmax mass on the labelled proposals; returns the loss, and the stacked
    features and ``d loss / d score`` for :meth:`ScoreNet.gradient`."""
    F = np.concatenate([g[0] for g in groups])
    scores = net.score(F)
    d_score = np.empty_like(scores)
    loss, start = 0.0, 0
    for features, labels in groups:
        end = start + len(labels)
        s = scores[start:end]
        s = s - s.max()
        p = np.exp(s) / np.exp(s).sum()
        mass = float(p @ labels)
        loss -= np.log(max(mass, 1e-300))
        # d(-log sum_pos p)/ds_j = p_j - [j positive] * p_j / mass
        d_score[start:end] = p - labels * p / max(mass, 1e-300)
        start = end
    n = max(len(groups), 1)
    return loss / n, F, d_score / n


def value_loss(net: ScoreNet, F: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean squared error of ``sigmoid(score)`` against ``targets`` in [0, 1], and ``d loss / d score``."""
    p = 1.0 / (1.0 + np.exp(-np.clip(net.score(F), -30, 30)))
    err = p - targets
    return float(np.mean(err * err)), 2.0 * err * p * (1.0 - p) / max(len(targets), 1)


class Adam:
    """Adam over a :class:`ScoreNet`'s arrays (Kingma and Ba, 2015, the published defaults)."""

    def __init__(self, net: ScoreNet, lr: float = 0.01, beta1: float = 0.9, beta2: float = 0.999):
        self.lr, self.beta1, self.beta2 = lr, beta1, beta2
        self.m = {k: np.zeros_like(v, dtype=np.float64) for k, v in net.arrays().items()}
        self.s = {k: np.zeros_like(v, dtype=np.float64) for k, v in net.arrays().items()}
        self.t = 0

    def step(self, net: ScoreNet, grads: dict[str, np.ndarray], l2: float = 0.0) -> None:
        self.t += 1
        params = net.arrays()
        steps = {}
        for k, g in grads.items():
            g = g + l2 * params[k] if k in ("W", "v") else g
            self.m[k] = self.beta1 * self.m[k] + (1 - self.beta1) * g
            self.s[k] = self.beta2 * self.s[k] + (1 - self.beta2) * g * g
            m_hat = self.m[k] / (1 - self.beta1**self.t)
            s_hat = self.s[k] / (1 - self.beta2**self.t)
            steps[k] = self.lr * m_hat / (np.sqrt(s_hat) + 1e-8)
        net.apply(steps)
