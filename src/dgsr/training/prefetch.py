"""Training batches built ahead of time in worker processes.

The batch of step ``s`` is a pure function of ``(config, s)`` (:func:`dgsr.training.batches.batch_examples`),
so workers can build the next steps' batches while the trainer runs the current one, and the run is
the same number for number whatever the worker count. On a GPU the model step takes a few
milliseconds and generating a batch in the trainer's process takes tens: without workers the
accelerator waits on one CPU core.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from dgsr.runtime.threads import pin_process_threads
from dgsr.training.batches import Batch, batch_examples, collate
from dgsr.training.pretrain_config import TrainConfig


def step_batch(config: TrainConfig, step: int) -> Batch:
    """The collated (CPU) batch that training step ``step + 1`` trains on."""
    rng = np.random.default_rng([config.seed, step, 1])
    return collate(batch_examples(config, step), rng)


def _worker_init() -> None:
    # One process per core: torch's and BLAS's own thread pools (the teacher's least squares run in
    # numpy) would put every core's worth of threads in each worker.
    import torch  # noqa: F401  (loaded first, so that its thread pool is sized too)

    pin_process_threads(1)


class BatchPrefetcher:
    """Iterates over ``step_batch(config, s)`` for ``s = start, start + 1, ...`` in order.

    ``workers = 0`` builds each batch in this process when it is asked for. ``workers > 0`` keeps
    ``2 * workers`` steps in flight in a pool of ``workers`` processes started with "spawn" (safe
    after CUDA is initialised in the parent). Use it as a context manager so the pool is shut down
    when training stops early.
    """

    def __init__(self, config: TrainConfig, start: int, workers: int = 0) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.config, self.next_step, self.workers = config, start, workers
        self._pool: ProcessPoolExecutor | None = None
        self._pending: deque[Future] = deque()
        self._submitted = start

    def __enter__(self) -> BatchPrefetcher:  # noqa: PYI034 (a final class)
        if self.workers:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_init)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        step = self.next_step
        self.next_step += 1
        if self._pool is None:
            return step_batch(self.config, step)
        while len(self._pending) < 2 * self.workers:
            self._pending.append(self._pool.submit(step_batch, self.config, self._submitted))
            self._submitted += 1
        return self._pending.popleft().result()
