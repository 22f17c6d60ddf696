"""Settings of supervised pre-training (:mod:`dgsr.training.pretrain`) and their checks."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (defaults sized for a 2-core CPU)."""

    model: str = "small"  # ModelConfig preset
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 300
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    critic_weight: float = 0.5  # the action loss is the main job; the critic is refined by search
    eval_every: int = 250
    checkpoint_every: int = 250
    val_examples: int = 512
    seed: int = 0
    mutation_size: float = 10
    n_points: int = 100
    #: weight of the mantissa tokens in the action loss: a dismantled constant is a random draw
    #: (near-uniform loss of ~9 nats, a quarter of the total), and the search refits constants
    mantissa_weight: float = 1.0
    #: weight of the auxiliary "which symbols does the ground truth contain" loss (0 = off)
    aux_weight: float = 0.0
    #: "corpus" (dgsr.training.corpus.example_stream) or "generator" (dgsr.training.generator + dgsr.training.dismantle
    #: directly); "auto" means "corpus", resolved when training starts and recorded.
    data: str = "auto"
    #: point encoder of a new model ("variables" or "points"; "" = the preset's)
    encoder: str = ""
    #: dismantling steps taken from each generated problem (0 = its whole path): fewer steps per
    #: problem put more distinct datasets in each batch, which is what the point encoder learns from
    steps_per_problem: int = 0
    #: share of each batch labelled by the semantic-policy teacher (:mod:`dgsr.training.teacher`) instead of
    #: the dismantling corpus: targets that depend on the x-y pairing (issue 13, item 3)
    teacher_share: float = 0.0
    #: comma-separated files of semantic-search solution paths (:func:`dgsr.training.teacher.collect_search_paths`,
    #: ``bench/training/collect_paths.py``) and the share of each batch drawn from their steps
    paths: str = ""
    paths_share: float = 0.0
    #: comma-separated path files held out of training: their steps' action loss is logged at each
    #: evaluation (``val_paths_loss``; and with y shuffled, ``val_paths_gap``): continued training
    #: on a few thousand paths can memorise them, and this is the figure that shows it.
    val_paths: str = ""

    def __post_init__(self) -> None:
        for name in ("teacher_share", "paths_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.teacher_share + self.paths_share > 1.0:
            raise ValueError(f"teacher_share + paths_share must be at most 1, got "
                             f"{self.teacher_share} + {self.paths_share}")
        if self.paths_share > 0 and not self.paths:
            raise ValueError("paths_share > 0 needs path files (paths=...)")
        shared = set(filter(None, self.paths.split(","))) & set(filter(None, self.val_paths.split(",")))
        if shared:
            raise ValueError(f"a path file cannot be both trained on and held out: {sorted(shared)}")



def resolve_data(config: TrainConfig) -> TrainConfig:
    """``config`` with ``data="auto"`` replaced by the source it stands for (recorded, so resumes keep it)."""
    return config if config.data != "auto" else replace(config, data="corpus")
