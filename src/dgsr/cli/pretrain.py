"""``dgsr pretrain``: the command line of supervised pre-training (:mod:`dgsr.training.pretrain`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dgsr.neural import require_torch
from dgsr.neural.model_config import ModelConfig
from dgsr.runtime.threads import torch_threads
from dgsr.training.pretrain_config import TrainConfig


def add_subparser(subparsers: Any) -> None:
    """``dgsr pretrain``: see the module docstring."""
    p = subparsers.add_parser("pretrain", help="pre-train the neural mutation policy on synthetic data",
                              description="Pre-train the mutation policy and critic on the synthetic corpus.")
    p.add_argument("--config", default="small",
                   help="model preset: small (CPU), medium (GPU; ships within 16 MiB in half precision), large (GPU), tiny")
    p.add_argument("--steps", type=int, required=True, help="total optimisation steps (a resume continues to it)")
    p.add_argument("--out", required=True, help="folder for ckpt.pt, model.safetensors and log.jsonl")
    p.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if it exists")
    p.add_argument("--init", default=None, metavar="WEIGHTS",
                   help="start from a model file (e.g. the shipped weights) with a fresh optimizer")
    p.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    p.add_argument("--lr", type=float, default=TrainConfig.lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", choices=("auto", "corpus", "generator"), default="auto",
                   help="example source (default: auto, the corpus of dgsr.training.corpus)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--eval-every", type=int, default=TrainConfig.eval_every)
    p.add_argument("--val-examples", type=int, default=TrainConfig.val_examples, help="held-out examples")
    p.add_argument("--points", type=int, default=TrainConfig.n_points, help="points per dataset")
    p.add_argument("--mutation-size", type=float, default=TrainConfig.mutation_size,
                   help="largest operand B of a dismantling step (paper Table 4: 1, 10 or inf)")
    p.add_argument("--mantissa-weight", type=float, default=TrainConfig.mantissa_weight,
                   help="weight of constant mantissa tokens in the action loss")
    p.add_argument("--aux-weight", type=float, default=TrainConfig.aux_weight,
                   help="weight of the auxiliary 'symbols of the ground truth' loss (adds its head; 0 = off)")
    p.add_argument("--steps-per-problem", type=int, default=TrainConfig.steps_per_problem,
                   help="dismantling steps per generated problem (0 = its whole path; fewer = more datasets per batch)")
    p.add_argument("--encoder", choices=("variables", "points"), default="",
                   help="point encoder (default: the preset's, 'variables'; 'points' = the paper's one token "
                        "per data point); with --init, a file with another encoder keeps all its other weights")
    p.add_argument("--teacher-share", type=float, default=TrainConfig.teacher_share,
                   help="share of each batch labelled by the semantic-policy teacher (0-1; dgsr.training.teacher)")
    p.add_argument("--paths", default="", metavar="FILES",
                   help="comma-separated semantic-search solution-path files (bench/training/collect_paths.py)")
    p.add_argument("--paths-share", type=float, default=TrainConfig.paths_share,
                   help="share of each batch drawn from the --paths steps (0-1)")
    p.add_argument("--val-paths", default="", metavar="FILES",
                   help="comma-separated path files held out of training: their action loss is logged at "
                        "each evaluation (val_paths_loss, and val_paths_gap with y shuffled)")
    p.add_argument("--workers", type=int, default=0,
                   help="processes that build the coming batches ahead of time (0 = in this process); "
                        "the run is the same for any count")
    p.add_argument("--max-minutes", type=float, default=None, help="stop (with a checkpoint) after this long")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``dgsr pretrain``."""
    # torch is imported here, not at the top: without it the command still parses and says how to
    # install it (the CLI skips a subcommand whose module fails to import).
    require_torch("dgsr pretrain")
    from dgsr.training.pretrain import train  # loads torch, whose thread count --threads sets below

    ModelConfig.preset(args.config)  # fail early on an unknown name
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size), ("--eval-every", args.eval_every),
                        ("--val-examples", args.val_examples), ("--points", args.points)):
        if value < 1:
            raise ValueError(f"{flag} must be a positive integer, got {value}")
    if not args.lr > 0:
        raise ValueError(f"--lr must be positive, got {args.lr}")
    if not 0.0 <= args.teacher_share <= 1.0:
        raise ValueError(f"--teacher-share must be in [0, 1], got {args.teacher_share}")
    config = TrainConfig(model=args.config, batch_size=args.batch_size, lr=args.lr, seed=args.seed, data=args.data,
                         eval_every=args.eval_every, checkpoint_every=args.eval_every,
                         val_examples=args.val_examples, n_points=args.points,
                         mutation_size=args.mutation_size, mantissa_weight=args.mantissa_weight,
                         aux_weight=args.aux_weight, encoder=args.encoder,
                         steps_per_problem=args.steps_per_problem, teacher_share=args.teacher_share,
                         paths=args.paths, paths_share=args.paths_share, val_paths=args.val_paths)
    with torch_threads(args.threads or None):  # for this command only: a caller's count comes back
        record = train(config, args.out, args.steps, resume=args.resume, device=args.device,
                       max_seconds=None if args.max_minutes is None else args.max_minutes * 60, init=args.init,
                       workers=args.workers)
    print(json.dumps(record))
    return 0
