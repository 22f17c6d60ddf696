"""The ``local`` backend of expert iteration: the search in the driver process, or in a local
``spawn`` process pool of searchers (:mod:`dgsr.online.backends` drives either).

* one worker: :class:`InProcessExecutor` runs each trial in the driver, on the very model the
  trainer updates (deterministic, exact resume);
* N workers: :class:`PoolExecutor`, a process pool of :class:`SearchWorker` (one torch thread
  each); the trainer (:class:`LocalTrainer`) runs in the driver between results.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dgsr.neural.model import PolicyModel
from dgsr.neural.model_config import ModelConfig
from dgsr.runtime.files import atomic_write_path
from dgsr.runtime.threads import pin_process_threads
from dgsr.search.workers import discard_pool, spawn_pool

from .controller import Dataset, OnlineConfig, TrialOutcome, TrialSpec, make_policy, run_trial
from .trainer import OnlineTrainer


class WorkerLost(RuntimeError):
    """The worker running a trial died before returning it."""


# ---------------------------------------------------------------------- search worker (any process)
class SearchWorker:
    """Runs trials on its own copy of the model, reloading weights only when their version changes."""

    def __init__(self, config: OnlineConfig, model_config: dict, name: str = "worker"):
        # torch's thread count is process-wide: the process that hosts a worker sets it (_pool_init,
        # RaySearchWorker), not the worker, which may share a process with other code.
        self.config = config
        self.model = PolicyModel(ModelConfig.from_dict(model_config)).eval()
        self.version: int | None = None
        self.name = name

    def pid(self) -> int:
        """The id of the process running this worker."""
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


#: The searcher of this pool process. A pool task reaches per-process state only through a module
#: global; this one is set only inside pool worker processes (by the first task each runs).
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
    # a pool process of its own: one thread per searcher, so the workers share the cores
    # (spawn_pool already sets OMP_NUM_THREADS=1 in the worker's environment)
    pin_process_threads(1)



# ---------------------------------------------------------------------- executors
class InProcessExecutor:
    """Runs each trial at submission, in this process, on the trainer's own model.

    Implements :class:`dgsr.online.backends.Executor` (whose methods say what each does).
    """

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


class PoolExecutor:
    """A ``spawn`` process pool of searchers (spawn: forking a process that holds torch is unsafe).

    Implements :class:`dgsr.online.backends.Executor` (whose methods say what each does).
    """

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
        if key not in self.staged:  # atomic: a worker never reads a half-written file
            path = atomic_write_path(self.stage / key, lambda tmp: write(Path(tmp)))
            self.staged[key] = str(path)
        return self.staged[key]

    def _executor(self) -> cf.ProcessPoolExecutor:
        if self.pool is None:
            self.pool = spawn_pool(self.workers, initializer=_pool_init)
        return self.pool

    def _drop_pool(self) -> None:
        discard_pool(self.pool)
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


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]


def _save_npz(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object: np.savez would append ".npz" to a path
        np.savez(fh, X=X, y=y)



# ---------------------------------------------------------------------- trainers
class LocalTrainer:
    """The trainer in the driver process.

    Implements :class:`dgsr.online.backends.TrainerHandle` (whose methods say what each does).
    """

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
