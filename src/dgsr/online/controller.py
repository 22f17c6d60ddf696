"""The controller of expert iteration: a queue of datasets and the search trials run on them.

Section 3.2 of the paper: searches run on many datasets at once so that the policy and critic
learn what is shared between them; a *controller* keeps a queue of datasets (the user's,
optionally mixed with synthetic ones whose ground truth is known) and hands trials to search
*workers*; *trainers* update the networks from the trials' results. Every trial samples its own
hyper-parameters (Appendix E.3): K uniform in [8, 16], decoding temperature in [0.5, 1.0],
length penalty in [0, 1.2], depth decay in {0.8, 0.9, 0.95, 1}, p_uct = 1; trials on a dataset
alternate with and without constant fitting (Section 4.2).

This module holds the data types that cross process boundaries (:class:`TrialSpec`,
:class:`TrialOutcome`), :func:`run_trial` (what a worker does), and :class:`Controller` (the
queue, the per-trial draws, the best expressions per dataset); :mod:`dgsr.online.backends`
runs them in one process, a local process pool, or on Ray.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dgsr.core.budget import Budget
from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoArchive, ParetoEntry, select
from dgsr.search.mcts import SearchConfig, run_search
from dgsr.search.mutations import Mutation
from dgsr.search.policy import Policy

from .buffers import Points

#: Depth decays of Appendix E.3.
DEPTH_DECAYS = (0.8, 0.9, 0.95, 1.0)


@dataclass(frozen=True)
class OnlineConfig:
    """Settings of an expert-iteration run (per-trial ranges: Appendix E.3).

    Attributes
    ----------
    iterations_per_trial:
        MCTS iterations per trial (the paper: 1000).
    trial_evaluations, trial_time:
        Optional caps of one trial (evaluations, seconds); the run's remaining time caps it too.
    k_range, temperature_range, length_penalty_range, depth_decays, p_uct:
        The per-trial draws: K uniform on the integers of ``k_range``, temperature and length
        penalty uniform, depth decay uniform over ``depth_decays``.
    constant_modes:
        Constant fitting of successive trials on one dataset, cycled (with, then without).
    min_visits:
        N_min_visits of the critic buffer.
    n_points:
        Rows of a dataset kept with its trial's training items.
    max_size, solved_r2:
        Node limit; R² that counts as solved.
    learn:
        False gives a frozen policy (no buffers, no updates): the baseline arm.
    synthetic:
        Synthetic datasets kept in the queue; one that gets solved is replaced by a new one.
    synthetic_points:
        Rows of a synthetic dataset.
    checkpoint_every:
        Completed trials between checkpoints of the whole learning state.
    checkpoint_seconds:
        Also checkpoint at the first completed trial once this many seconds have passed since
        the last checkpoint, so slow trials never leave minutes of work unsaved.
    seed:
        Seeds the controller's draws.
    mutation_capacity, critic_capacity:
        FIFO sizes of the two buffers.
    """

    iterations_per_trial: int = 1000
    trial_evaluations: float | None = None
    trial_time: float | None = 600.0
    k_range: tuple[int, int] = (8, 16)
    temperature_range: tuple[float, float] = (0.5, 1.0)
    length_penalty_range: tuple[float, float] = (0.0, 1.2)
    depth_decays: tuple[float, ...] = DEPTH_DECAYS
    p_uct: float = 1.0
    constant_modes: tuple[str, ...] = ("best", "never")
    min_visits: int = 5
    n_points: int = 100
    max_size: int = 60
    solved_r2: float = 0.99
    learn: bool = True
    synthetic: int = 0
    synthetic_points: int = 200
    checkpoint_every: int = 5
    checkpoint_seconds: float = 60.0
    seed: int = 0
    mutation_capacity: int = 20_000
    critic_capacity: int = 20_000

    def __post_init__(self) -> None:
        if not 1 <= self.k_range[0] <= self.k_range[1]:
            raise ValueError(f"k_range must be (low, high) with 1 <= low <= high, got {self.k_range}")
        if not self.constant_modes:
            raise ValueError("constant_modes must not be empty")
        if self.synthetic < 0:
            raise ValueError(f"synthetic must be >= 0, got {self.synthetic}")
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be >= 1, got {self.checkpoint_every}")


@dataclass(frozen=True, eq=False)
class Dataset:
    """One dataset of the queue: ``X`` [n, D] (finite), ``y`` [n]; ``truth`` for synthetic ones."""

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...] = ()
    synthetic: bool = False
    truth: Expression | None = None

    def names(self) -> list[str]:
        return list(self.feature_names) or [f"x{i}" for i in range(self.X.shape[1])]


@dataclass(frozen=True)
class TrialSpec:
    """What a worker needs to run one trial, besides the data and the weights."""

    trial_id: int
    dataset: str
    seed: int
    n_samples: int
    temperature: float
    length_penalty: float
    depth_decay: float
    p_uct: float
    constant_fitting: str
    weights_version: int = 0
    attempt: int = 0  # > 0 when re-queued after its worker died


@dataclass
class TrialOutcome:
    """What a worker sends back: the trial's front, summary, and expert-iteration data."""

    spec: TrialSpec
    front: list[tuple[Expression, float, float]]  # (expression, mse, r2)
    best_r2: float
    solved: bool
    evaluations: float
    iterations: int
    seconds: float
    solution_path: list[tuple[Expression, Mutation]] | None
    critic_targets: list[tuple[Expression, float]]
    points: Points
    worker: str = "local"
    error: str | None = None  # an arithmetic error that ended the trial (the run goes on)


def make_policy(model: Any, spec: TrialSpec, device: str = "cpu") -> Policy:
    """The neural policy of one trial: ``model`` decoded with the trial's temperature and length penalty."""
    from dgsr.neural.policy import NeuralPolicy

    return NeuralPolicy(model, device=device, temperature=spec.temperature, length_penalty=spec.length_penalty)


def search_config(spec: TrialSpec, config: OnlineConfig, base: SearchConfig | None = None) -> SearchConfig:
    """The :class:`SearchConfig` of one trial (``base`` gives the settings the trial does not draw)."""
    from dataclasses import replace

    base = base or SearchConfig(iterations_per_trial=config.iterations_per_trial, max_size=config.max_size,
                                solved_r2=config.solved_r2)
    return replace(base, n_samples=spec.n_samples, p_uct=spec.p_uct, depth_decay=spec.depth_decay,
                   constant_fitting=spec.constant_fitting, max_trials=1, record_training_data=config.learn,
                   min_visits=config.min_visits)


def run_trial(spec: TrialSpec, X: np.ndarray, y: np.ndarray, policy: Policy, config: OnlineConfig, *,
              time_left: float | None = None, budget: Budget | None = None, archive: ParetoArchive | None = None,
              base: SearchConfig | None = None, worker: str = "local") -> TrialOutcome:
    """Run one search trial (one tree of ``iterations_per_trial`` iterations) and collect its data.

    ``budget``/``archive`` are shared across trials by the estimator's fine-tuning mode; by
    default each trial gets its own, capped by ``config.trial_*`` and ``time_left``.
    """
    start = time.perf_counter()
    if budget is None:
        caps = [t for t in (config.trial_time, time_left) if t is not None]
        budget = Budget(max_evaluations=config.trial_evaluations, max_time=max(min(caps), 0.0) if caps else None)
    try:
        result = run_search(X, y, policy, config=search_config(spec, config, base),
                            rng=np.random.default_rng(spec.seed), budget=budget, archive=archive)
    except ArithmeticError as err:  # an overflow inside the search must not end an hours-long run
        result, error = None, f"{type(err).__name__}: {err}"
    else:
        error = None
    record = result.trials[0] if result is not None and result.trials else None
    rows = np.random.default_rng([spec.seed, 1])
    if X.shape[0] > config.n_points:  # the rows the training items are conditioned on
        keep = np.sort(rows.choice(X.shape[0], config.n_points, replace=False))
        points = Points(np.array(X[keep]), np.array(y[keep]))
    else:
        points = Points(np.array(X), np.array(y))
    front = [(e.expression, e.mse, e.r2) for e in result.archive.front()] if result is not None else []
    return TrialOutcome(
        spec=spec, front=front, best_r2=max((f[2] for f in front), default=-math.inf),
        solved=bool(record and record.solved), evaluations=float(record.evaluations if record else 0.0),
        iterations=int(record.iterations if record else 0), seconds=time.perf_counter() - start,
        solution_path=record.solution_path if record else None,
        critic_targets=list(record.critic_targets) if record else [], points=points, worker=worker, error=error)


@dataclass
class DatasetStats:
    """What the controller knows about one dataset."""

    dispatched: int = 0
    trials: int = 0
    solved_trials: int = 0
    first_solved: int | None = None  # index of the completed trial (run-wide) that first solved it
    evaluations: float = 0.0
    archive: ParetoArchive = field(default_factory=ParetoArchive)


@dataclass(frozen=True)
class DatasetResult:
    """The outcome on one dataset: its front, the selected and the most accurate expression."""

    name: str
    synthetic: bool
    feature_names: tuple[str, ...]
    trials: int
    solved_trials: int
    first_solved: int | None
    evaluations: float
    front: list[ParetoEntry]
    selected: ParetoEntry | None
    best: ParetoEntry | None
    truth: Expression | None = None

    @property
    def solved(self) -> bool:
        return self.solved_trials > 0

    def to_dict(self) -> dict[str, Any]:
        names = list(self.feature_names)

        def entry(e: ParetoEntry | None) -> dict[str, Any] | None:
            if e is None:
                return None
            return {"size": e.size, "mse": e.mse, "r2": e.r2, "equation": e.expression.format(names, precision=6),
                    "prefix": " ".join(e.expression.symbols), "constants": list(e.expression.constants)}

        return {"name": self.name, "synthetic": self.synthetic, "features": names, "trials": self.trials,
                "solved_trials": self.solved_trials, "first_solved_trial": self.first_solved,
                "evaluations": self.evaluations, "selected": entry(self.selected), "best": entry(self.best),
                "front": [entry(e) for e in self.front],
                "truth": self.truth.format(names, precision=6) if self.truth is not None else None}


class Controller:
    """The dataset queue, the per-trial hyper-parameter draws and the best expressions per dataset.

    Datasets are served round-robin (so several workers search different datasets at once); a
    trial whose worker died is re-queued first, with the same seed. Synthetic datasets are drawn
    from :func:`dgsr.training.generator.random_problem` (never a held-out expression) and replaced once solved.
    """

    def __init__(self, datasets: Sequence[Dataset], config: OnlineConfig | None = None):
        self.config = config or OnlineConfig()
        names = [d.name for d in datasets]
        if len(set(names)) != len(names):
            raise ValueError(f"dataset names must be distinct, got {names}")
        self.datasets: dict[str, Dataset] = {d.name: d for d in datasets}
        self.queue: deque[str] = deque(names)
        self.retry: deque[TrialSpec] = deque()
        self.in_flight: dict[int, TrialSpec] = {}
        self.stats: dict[str, DatasetStats] = {d.name: DatasetStats() for d in datasets}
        self.rng = np.random.default_rng([self.config.seed, 1])
        self.synthetic_rng = np.random.default_rng([self.config.seed, 2])
        self.n_synthetic_drawn = 0
        self.next_trial_id = 0
        self.completed = 0
        self.requeued = 0
        self.elapsed_before = 0.0  # seconds spent by earlier runs of a resumed session
        self.log: list[dict[str, Any]] = []
        for _ in range(self.config.synthetic):
            self._add_synthetic()
        if not self.queue:
            raise ValueError("no datasets to search (give datasets or synthetic > 0)")

    # ------------------------------------------------------------------ queue
    def _add_synthetic(self) -> None:
        from dgsr.training.corpus import expression_key, heldout_keys
        from dgsr.training.generator import random_problem

        held = heldout_keys()
        while True:
            problem = random_problem(self.synthetic_rng, n_points=self.config.synthetic_points)
            if expression_key(problem.expression) not in held:  # held-out problems stay unseen
                break
        name = f"synthetic-{self.n_synthetic_drawn:04d}"
        self.n_synthetic_drawn += 1
        self.datasets[name] = Dataset(name, problem.X, problem.y, synthetic=True, truth=problem.expression)
        self.stats[name] = DatasetStats()
        self.queue.append(name)

    def next_spec(self, weights_version: int = 0) -> TrialSpec:
        """The next trial: a re-queued one first, else the head of the queue with fresh draws."""
        if self.retry:
            spec = self.retry.popleft()
            spec = TrialSpec(**{**asdict(spec), "weights_version": weights_version, "attempt": spec.attempt + 1})
        else:
            name = self.queue[0]
            self.queue.rotate(-1)
            c, r = self.config, self.rng
            stats = self.stats[name]
            spec = TrialSpec(
                trial_id=self.next_trial_id, dataset=name, seed=int(r.integers(2**63)),
                n_samples=int(r.integers(c.k_range[0], c.k_range[1] + 1)),
                temperature=float(r.uniform(*c.temperature_range)),
                length_penalty=float(r.uniform(*c.length_penalty_range)),
                depth_decay=float(c.depth_decays[int(r.integers(len(c.depth_decays)))]), p_uct=c.p_uct,
                constant_fitting=c.constant_modes[stats.dispatched % len(c.constant_modes)],
                weights_version=weights_version)
            self.next_trial_id += 1
            stats.dispatched += 1
        self.in_flight[spec.trial_id] = spec
        return spec

    def requeue(self, spec: TrialSpec) -> None:
        """Put back the trial of a worker that died (it runs again, with the same seed)."""
        self.in_flight.pop(spec.trial_id, None)
        self.retry.append(spec)
        self.requeued += 1

    def record(self, outcome: TrialOutcome) -> dict[str, Any]:
        """Merge a finished trial into its dataset's archive and statistics; returns its log line."""
        spec = outcome.spec
        self.in_flight.pop(spec.trial_id, None)
        name = spec.dataset
        stats = self.stats.get(name)
        if stats is None:  # a synthetic dataset retired while this trial ran
            stats = self.stats[name] = DatasetStats()
        for expr, mse, r2 in outcome.front:
            stats.archive.add(expr, mse, r2)
        stats.trials += 1
        stats.evaluations += outcome.evaluations
        if outcome.solved:
            stats.solved_trials += 1
            if stats.first_solved is None:
                stats.first_solved = self.completed
        line = {"trial": self.completed, "trial_id": spec.trial_id, "dataset": name, "solved": outcome.solved,
                "best_r2": outcome.best_r2, "evaluations": round(outcome.evaluations, 1),
                "iterations": outcome.iterations, "seconds": round(outcome.seconds, 3), "k": spec.n_samples,
                "temperature": round(spec.temperature, 3), "length_penalty": round(spec.length_penalty, 3),
                "depth_decay": spec.depth_decay, "constants": spec.constant_fitting,
                "weights_version": spec.weights_version, "attempt": spec.attempt, "worker": outcome.worker,
                "path_length": len(outcome.solution_path) if outcome.solution_path else 0,
                "critic_targets": len(outcome.critic_targets)}
        if outcome.error:
            line["error"] = outcome.error
        self.completed += 1
        self.log.append(line)
        dataset = self.datasets.get(name)
        if outcome.solved and dataset is not None and dataset.synthetic and name in self.queue:
            self.queue.remove(name)  # solved: make room for a new synthetic problem
            self._add_synthetic()
        return line

    # ------------------------------------------------------------------ results
    def results(self, rule: str = "best") -> list[DatasetResult]:
        """One result per dataset that has any (user datasets first, in their order)."""
        out = []
        for name, stats in self.stats.items():
            dataset = self.datasets.get(name)
            front = stats.archive.front()
            selected = front[select(front, rule)] if front else None
            out.append(DatasetResult(
                name=name, synthetic=bool(dataset and dataset.synthetic),
                feature_names=tuple(dataset.names()) if dataset is not None else (), trials=stats.trials,
                solved_trials=stats.solved_trials, first_solved=stats.first_solved, evaluations=stats.evaluations,
                front=front, selected=selected, best=stats.archive.best(),
                truth=dataset.truth if dataset is not None else None))
        return sorted(out, key=lambda r: r.synthetic)

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue: queue, pending trials (in flight ones re-queued), archives, RNGs."""
        return {
            "config": asdict(self.config),
            "datasets": [{"name": d.name, "X": d.X, "y": d.y, "feature_names": d.feature_names,
                          "synthetic": d.synthetic, "truth": d.truth} for d in self.datasets.values()],
            "queue": list(self.queue),
            "retry": [asdict(s) for s in (*self.retry, *self.in_flight.values())],
            "stats": {k: {"dispatched": s.dispatched, "trials": s.trials, "solved_trials": s.solved_trials,
                          "first_solved": s.first_solved, "evaluations": s.evaluations,
                          "front": [(e.expression, e.mse, e.r2) for e in s.archive.front()]}
                      for k, s in self.stats.items()},
            "rng": self.rng.bit_generator.state, "synthetic_rng": self.synthetic_rng.bit_generator.state,
            "n_synthetic_drawn": self.n_synthetic_drawn, "next_trial_id": self.next_trial_id,
            "completed": self.completed, "requeued": self.requeued, "elapsed": self.elapsed_before,
            "log": list(self.log),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Controller:
        cfg = dict(state["config"])
        for key in ("k_range", "temperature_range", "length_penalty_range", "depth_decays", "constant_modes"):
            cfg[key] = tuple(cfg[key])
        config = OnlineConfig(**{**cfg, "synthetic": 0})
        datasets = [Dataset(d["name"], d["X"], d["y"], tuple(d["feature_names"]), d["synthetic"], d["truth"])
                    for d in state["datasets"]]
        self = cls(datasets, config)
        self.config = OnlineConfig(**cfg)
        self.queue = deque(state["queue"])
        self.retry = deque(TrialSpec(**s) for s in state["retry"])
        self.in_flight = {}
        self.stats = {}
        for name, s in state["stats"].items():
            stats = DatasetStats(s["dispatched"], s["trials"], s["solved_trials"], s["first_solved"], s["evaluations"])
            for expr, mse, r2 in s["front"]:
                stats.archive.add(expr, mse, r2)
            self.stats[name] = stats
        self.rng.bit_generator.state = state["rng"]
        self.synthetic_rng.bit_generator.state = state["synthetic_rng"]
        self.n_synthetic_drawn = int(state["n_synthetic_drawn"])
        self.next_trial_id = int(state["next_trial_id"])
        self.completed = int(state["completed"])
        self.requeued = int(state["requeued"])
        self.elapsed_before = float(state["elapsed"])
        self.log = list(state["log"])
        return self
