"""SRBench-style benchmark harness for dgsr (``dgsr bench``).

Datasets from the offline SRBench copy (``../shared/data``), the SRBench protocol and metrics,
method adapters (dgsr and its variants, Operon, gplearn), a process-isolated resumable runner and a
report with the paper's Figure 3 / Figure 4 plots. Optional dependencies load lazily.
"""

from __future__ import annotations

from .datasets import DatasetRef, Problem, list_datasets, load_problem, resolve_data_dir
from .methods import METHODS, Method, MethodResult, RunBudget, get_method, register_method
from .protocol import is_symbolic_solution, make_split, model_size, r2_score

__all__ = [
    "METHODS",
    "DatasetRef",
    "Method",
    "MethodResult",
    "Problem",
    "RunBudget",
    "get_method",
    "is_symbolic_solution",
    "list_datasets",
    "load_problem",
    "make_split",
    "model_size",
    "r2_score",
    "register_method",
    "resolve_data_dir",
]
