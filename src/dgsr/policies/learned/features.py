"""The features the learned prior and value read: microseconds each, numpy only.

A *proposal* (``<node, operator, operand>`` from the semantic policy) is described by its
semantic match, the operator and operand kind, where it acts in the expression, how much it
grows it, the data it is fitted to and the state of the search. A *node* (an expression in the
tree) by its accuracy on the trial's scoring rows, its size and constants, and the same data
and search descriptors. The names are part of a weights file: a file trained on other features
is refused (:mod:`dgsr.policies.learned.weights`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dgsr.core.evaluate import evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, OPERATORS, TRANSCENDENTAL, is_variable
from dgsr.search.mutations import MUTATION_OPERATORS

__all__ = ["NODE_FEATURES", "PROPOSAL_FEATURES", "DataDescriptors", "describe_data", "node_features",
           "proposal_features"]

_DATA_NAMES = ("data_log_rows", "data_columns", "data_noise", "data_skew", "data_kurtosis")
_SEARCH_NAMES = ("search_expansions", "search_best_match")
_OPERAND_KINDS = ("none", "constant", "variable", "compound")

#: Names of the columns of :func:`proposal_features`, in order.
PROPOSAL_FEATURES: tuple[str, ...] = (
    "semantic_log_prior", "match", "match_gap", "rank", "explore",
    *(f"op_{op}" for op in MUTATION_OPERATORS),
    *(f"operand_{kind}" for kind in _OPERAND_KINDS),
    "operand_size", "operand_constants", "operand_transcendental",
    "node_depth", "node_is_root", "node_share",
    "size_increase", "child_share_of_max", "constants_added", "expression_size", "expression_empty",
    *_DATA_NAMES, *_SEARCH_NAMES,
)
#: Names of the columns of :func:`node_features`, in order.
NODE_FEATURES: tuple[str, ...] = (
    "accuracy", "log_unexplained", "size", "constants", "variable_share", "transcendentals",
    *_DATA_NAMES, *_SEARCH_NAMES,
)
_OP_COLUMN = {op: PROPOSAL_FEATURES.index(f"op_{op}") for op in MUTATION_OPERATORS}
_KIND_COLUMN = {kind: PROPOSAL_FEATURES.index(f"operand_{kind}") for kind in _OPERAND_KINDS}
_FIRST_NODE = PROPOSAL_FEATURES.index("operand_size")
_SOLVED = 0.99  # the search's default solved R² (SearchConfig.solved_r2): where accuracy reaches 1


@dataclass(frozen=True)
class DataDescriptors:
    """What the features say of a trial's data, computed once per trial from its scoring rows."""

    log_rows: float
    columns: float
    noise: float
    skew: float
    kurtosis: float

    def as_tuple(self) -> tuple[float, ...]:
        return (self.log_rows, self.columns, self.noise, self.skew, self.kurtosis)


def describe_data(columns: np.ndarray, y: np.ndarray, n_rows: int) -> DataDescriptors:
    """Descriptors of data with scoring rows ``columns`` ``[n_features, m]`` and targets ``y``
    ``[m]``, drawn from ``n_rows`` rows.

    ``noise`` estimates the share of y's variance no smooth function explains: half the mean
    squared difference of y between each row and its nearest neighbour in standardised inputs,
    over y's variance (0 for a smooth law on dense data, about 1 for pure noise)."""
    y = np.asarray(y, dtype=np.float64)
    var = float(np.var(y)) if y.size else 0.0
    noise, skew, kurt = 1.0, 0.0, 0.0
    if y.size >= 3 and var > 0 and np.isfinite(var):
        with np.errstate(all="ignore"):
            z = (y - y.mean()) / math.sqrt(var)
            skew = float(np.clip(np.mean(z**3), -10, 10)) / 3.0
            kurt = float(np.log(max(np.mean(z**4), 1e-3))) / 3.0
            scale = columns.std(axis=1, keepdims=True)
            standard = np.where(scale > 0, (columns - columns.mean(axis=1, keepdims=True)) / scale, 0.0)
            sq = np.sum(standard * standard, axis=0)
            dist = sq[:, None] + sq[None, :] - 2.0 * standard.T @ standard
        np.fill_diagonal(dist, np.inf)
        nearest = np.argmin(dist, axis=1)
        noise = float(np.clip(0.5 * np.mean((y - y[nearest]) ** 2) / var, 0.0, 2.0))
    return DataDescriptors(math.log10(max(n_rows, 1)) / 4.0, min(columns.shape[0], 20) / 10.0, noise,
                           skew, kurt)


def _depths(expression: Expression) -> list[int]:
    depths = [0] * expression.size
    for i in range(expression.size):
        for child in expression.children(i):
            depths[child] = depths[i] + 1
    return depths


def proposal_features(expression: Expression, proposals: Sequence, semantic_priors: Sequence[float], max_size: int,
                      data: DataDescriptors, search: tuple[float, float]) -> np.ndarray:
    """One row per proposal (:class:`~dgsr.policies.semantic.policy.ScoredProposal`, with the
    semantic policy's prior for it), the columns :data:`PROPOSAL_FEATURES`; ``search`` is
    ``(expansions of the trial so far, its best match so far)``."""
    n = len(proposals)
    out = np.zeros((n, len(PROPOSAL_FEATURES)))
    if n == 0:
        return out
    matches = np.array([p.match for p in proposals], dtype=np.float64)
    matches = np.where(np.isfinite(matches), np.clip(matches, -5.0, 12.0), -5.0)
    shifted = matches - matches.max()
    out[:, 0] = np.log(np.maximum(np.asarray(semantic_priors, dtype=np.float64), 1e-300))
    out[:, 1] = matches / 5.0
    out[:, 2] = shifted / 5.0
    out[:, 3] = np.arange(n) / max(n, 1)
    size = expression.size
    depths = _depths(expression) if size else []
    ends = expression.subtree_ends if size else ()
    for i, p in enumerate(proposals):
        row = out[i]
        mutation, child = p.mutation, p.child
        row[4] = float(p.explore)
        column = _OP_COLUMN.get(mutation.op)
        if column is not None:  # a user-defined operator has no column: the prior rates it by the rest
            row[column] = 1.0
        operand = mutation.operand
        kind = ("none" if operand is None else "constant" if operand.symbols == (CONSTANT,)
                else "variable" if operand.size == 1 and is_variable(operand.symbols[0]) else "compound")
        row[_KIND_COLUMN[kind]] = 1.0
        j = _FIRST_NODE
        if operand is not None:
            row[j] = operand.size / 10.0
            row[j + 1] = operand.n_constants / 3.0
            row[j + 2] = float(any(s in TRANSCENDENTAL for s in operand.symbols))
        if size:
            node = mutation.node
            row[j + 3] = depths[node] / 5.0
            row[j + 4] = float(node == 0)
            row[j + 5] = (ends[node] - node) / size
        row[j + 6] = (child.size - size) / 10.0
        row[j + 7] = child.size / max(max_size, 1)
        row[j + 8] = (child.n_constants - expression.n_constants) / 3.0
        row[j + 9] = size / 20.0
        row[j + 10] = float(size == 0)
    out[:, -7:-2] = data.as_tuple()
    out[:, -2:] = search_columns(search)
    return out


def node_features(expressions: Sequence[Expression], columns: np.ndarray, y: np.ndarray, data: DataDescriptors,
                  search: tuple[float, float]) -> np.ndarray:
    """One row per expression, the columns :data:`NODE_FEATURES`: its accuracy is that of its
    best linear scaling ``a*f + b`` on the scoring rows (the search's own scaling is free)."""
    out = np.zeros((len(expressions), len(NODE_FEATURES)))
    var = float(np.var(y)) if y.size else 0.0
    n_features = max(columns.shape[0], 1)
    for i, expr in enumerate(expressions):
        r2 = _scaled_r2(evaluate_columns(expr, columns), y, var) if not expr.is_empty else 0.0
        unexplained = min(max(1.0 - r2, 1e-12), 1.0)
        row = out[i]
        row[0] = 1.0 if r2 >= _SOLVED else max(0.0, -math.log10(unexplained) / -math.log10(1 - _SOLVED))
        row[1] = math.log10(unexplained) / -12.0
        row[2] = expr.size / 20.0
        row[3] = expr.n_constants / 3.0
        row[4] = len(expr.variables) / n_features
        row[5] = sum(1 for s in expr.symbols if s in TRANSCENDENTAL and s in OPERATORS) / 3.0
    out[:, -7:-2] = data.as_tuple()
    out[:, -2:] = search_columns(search)
    return out


def search_columns(search: tuple[float, float]) -> tuple[float, float]:
    """The search-state columns: expansions on a log scale, the best match in decades over 5."""
    best = search[1] if math.isfinite(search[1]) else 0.0
    return math.log1p(max(search[0], 0.0)) / 5.0, min(max(best, -5.0), 12.0) / 5.0


def _scaled_r2(values: np.ndarray, y: np.ndarray, var: float) -> float:
    """R² of the least-squares line of ``y`` on ``values``: their squared correlation (0 when
    not finite or constant). Both are scaled to a largest magnitude of 1 first, so values near
    the float range do not overflow."""
    if var <= 0 or not np.all(np.isfinite(values)):
        return 0.0
    with np.errstate(all="ignore"):
        centred = values - values.mean()
        top = np.max(np.abs(centred))
        if not (top > 0 and np.isfinite(top)):
            return 0.0
        centred = centred / top
        target = y - y.mean()
        target = target / np.max(np.abs(target))
        corr = (centred @ target) / np.sqrt((centred @ centred) * (target @ target))
    return float(min(corr * corr, 1.0)) if np.isfinite(corr) else 0.0
