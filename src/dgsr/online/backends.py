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
* ``ray``: N ``SearchWorker`` actors and one ``TrainerActor``, on a local Ray instance started
  here (``address=None``) or an existing cluster (``address="host:port"`` or ``"auto"``). Weights
  travel through Ray's object store. A worker that dies has its trial re-queued (same seed) and
  is replaced; the run goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import math
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dgsr.neural.model import ModelConfig, PolicyModel

from .controller import (
    Controller,
    Dataset,
    DatasetResult,
    OnlineConfig,
    TrialOutcome,
    TrialSpec,
    make_policy,
    run_trial,
)
from .state import STATE_FILE, load_state, save_state
from .trainer import OnlineTrainer, TrainerConfig

BACKENDS = ("local", "ray")
POLICY_FILE = "policy.safetensors"


class WorkerLost(RuntimeError):
    """The worker running a trial died before returning it."""


# ---------------------------------------------------------------------- search worker (any process)
class SearchWorker:
    """Runs trials on its own copy of the model, reloading weights only when their version changes."""

    def __init__(self, config: OnlineConfig, model_config: dict, name: str = "worker", threads: int | None = 1):
        if threads:
            torch.set_num_threads(threads)  # one thread per searcher: workers share the cores
        self.config = config
        self.model = PolicyModel(ModelConfig.from_dict(model_config)).eval()
        self.version: int | None = None
        self.name = name

    def pid(self) -> int:
        return os.getpid()

    def run(self, spec: TrialSpec, data: tuple[np.ndarray, np.ndarray], version: int, weights: list[Any],
            time_left: float | None) -> TrialOutcome:
        """Run ``spec`` on ``data``; ``weights`` is ``[state dict]``, ``[file path]`` or ``[Ray ObjectRef]``,
        loaded only when ``version`` is newer than the worker's."""
        if version != self.version:
            state = weights[0]
            if isinstance(state, str):  # the process pool stages weights in a file
                state = torch.load(state, map_location="cpu", weights_only=True)
            elif not isinstance(state, dict):  # a Ray ObjectRef, fetched only when the version changed
                import ray

                state = ray.get(state)
            self.model.load_state_dict(state)
            self.version = version
        X, y = data
        return run_trial(spec, X, y, make_policy(self.model, spec), self.config, time_left=time_left,
                         worker=f"{self.name}:{os.getpid()}")


_POOL_WORKER: SearchWorker | None = None


def _pool_run(config: OnlineConfig, model_config: dict, spec: TrialSpec, data_file: str,
              version: int, weights_file: str, time_left: float | None) -> TrialOutcome:
    global _POOL_WORKER
    if _POOL_WORKER is None:
        _POOL_WORKER = SearchWorker(config, model_config, name="pool")
    with np.load(data_file) as data:
        X, y = data["X"], data["y"]
    return _POOL_WORKER.run(spec, (X, y), version, [weights_file], time_left)


def _pool_init() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


# ---------------------------------------------------------------------- executors
class _InProcess:
    """Runs each trial at submission, in this process, on the trainer's own model."""

    def __init__(self, model: PolicyModel, config: OnlineConfig, device: str):
        self.model, self.config, self.device = model, config, device
        self.busy = 0

    def free(self) -> int:
        return 1 - self.busy

    def submit(self, spec: TrialSpec, dataset: Dataset, weights: Callable[[], tuple[int, Any]],
               time_left: float | None) -> Any:
        outcome = run_trial(spec, dataset.X, dataset.y, make_policy(self.model, spec, self.device), self.config,
                            time_left=time_left)
        future: cf.Future = cf.Future()
        future.set_result(outcome)
        self.busy += 1
        return future

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        return list(handles)

    def result(self, handle: Any) -> TrialOutcome:
        self.busy -= 1
        return handle.result()

    def describe(self, handle: Any) -> dict:
        return {"pid": os.getpid(), "worker": "local"}

    def close(self) -> None:
        pass


class _Pool:
    """A ``spawn`` process pool of searchers (spawn: forking a process that holds torch is unsafe)."""

    def __init__(self, workers: int, config: OnlineConfig, model_config: dict):
        self.workers, self.config, self.model_config = workers, config, model_config
        self.pool: cf.ProcessPoolExecutor | None = None
        # future -> (the pool running it, the staged weights file its worker may not have read yet)
        self.busy: dict[Any, tuple[cf.ProcessPoolExecutor, str]] = {}
        # Weights and datasets travel as files, so task messages stay small: with megabytes of
        # weights in every message we saw the interpreter hang at exit after a worker was killed
        # mid-trial (the executor's threads waiting on the dead pool); with small messages, and a
        # broken pool's survivors killed (_discard), it did not recur.
        self.stage = Path(tempfile.mkdtemp(prefix="dgsr-pool-"))
        self.staged: dict[str, str] = {}

    def _staged(self, key: str, write: Callable[[Path], None]) -> str:
        if key not in self.staged:
            path = self.stage / key
            tmp = path.with_name(path.name + ".tmp")
            write(tmp)
            os.replace(tmp, path)  # a worker never reads a half-written file
            self.staged[key] = str(path)
        return self.staged[key]

    def _executor(self) -> cf.ProcessPoolExecutor:
        if self.pool is None:
            self.pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                               initializer=_pool_init)
        return self.pool

    def _drop_pool(self) -> None:
        _discard(self.pool)
        self.pool = None

    def free(self) -> int:
        return self.workers - len(self.busy)

    def submit(self, spec: TrialSpec, dataset: Dataset, weights: Callable[[], tuple[int, Any]],
               time_left: float | None) -> Any:
        version, state = weights()
        current = f"weights-{version}.pt"
        in_use = {key for _, key in self.busy.values()} | {current}
        for key in [k for k in self.staged if k.startswith("weights-") and k not in in_use]:
            with contextlib.suppress(OSError):
                os.remove(self.staged.pop(key))
        weights_file = self._staged(current, lambda p: torch.save(state, p))
        data_file = self._staged(f"data-{_safe_name(dataset.name)}-{id(dataset.X)}.npz",
                                 lambda p: _save_npz(p, dataset.X, dataset.y))
        args = (_pool_run, self.config, self.model_config, spec, data_file, version, weights_file, time_left)
        pool = self._executor()
        try:
            future = pool.submit(*args)
        except (cf.process.BrokenProcessPool, ValueError, OSError):
            # A worker died and the pool is broken, or still breaking (its pipes already closed,
            # so starting a replacement process fails): start a fresh pool.
            self._drop_pool()
            pool = self._executor()
            future = pool.submit(*args)
        self.busy[future] = (pool, current)
        return future

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = cf.wait(handles, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return list(done)

    def result(self, handle: Any) -> TrialOutcome:
        pool, _ = self.busy.pop(handle)
        try:
            return handle.result()
        except cf.process.BrokenProcessPool as err:
            if self.pool is pool:  # every trial of a broken pool is lost: the next submit starts a new one
                self._drop_pool()
            raise WorkerLost(str(err)) from err

    def describe(self, handle: Any) -> dict:
        return {"pid": None, "worker": "pool"}

    def close(self) -> None:
        if self.pool is not None:
            self._drop_pool()
        shutil.rmtree(self.stage, ignore_errors=True)


def _discard(pool: cf.ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting, and kill its workers: after a worker crash the survivors
    can stay blocked on the pool's queues, and the interpreter would wait for them at exit."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]


def _save_npz(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object: np.savez would append ".npz" to a path
        np.savez(fh, X=X, y=y)


class _Ray:
    """Search workers as Ray actors; the trainer is a :class:`TrainerActor` (see :class:`_RayTrainer`)."""

    def __init__(self, workers: int, config: OnlineConfig, model_config: dict, worker_cpus: float = 1.0):
        import ray

        self.ray = ray
        self.config, self.model_config = config, model_config
        # Ray sets OMP_NUM_THREADS to an actor's num_cpus (1); SearchWorker also sets torch's threads.
        # No runtime_env here: one would make Ray start fresh worker processes instead of its pre-started ones.
        self.options = {"num_cpus": worker_cpus, "max_restarts": 0}
        self.actor_class = ray.remote(SearchWorker)
        self.idle: list[Any] = []
        self.pids: dict[Any, int] = {}
        self.busy: dict[Any, Any] = {}  # ObjectRef -> actor
        self.data_refs: dict[str, Any] = {}
        self._weights: tuple[int, Any] | None = None
        self.n_started = 0
        for _ in range(workers):
            self._start_actor()

    def _start_actor(self) -> None:
        actor = self.actor_class.options(**self.options).remote(self.config, self.model_config,
                                                                 f"ray{self.n_started}")
        self.n_started += 1
        self.pids[actor] = self.ray.get(actor.pid.remote())
        self.idle.append(actor)

    def free(self) -> int:
        return len(self.idle)

    def submit(self, spec: TrialSpec, dataset: Dataset, weights: Callable[[], tuple[int, Any]],
               time_left: float | None) -> Any:
        version, ref = weights()
        if dataset.name not in self.data_refs:  # each dataset goes to the object store once
            self.data_refs[dataset.name] = self.ray.put((dataset.X, dataset.y))
        actor = self.idle.pop(0)
        handle = actor.run.remote(spec, self.data_refs[dataset.name], version, [ref], time_left)
        self.busy[handle] = actor
        return handle

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        return ready

    def result(self, handle: Any) -> TrialOutcome:
        from ray.exceptions import ActorDiedError, ObjectLostError, RayActorError, WorkerCrashedError

        actor = self.busy.pop(handle)
        try:
            outcome = self.ray.get(handle)
        except (RayActorError, ActorDiedError, WorkerCrashedError, ObjectLostError) as err:
            self.pids.pop(actor, None)
            self._start_actor()  # replace the dead worker
            raise WorkerLost(str(err)) from err
        self.idle.append(actor)
        return outcome

    def describe(self, handle: Any) -> dict:
        actor = self.busy.get(handle)
        return {"pid": self.pids.get(actor), "worker": "ray"}

    def close(self) -> None:
        for actor in [*self.idle, *self.busy.values()]:
            with contextlib.suppress(Exception):  # an actor that already died
                self.ray.kill(actor)
        self.idle, self.busy = [], {}


# ---------------------------------------------------------------------- trainers
class _LocalTrainer:
    """The trainer in the driver process."""

    def __init__(self, trainer: OnlineTrainer, learn: bool):
        self.trainer, self.learn = trainer, learn
        self._cache: tuple[int, Any] | None = None

    @property
    def version(self) -> int:
        return self.trainer.version

    def record(self, outcome: TrialOutcome) -> dict[str, float]:
        if not self.learn:
            return {}
        self.trainer.buffers.add_trial(outcome.points, [outcome.solution_path], outcome.critic_targets)
        return self.trainer.train()

    def weights(self) -> tuple[int, Any]:
        if self._cache is None or self._cache[0] != self.trainer.version:
            self._cache = self.trainer.weights()
        return self._cache

    def model_state(self) -> tuple[int, dict]:
        return self.trainer.weights()

    def state_dict(self) -> dict[str, Any]:
        return self.trainer.state_dict()

    def buffer_sizes(self) -> tuple[int, int]:
        return len(self.trainer.buffers.mutations), len(self.trainer.buffers.critic)

    def close(self) -> None:
        pass


class TrainerActor:
    """The trainer as a Ray actor: owns the model, optimiser and buffers."""

    def __init__(self, state: dict[str, Any], learn: bool, threads: int | None = 1):
        if threads:
            torch.set_num_threads(threads)
        self.local = _LocalTrainer(OnlineTrainer.from_state_dict(state), learn)

    def record(self, outcome: TrialOutcome) -> tuple[int, dict[str, float]]:
        stats = self.local.record(outcome)
        return self.local.version, stats

    def weights(self) -> tuple[int, dict]:
        return self.local.trainer.weights()

    def model_weights(self) -> dict:
        """The state dict alone: what a worker's weights ObjectRef resolves to."""
        return self.local.trainer.weights()[1]

    def state_dict(self) -> dict[str, Any]:
        return self.local.state_dict()

    def buffer_sizes(self) -> tuple[int, int]:
        return self.local.buffer_sizes()


class _RayTrainer:
    """Driver-side handle of a :class:`TrainerActor`."""

    def __init__(self, trainer: OnlineTrainer, learn: bool, trainer_cpus: float = 0.0):
        import ray

        self.ray = ray
        self.actor = ray.remote(TrainerActor).options(num_cpus=trainer_cpus, max_restarts=0).remote(
            trainer.state_dict(), learn)
        self.version = trainer.version
        self._ref: tuple[int, Any] | None = None

    def record(self, outcome: TrialOutcome) -> dict[str, float]:
        self.version, stats = self.ray.get(self.actor.record.remote(outcome))
        return stats

    def weights(self) -> tuple[int, Any]:
        if self._ref is None or self._ref[0] != self.version:
            self._ref = (self.version, self.actor.model_weights.remote())  # an ObjectRef: workers fetch it
        return self._ref

    def model_state(self) -> tuple[int, dict]:
        return self.ray.get(self.actor.weights.remote())

    def state_dict(self) -> dict[str, Any]:
        return self.ray.get(self.actor.state_dict.remote())

    def buffer_sizes(self) -> tuple[int, int]:
        return self.ray.get(self.actor.buffer_sizes.remote())

    def close(self) -> None:
        self.ray.kill(self.actor)


# ---------------------------------------------------------------------- the driver loop
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


def drive(controller: Controller, trainer: Any, executor: Any, *, max_time: float | None, max_trials: int | None,
          out: Path | None = None, on_trial: Callable[[dict], Any] | None = None,
          on_dispatch: Callable[[dict, TrialSpec], Any] | None = None) -> str:
    """Run trials until ``max_time`` (seconds, counted across resumes) or ``max_trials`` (completed, in all).

    Returns the stop reason: ``"time"``, ``"trials"`` or ``"interrupted"`` (Ctrl-C; state saved).
    """
    start = time.perf_counter()
    in_flight: dict[Any, TrialSpec] = {}
    config = controller.config

    def elapsed() -> float:
        return controller.elapsed_before + time.perf_counter() - start

    def time_left() -> float | None:
        return None if max_time is None else max_time - elapsed()

    def may_dispatch() -> bool:
        if max_trials is not None and controller.completed + len(in_flight) >= max_trials:
            return False
        return max_time is None or time_left() > 0

    last_checkpoint = [time.perf_counter()]

    def checkpoint() -> None:
        last_checkpoint[0] = time.perf_counter()
        if out is not None:
            controller_elapsed = controller.elapsed_before
            controller.elapsed_before = elapsed()
            try:
                write_checkpoint(out, controller, trainer)
            finally:
                controller.elapsed_before = controller_elapsed

    reason = "trials"
    try:
        while True:
            while executor.free() > 0 and may_dispatch():
                spec = controller.next_spec(trainer.version)
                handle = executor.submit(spec, controller.datasets[spec.dataset], trainer.weights, time_left())
                in_flight[handle] = spec
                if on_dispatch is not None:
                    on_dispatch(executor.describe(handle), spec)
            if not in_flight:
                reason = "trials" if max_trials is not None and controller.completed >= max_trials else "time"
                break
            for handle in executor.wait(list(in_flight), timeout=1.0):
                spec = in_flight.pop(handle)
                try:
                    outcome = executor.result(handle)
                except WorkerLost:
                    controller.requeue(spec)
                    continue
                line = controller.record(outcome)
                line.update({f"train_{k}": round(v, 5) for k, v in trainer.record(outcome).items()})
                line["trainer_steps"] = trainer.version
                line["elapsed"] = round(elapsed(), 2)
                if out is not None:
                    with open(out / "log.jsonl", "a") as fh:
                        fh.write(json.dumps(line) + "\n")
                if on_trial is not None:
                    on_trial(line)
                every = getattr(config, "checkpoint_seconds", math.inf)  # states saved before it existed
                if (controller.completed % config.checkpoint_every == 0
                        or time.perf_counter() - last_checkpoint[0] >= every):
                    checkpoint()
    except KeyboardInterrupt:
        reason = "interrupted"
        for spec in in_flight.values():  # lost with their workers: they run again after --resume
            controller.requeue(spec)
        in_flight.clear()
    except Exception:
        for spec in in_flight.values():  # keep what is done; a resumed run re-runs these
            controller.requeue(spec)
        controller.elapsed_before = elapsed()
        if out is not None:  # best effort: the error being raised matters more than this checkpoint
            with contextlib.suppress(Exception):
                write_checkpoint(out, controller, trainer)
        raise
    finally:
        executor.close()
    controller.elapsed_before = elapsed()
    if out is not None:
        write_checkpoint(out, controller, trainer)
    return reason


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
        _atomic_text(folder / f"{_safe(r.name)}.json", json.dumps(data, indent=1, default=_json_default))
        sel = data["selected"] or {}
        rows.append({"dataset": r.name, "synthetic": r.synthetic, "trials": r.trials, "solved_trials": r.solved_trials,
                     "first_solved_trial": r.first_solved, "r2": sel.get("r2"), "size": sel.get("size"),
                     "equation": sel.get("equation"), "best_r2": (data["best"] or {}).get("r2")})
    frame = pd.DataFrame(rows)
    _atomic_text(out / "results.csv", frame.to_csv(index=False))


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value)}")


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "dataset"


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


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
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if max_time is None and max_trials is None:
        raise ValueError("give max_time or max_trials")
    out_path = Path(out) if out is not None else None
    state_path = out_path / STATE_FILE if out_path is not None else None
    if resume and state_path is not None and state_path.is_file():
        state = load_state(state_path)
        controller = Controller.from_state_dict(state["controller"])
        trainer = OnlineTrainer.from_state_dict(state["trainer"], device=device)
        torch.set_rng_state(state["torch_rng"])
        # Trials logged after the checkpoint are lost with the crash and run again: log them once.
        _atomic_text(out_path / "log.jsonl", "".join(json.dumps(line) + "\n" for line in controller.log))
    else:
        if model is None:
            raise ValueError("a model is needed to start a run (resume needs OUT/state.pt)")
        config = config or OnlineConfig()
        controller = Controller(datasets, config)
        trainer = OnlineTrainer(model, trainer_config or TrainerConfig(seed=config.seed), device=device)
        trainer.buffers.min_visits = config.min_visits
        for buf, cap in ((trainer.buffers.mutations, config.mutation_capacity),
                         (trainer.buffers.critic, config.critic_capacity)):
            buf.load_state_dict({"capacity": cap, "items": [], "total_added": 0})
        if out_path is not None:
            taken = [f for f in (STATE_FILE, "log.jsonl") if (out_path / f).exists()]
            if taken and not force:
                raise FileExistsError(f"{out_path} already holds a run ({', '.join(taken)}): pass --resume to "
                                      "continue it, --force to replace it, or choose another --out")
            out_path.mkdir(parents=True, exist_ok=True)
            (out_path / "log.jsonl").unlink(missing_ok=True)
    learn = controller.config.learn
    model_config = trainer.model.config.to_dict()
    started_ray = False
    if backend == "ray":
        import ray

        if not ray.is_initialized():
            if address is None:
                ray.init(num_cpus=ray_cpus or workers, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            started_ray = True
        handle: Any = _RayTrainer(trainer, learn)
        executor: Any = _Ray(workers, controller.config, model_config)
    else:
        handle = _LocalTrainer(trainer, learn)
        executor = _InProcess(trainer.model, controller.config, device) if workers == 1 else \
            _Pool(workers, controller.config, model_config)
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


def throughput(result: OnlineResult) -> dict[str, float]:
    """Trials and trainer steps per hour of wall time."""
    hours = result.elapsed / 3600 if result.elapsed > 0 else math.nan
    return {"trials_per_hour": result.trials / hours, "steps_per_hour": result.trainer_steps / hours}
