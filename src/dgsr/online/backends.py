"""Where expert iteration runs: one process, a local process pool, or Ray actors.

All three share one driver loop (:func:`drive`): the :class:`~dgsr.online.controller.Controller`
hands trials to free search workers; each finished trial is merged into the controller, its data
goes to the trainer's buffers, and the trainer takes a few steps; workers load the newest
weights (by version) before each trial; the whole learning state is checkpointed every
``checkpoint_every`` trials, on Ctrl-C and at the end.

* ``local`` with one worker: the search runs in the driver process on the very model the
  trainer updates (deterministic, exact resume);
* ``local`` with N workers: a ``spawn`` process pool of N searchers (one torch thread each);
  the trainer runs in the driver between results. No extra service;
* ``ray``: N ``RaySearchWorker`` actors and one ``TrainerActor``, on a local Ray instance started
  here (``address=None``) or an existing cluster (``address="host:port"`` or ``"auto"``). Weights
  travel through Ray's object store. A worker that dies has its trial re-queued (same seed) and
  is replaced; the run goes on.

The executors and trainer handles live in :mod:`dgsr.online.local_backend` and
:mod:`dgsr.online.ray_backend`; this module is the driver.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.runtime.files import atomic_write_text, safe_file_name
from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt
from dgsr.search.workers import BACKENDS, check_backend, start_ray

from .controller import Controller, Dataset, DatasetResult, OnlineConfig, TrialOutcome, TrialSpec
from .local_backend import InProcessExecutor, LocalTrainer, PoolExecutor, SearchWorker, WorkerLost
from .ray_backend import RayExecutor, RaySearchWorker, RayTrainer, TrainerActor
from .state import STATE_FILE, load_state, save_state
from .trainer import OnlineTrainer, TrainerConfig

#: the executors and trainer handles, importable from here as before the split
__all__ = ["BACKENDS", "POLICY_FILE", "Executor", "InProcessExecutor", "LocalTrainer", "OnlineResult",
           "PoolExecutor", "RayExecutor", "RaySearchWorker", "RayTrainer", "SearchWorker", "TrainerActor",
           "TrainerHandle", "WorkerLost", "drive", "run_online", "throughput", "write_checkpoint", "write_results"]

POLICY_FILE = "policy.safetensors"


# ---------------------------------------------------------------------- the driver loop
class Executor(Protocol):
    """Where trials run (:class:`InProcessExecutor`, :class:`PoolExecutor`, :class:`RayExecutor`)."""

    def free(self) -> int:
        """How many more trials can be submitted now."""

    def submit(self, spec: TrialSpec, dataset: Dataset, weights: Callable[[], tuple[int, Any]],
               time_left: float | None) -> Any:
        """Start ``spec`` on ``dataset`` with the weights ``weights()`` returns; a handle for :meth:`wait`."""

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles among ``handles`` whose trial is done (waiting at most ``timeout`` seconds)."""

    def result(self, handle: Any) -> TrialOutcome:
        """The outcome of a done trial; raises :class:`WorkerLost` when its worker died."""

    def describe(self, handle: Any) -> dict:
        """``{"pid": ..., "worker": ...}`` of the worker running ``handle`` (for ``on_dispatch``)."""

    def close(self) -> None:
        """Stop the workers and remove staged files."""


class TrainerHandle(Protocol):
    """The trainer as the driver sees it (:class:`LocalTrainer`, :class:`RayTrainer`)."""

    version: int  # weights version: optimiser steps taken

    def record(self, outcome: TrialOutcome) -> dict[str, float]:
        """Add a finished trial's data to the buffers and train; the mean training losses."""

    def weights(self) -> tuple[int, Any]:
        """``(version, weights)`` in the form this backend's workers load."""

    def model_state(self) -> tuple[int, dict]:
        """``(version, CPU state dict)`` of the model."""

    def state_dict(self) -> dict[str, Any]:
        """The whole trainer state (:meth:`OnlineTrainer.state_dict`)."""

    def buffer_sizes(self) -> tuple[int, int]:
        """Items in the mutation and critic buffers."""

    def close(self) -> None:
        """Release the trainer's resources."""


@dataclass
class OnlineResult:
    """Outcome of :func:`run_online`."""

    results: list[DatasetResult]
    trials: int
    trainer_steps: int
    elapsed: float
    stop_reason: str
    requeued: int
    log: list[dict[str, Any]] = field(default_factory=list)
    out: Path | None = None
    controller: Controller | None = None
    trainer: OnlineTrainer | None = None  # the local trainer (None on Ray)


def drive(controller: Controller, trainer: TrainerHandle, executor: Executor, *, max_time: float | None,
          max_trials: int | None, out: Path | None = None, on_trial: Callable[[dict], Any] | None = None,
          on_dispatch: Callable[[dict, TrialSpec], Any] | None = None) -> str:
    """Run trials until ``max_time`` (seconds, counted across resumes) or ``max_trials`` (completed, in all).

    Returns the stop reason: ``"time"``, ``"trials"`` or ``"interrupted"`` (Ctrl-C; state saved).
    """
    run = _Drive(controller, trainer, executor, max_time, max_trials, out, on_trial, on_dispatch)
    reason = "trials"
    try:
        reason = run.loop()
    except INTERRUPTS as err:
        if not is_interrupt(err):
            raise
        reason = "interrupted"
        run.requeue_in_flight()  # lost with their workers: they run again after --resume
    except Exception:
        run.requeue_in_flight()  # keep what is done; a resumed run re-runs these
        controller.elapsed_before = run.elapsed()
        if out is not None:  # best effort: the error being raised matters more than this checkpoint
            with contextlib.suppress(Exception):
                write_checkpoint(out, controller, trainer)
        raise
    finally:
        executor.close()
    controller.elapsed_before = run.elapsed()
    if out is not None:
        write_checkpoint(out, controller, trainer)
    return reason


class _Drive:
    """The state of :func:`drive`'s loop: the trials out on the executor, the run's clock and the
    time of the last checkpoint."""

    def __init__(self, controller: Controller, trainer: TrainerHandle, executor: Executor, max_time: float | None,
                 max_trials: int | None, out: Path | None, on_trial: Callable[[dict], Any] | None,
                 on_dispatch: Callable[[dict, TrialSpec], Any] | None):
        self.controller, self.trainer, self.executor = controller, trainer, executor
        self.max_time, self.max_trials, self.out = max_time, max_trials, out
        self.on_trial, self.on_dispatch = on_trial, on_dispatch
        self.start = time.perf_counter()
        self.in_flight: dict[Any, TrialSpec] = {}
        self.last_checkpoint = time.perf_counter()

    def elapsed(self) -> float:
        """Seconds of the whole run, resumes included."""
        return self.controller.elapsed_before + time.perf_counter() - self.start

    def time_left(self) -> float | None:
        return None if self.max_time is None else self.max_time - self.elapsed()

    def loop(self) -> str:
        """Dispatch and record trials until the limits; the stop reason."""
        controller, executor = self.controller, self.executor
        while True:
            while executor.free() > 0 and self._may_dispatch():
                spec = controller.next_spec(self.trainer.version)
                handle = executor.submit(spec, controller.datasets[spec.dataset], self.trainer.weights,
                                         self.time_left())
                self.in_flight[handle] = spec
                if self.on_dispatch is not None:
                    self.on_dispatch(executor.describe(handle), spec)
            if not self.in_flight:
                done = self.max_trials is not None and controller.completed >= self.max_trials
                return "trials" if done else "time"
            for handle in executor.wait(list(self.in_flight), timeout=1.0):
                spec = self.in_flight.pop(handle)
                try:
                    outcome = executor.result(handle)
                except WorkerLost:
                    controller.requeue(spec)
                    continue
                self._record(outcome)

    def _may_dispatch(self) -> bool:
        if self.max_trials is not None and self.controller.completed + len(self.in_flight) >= self.max_trials:
            return False
        return self.max_time is None or self.time_left() > 0

    def _record(self, outcome: TrialOutcome) -> None:
        """Merge a finished trial, train on it, log it, and checkpoint when one is due."""
        controller, config = self.controller, self.controller.config
        line = controller.record(outcome)
        line.update({f"train_{k}": round(v, 5) for k, v in self.trainer.record(outcome).items()})
        line["trainer_steps"] = self.trainer.version
        line["elapsed"] = round(self.elapsed(), 2)
        if self.out is not None:
            with open(self.out / "log.jsonl", "a") as fh:
                fh.write(json.dumps(line) + "\n")
        if self.on_trial is not None:
            self.on_trial(line)
        every = getattr(config, "checkpoint_seconds", math.inf)  # states saved before it existed
        if (controller.completed % config.checkpoint_every == 0
                or time.perf_counter() - self.last_checkpoint >= every):
            self._checkpoint()

    def _checkpoint(self) -> None:
        self.last_checkpoint = time.perf_counter()
        if self.out is not None:
            controller_elapsed = self.controller.elapsed_before
            self.controller.elapsed_before = self.elapsed()
            try:
                write_checkpoint(self.out, self.controller, self.trainer)
            finally:
                self.controller.elapsed_before = controller_elapsed

    def requeue_in_flight(self) -> None:
        """Put the trials still out back in the queue (their workers' results are lost)."""
        for spec in self.in_flight.values():
            self.controller.requeue(spec)
        self.in_flight.clear()


def write_checkpoint(out: Path, controller: Controller, trainer: Any) -> None:
    """The learning state (atomic), the fine-tuned weights and one result file per dataset."""
    from dgsr.neural.checkpoint import save_model

    out.mkdir(parents=True, exist_ok=True)
    trainer_state = trainer.state_dict()
    save_state(out / STATE_FILE, trainer=trainer_state, controller=controller.state_dict(),
               extra={"torch_threads": torch.get_num_threads()})
    model = PolicyModel(ModelConfig.from_dict(trainer_state["model_config"]))
    model.load_state_dict(trainer_state["model"])
    save_model(model, out / POLICY_FILE, info={"online_trials": controller.completed,
                                               "online_steps": int(trainer_state["steps"])})
    write_results(out, controller.results())


def write_results(out: Path, results: Sequence[DatasetResult]) -> None:
    """``OUT/results/<dataset>.json`` (front, selected, best) and ``OUT/results.csv`` (one row each)."""
    import pandas as pd

    folder = out / "results"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for r in results:
        data = r.to_dict()
        atomic_write_text(folder / f"{safe_file_name(r.name)}.json", json.dumps(data, indent=1, default=_json_default))
        sel = data["selected"] or {}
        rows.append({"dataset": r.name, "synthetic": r.synthetic, "trials": r.trials, "solved_trials": r.solved_trials,
                     "first_solved_trial": r.first_solved, "r2": sel.get("r2"), "size": sel.get("size"),
                     "equation": sel.get("equation"), "best_r2": (data["best"] or {}).get("r2")})
    frame = pd.DataFrame(rows)
    atomic_write_text(out / "results.csv", frame.to_csv(index=False))


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value)}")


# ---------------------------------------------------------------------- entry point
def run_online(datasets: Sequence[Dataset], *, model: PolicyModel | None = None,
               config: OnlineConfig | None = None, trainer_config: TrainerConfig | None = None,
               backend: str = "local", workers: int = 1, address: str | None = None,
               out: str | os.PathLike | None = None, resume: bool = False, max_time: float | None = None,
               max_trials: int | None = None, device: str = "cpu", ray_cpus: int | None = None,
               on_trial: Callable[[dict], Any] | None = None,
               on_dispatch: Callable[[dict, TrialSpec], Any] | None = None, force: bool = False) -> OnlineResult:
    """Expert iteration over ``datasets`` until ``max_time`` seconds or ``max_trials`` trials.

    Parameters
    ----------
    datasets:
        The user's datasets (``config.synthetic`` synthetic ones are added to the queue).
    model:
        The starting policy/critic (fine-tuned in place by the local one-worker backend).
    config, trainer_config:
        :class:`OnlineConfig` (queue, trial draws, checkpoints) and :class:`TrainerConfig`.
    backend, workers, address:
        ``"local"`` (``workers`` = 1: in this process; more: a local process pool) or ``"ray"``
        (``workers`` actors; ``address`` None starts a local Ray instance, else joins a cluster).
    out:
        Folder of ``state.pt``, ``policy.safetensors``, ``log.jsonl`` and ``results/``.
    resume:
        Continue from ``out/state.pt`` (the datasets, model and configs stored there win);
        ``log.jsonl`` is rewritten to the checkpoint's trials (later ones are run again).
    force:
        Start a new run in an ``out`` that holds one (its log is replaced); without it that is
        a ``FileExistsError``.
    ray_cpus:
        CPUs of a local Ray instance started here (default: ``workers``).
    on_trial, on_dispatch:
        Called with each completed trial's log line; with ``(worker info, spec)`` at each dispatch.
    """
    check_backend(backend)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if max_time is None and max_trials is None:
        raise ValueError("give max_time or max_trials")
    out_path = Path(out) if out is not None else None
    state_path = out_path / STATE_FILE if out_path is not None else None
    if resume and state_path is not None and state_path.is_file():
        controller, trainer = _resumed(out_path, state_path, device)
    else:
        controller, trainer = _started(datasets, model, config, trainer_config, out_path, device, force)
    started_ray = False
    if backend == "ray":
        started_ray = start_ray(ray_cpus or workers, address)
    handle, executor = _trainer_and_executor(backend, trainer, controller.config, workers, device)
    try:
        reason = drive(controller, handle, executor, max_time=max_time, max_trials=max_trials, out=out_path,
                       on_trial=on_trial, on_dispatch=on_dispatch)
        if backend == "ray":  # bring the fine-tuned state back into this process
            trainer.load_state_dict(handle.state_dict())
            handle.close()
    finally:
        if started_ray:
            import ray

            ray.shutdown()
    return OnlineResult(results=controller.results(), trials=controller.completed, trainer_steps=trainer.steps,
                        elapsed=controller.elapsed_before, stop_reason=reason, requeued=controller.requeued,
                        log=list(controller.log), out=out_path, controller=controller, trainer=trainer)


def _resumed(out: Path, state_path: Path, device: str) -> tuple[Controller, OnlineTrainer]:
    """The controller and trainer of the run checkpointed at ``state_path``."""
    state = load_state(state_path)
    controller = Controller.from_state_dict(state["controller"])
    trainer = OnlineTrainer.from_state_dict(state["trainer"], device=device)
    # The search samples from torch's global generator, so exact resume restores it; this is
    # the run's entry point, and a generator passed in instead would change the sampled numbers.
    torch.set_rng_state(state["torch_rng"])
    # Trials logged after the checkpoint are lost with the crash and run again: log them once.
    atomic_write_text(out / "log.jsonl", "".join(json.dumps(line) + "\n" for line in controller.log))
    return controller, trainer


def _started(datasets: Sequence[Dataset], model: PolicyModel | None, config: OnlineConfig | None,
             trainer_config: TrainerConfig | None, out: Path | None, device: str,
             force: bool) -> tuple[Controller, OnlineTrainer]:
    """The controller and trainer of a new run (``out`` made ready for it)."""
    if model is None:
        raise ValueError("a model is needed to start a run (resume needs OUT/state.pt)")
    config = config or OnlineConfig()
    controller = Controller(datasets, config)
    trainer = OnlineTrainer(model, trainer_config or TrainerConfig(seed=config.seed), device=device)
    for buf, cap in ((trainer.buffers.mutations, config.mutation_capacity),
                     (trainer.buffers.critic, config.critic_capacity)):
        buf.load_state_dict({"capacity": cap, "items": [], "total_added": 0})
    if out is not None:
        taken = [f for f in (STATE_FILE, "log.jsonl") if (out / f).exists()]
        if taken and not force:
            raise FileExistsError(f"{out} already holds a run ({', '.join(taken)}): pass --resume to "
                                  "continue it, --force to replace it, or choose another --out")
        out.mkdir(parents=True, exist_ok=True)
        (out / "log.jsonl").unlink(missing_ok=True)
    return controller, trainer


def _trainer_and_executor(backend: str, trainer: OnlineTrainer, config: OnlineConfig, workers: int,
                          device: str) -> tuple[Any, Any]:
    """The trainer handle and the executor of ``backend`` (Ray already started for ``"ray"``)."""
    model_config = trainer.model.config.to_dict()
    if backend == "ray":
        return RayTrainer(trainer, config.learn), RayExecutor(workers, config, model_config)
    handle = LocalTrainer(trainer, config.learn)
    executor = InProcessExecutor(trainer.model, config, device) if workers == 1 else \
        PoolExecutor(workers, config, model_config)
    return handle, executor


def throughput(result: OnlineResult) -> dict[str, float]:
    """Trials and trainer steps per hour of wall time."""
    hours = result.elapsed / 3600 if result.elapsed > 0 else math.nan
    return {"trials_per_hour": result.trials / hours, "steps_per_hour": result.trainer_steps / hours}
