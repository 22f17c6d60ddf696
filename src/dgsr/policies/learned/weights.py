"""The learned prior's and value's weights, and their file: JSON, kilobytes, checksummed.

A weights file names the features it was trained on, holds both nets' arrays and what trained
them (``info``), and a SHA-256 of all of that. :func:`load_weights` refuses, with one line that
says why, a file that is not JSON, not such a file, of another version, altered or truncated
(the checksum), trained on other features, or holding arrays of the wrong shape or non-finite
values. The shipped file is :data:`SHIPPED`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dgsr.policies.learned.features import NODE_FEATURES, PROPOSAL_FEATURES
from dgsr.policies.learned.network import ScoreNet
from dgsr.runtime.files import atomic_write_text

__all__ = ["FORMAT", "SHIPPED", "LearnedWeights", "WeightsError", "load_weights", "save_weights"]

FORMAT, VERSION = "dgsr-learned-prior", 1
#: The weights the package ships (trained by ``python -m dgsr.bench.train_prior``).
SHIPPED = Path(__file__).with_name("prior.json")
_ARRAYS = ("a", "c", "W", "b", "v")


class WeightsError(ValueError):
    """A weights file that cannot be used; the message says which file and why."""


@dataclass
class LearnedWeights:
    """The prior's net, the value's net (None: nodes valued by their accuracy), and ``info``
    (how they were trained: a JSON-able dict)."""

    prior: ScoreNet
    value: ScoreNet | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> LearnedWeights:
        def clone(net: ScoreNet | None) -> ScoreNet | None:
            return None if net is None else ScoreNet.from_arrays({k: v.copy() for k, v in net.arrays().items()})

        return LearnedWeights(clone(self.prior), clone(self.value), json.loads(json.dumps(self.info)))


def _net_json(net: ScoreNet | None) -> dict[str, Any] | None:
    if net is None:
        return None
    return {k: np.asarray(v, dtype=np.float64).tolist() for k, v in net.arrays().items()}


def _body(weights: LearnedWeights) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "proposal_features": list(PROPOSAL_FEATURES),
            "node_features": list(NODE_FEATURES), "prior": _net_json(weights.prior),
            "value": _net_json(weights.value), "info": weights.info}


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def save_weights(path: str | os.PathLike, weights: LearnedWeights) -> Path:
    """Write ``weights`` to ``path`` (atomically: an interrupted write leaves the old file)."""
    body = _body(weights)
    return atomic_write_text(path, json.dumps({**body, "sha256": _digest(body)}, indent=1) + "\n")


def load_weights(path: str | os.PathLike = SHIPPED) -> LearnedWeights:
    """The weights in ``path`` (default: the shipped ones).

    Raises
    ------
    FileNotFoundError
        No such file.
    WeightsError
        Anything that makes the file unusable (the message names it).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise WeightsError(f"{path}: not a learned-prior weights file (not valid JSON: {err.msg} at line "
                           f"{err.lineno}); it may be truncated or corrupted") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise WeightsError(f"{path}: not a learned-prior weights file (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise WeightsError(f"{path}: weights file version {data.get('version')!r}; this dgsr reads version {VERSION}")
    body = {k: v for k, v in data.items() if k != "sha256"}
    if data.get("sha256") != _digest(body):
        raise WeightsError(f"{path}: the weights do not match their checksum: the file was altered or corrupted")
    for key, names in (("proposal_features", PROPOSAL_FEATURES), ("node_features", NODE_FEATURES)):
        if tuple(data.get(key) or ()) != names:
            raise WeightsError(f"{path}: trained on other {key.replace('_', ' ')} than this dgsr computes; "
                               "retrain with python -m dgsr.bench.train_prior")
    prior = _net(path, "prior", data.get("prior"), len(PROPOSAL_FEATURES))
    value = None if data.get("value") is None else _net(path, "value", data["value"], len(NODE_FEATURES))
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    return LearnedWeights(prior, value, info)


def _net(path: Path, name: str, arrays: Any, n_features: int) -> ScoreNet:
    """The net ``name`` of a file, its shapes and values checked."""
    if not isinstance(arrays, dict) or set(arrays) != set(_ARRAYS):
        raise WeightsError(f"{path}: the {name} net must hold the arrays {', '.join(_ARRAYS)}")
    try:
        parsed = {k: np.asarray(arrays[k], dtype=np.float64) for k in _ARRAYS}
    except (TypeError, ValueError):
        raise WeightsError(f"{path}: the {name} net holds values that are not numbers") from None
    hidden = parsed["v"].shape[0] if parsed["v"].ndim == 1 else -1
    shapes = {"a": (n_features,), "c": (1,), "W": (hidden, n_features), "b": (hidden,), "v": (hidden,)}
    for k, shape in shapes.items():
        if parsed[k].shape != shape:
            raise WeightsError(f"{path}: the {name} net's {k} has shape {parsed[k].shape}, expected {shape}")
        if not np.all(np.isfinite(parsed[k])):
            raise WeightsError(f"{path}: the {name} net's {k} holds non-finite values")
    return ScoreNet.from_arrays(parsed)
