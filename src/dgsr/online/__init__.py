"""Expert iteration (online learning) over many datasets: Section 3.2 of the paper.

* :mod:`~dgsr.online.buffers`: the mutation and critic FIFO buffers;
* :mod:`~dgsr.online.trainer`: updates of M_theta and C_psi (equal shares and weights, corpus mixed in);
* :mod:`~dgsr.online.controller`: the dataset queue, per-trial hyper-parameters (Appendix E.3), results;
* :mod:`~dgsr.online.backends`: the driver loop and :func:`run_online`, over one process or a local
  process pool (:mod:`~dgsr.online.local_backend`) or Ray actors (:mod:`~dgsr.online.ray_backend`);
* :mod:`~dgsr.online.state`: atomic checkpoints of the whole learning state (exact resume);
* :mod:`~dgsr.online.finetune`: the estimator's ``finetune=True`` mode on one dataset.

Importing this package imports torch (the trainer); :mod:`dgsr.search.mcts` does not depend on it.
"""

from .backends import OnlineResult, run_online, throughput
from .buffers import CriticItem, ExpertBuffers, FIFOBuffer, MutationItem, Points
from .controller import Controller, Dataset, DatasetResult, OnlineConfig, TrialOutcome, TrialSpec, run_trial
from .trainer import OnlineTrainer, TrainerConfig

__all__ = [
    "Controller", "CriticItem", "Dataset", "DatasetResult", "ExpertBuffers", "FIFOBuffer", "MutationItem",
    "OnlineConfig", "OnlineResult", "OnlineTrainer", "Points", "TrainerConfig", "TrialOutcome", "TrialSpec",
    "run_online", "run_trial", "throughput",
]
