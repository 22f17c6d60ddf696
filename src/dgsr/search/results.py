"""What a search reports: live progress, one record per trial, and the final result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoArchive, ParetoEntry
from dgsr.search.mutations import Mutation


@dataclass(frozen=True)
class SearchProgress:
    """What a progress display needs; passed to ``on_progress``."""

    elapsed: float
    evaluations: float
    best_r2: float
    best_size: int
    trials: int



def history_point(evaluations: float, time: float, best_r2: float, best_size: int, trial: int) -> dict[str, float]:
    """One point of a search's history (``SearchResult.history``, the estimator's ``history_``):
    where the best R² so far improved, in evaluations, seconds and trials."""
    return {"evaluations": evaluations, "time": time, "best_r2": best_r2, "best_size": best_size, "trial": trial}


@dataclass
class TrialRecord:
    """Summary of one trial, with expert-iteration data when the config asks for it.

    ``solution_path``: ``(state, mutation)`` pairs from the empty expression to the solution
    reached in the fewest mutations (None when nothing was solved). ``best_path``: the same
    pairs up to the trial's most accurate expression (the shallowest on ties), solved or not,
    with that expression's R² in ``best_path_r2``; ``top_paths`` the paths to the trial's eight
    most accurate expressions, the best first. ``critic_targets``:
    ``(expression, target)``, 1.0 on paths to solutions, else the node's mean value, for nodes
    visited at least ``min_visits`` times.
    """

    index: int
    iterations: int
    evaluations: float
    best_r2: float
    solved: bool
    solution_path: list[tuple[Expression, Mutation]] | None = None
    best_path: list[tuple[Expression, Mutation]] | None = None
    best_path_r2: float = -math.inf
    top_paths: list[list[tuple[Expression, Mutation]]] = field(default_factory=list)
    critic_targets: list[tuple[Expression, float]] = field(default_factory=list)


@dataclass
class SearchResult:
    """Outcome of :func:`run_search`; ``archive.front()`` holds the accuracy-size front."""

    archive: ParetoArchive
    best: ParetoEntry | None
    n_evaluations: float
    n_trials: int
    n_iterations: int
    elapsed: float
    stop_reason: str
    history: list[dict[str, float]]
    mutation_stats: dict[str, int]
    trials: list[TrialRecord]
