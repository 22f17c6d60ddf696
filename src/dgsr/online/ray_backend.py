"""The ``ray`` backend of expert iteration: search workers and the trainer as Ray actors.

N :class:`RaySearchWorker` actors and one :class:`TrainerActor`, on a local Ray instance or an
existing cluster (:func:`dgsr.online.run_online` starts or joins it). Weights travel through
Ray's object store. A worker that dies has its trial re-queued (same seed) and is replaced; the
run goes on. Ray is imported only when one of these classes is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from dgsr.runtime.threads import set_torch_threads

from .controller import Dataset, OnlineConfig, TrialOutcome, TrialSpec
from .local_backend import LocalTrainer, SearchWorker, WorkerLost
from .trainer import OnlineTrainer


class RaySearchWorker(SearchWorker):
    """A :class:`SearchWorker` as a Ray actor: one torch thread, as the actor's one CPU."""

    def __init__(self, config: OnlineConfig, model_config: dict, name: str = "worker",
                 threads: int | None = 1):
        if threads:
            set_torch_threads(threads)  # an actor is a process of its own: setting it globally is fine
        super().__init__(config, model_config, name)


class RayExecutor:
    """Search workers as Ray actors; the trainer is a :class:`TrainerActor` (see :class:`RayTrainer`).

    Implements :class:`dgsr.online.backends.Executor` (whose methods say what each does).
    """

    def __init__(self, workers: int, config: OnlineConfig, model_config: dict, worker_cpus: float = 1.0):
        import ray

        self.ray = ray
        self.config, self.model_config = config, model_config
        # Ray sets OMP_NUM_THREADS to an actor's num_cpus (1); RaySearchWorker also sets torch's threads.
        # No runtime_env here: one would make Ray start fresh worker processes instead of its pre-started ones.
        self.options = {"num_cpus": worker_cpus, "max_restarts": 0}
        self.actor_class = ray.remote(RaySearchWorker)
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



class TrainerActor:
    """The trainer as a Ray actor: owns the model, optimiser and buffers."""

    def __init__(self, state: dict[str, Any], learn: bool, threads: int | None = 1):
        if threads:
            set_torch_threads(threads)  # an actor is a process of its own: setting it globally is fine
        self.local = LocalTrainer(OnlineTrainer.from_state_dict(state), learn)

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


class RayTrainer:
    """Driver-side handle of a :class:`TrainerActor`.

    Implements :class:`dgsr.online.backends.TrainerHandle` (whose methods say what each does).
    """

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
