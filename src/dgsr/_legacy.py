"""Module paths of dgsr 0.1.0, kept importable for one release after the layer regroup.

Pickles name classes by module path: a ``model.pkl`` written by 0.1.0 refers to
``dgsr.regressor.SymbolicRegressor``, ``dgsr.expression.Expression`` and ``dgsr.scaling.Scaling``,
and an online ``state.pt`` to ``dgsr.mutations.Mutation``. Rather than one shim file per old
module (43 of them, which would bury the new layout under the old one), a finder on
``sys.meta_path`` answers for the old names: importing ``dgsr.regressor`` returns a stand-in
module whose attributes are looked up in the modules the code moved to. It imports nothing until
an old name is asked for, and each such import says, once, where the code now lives.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

#: Old module name -> the new modules that hold what it defined (first match wins).
MOVED: dict[str, tuple[str, ...]] = {
    "dgsr.operators": ("dgsr.core.operators",),
    "dgsr.expression": ("dgsr.core.expression",),
    "dgsr.parser": ("dgsr.core.parser",),
    "dgsr.names": ("dgsr.core.names",),
    "dgsr.display": ("dgsr.core.display",),
    "dgsr.simplify": ("dgsr.core.simplify",),
    "dgsr.evaluate": ("dgsr.core.evaluate",),
    "dgsr.gradients": ("dgsr.core.gradients",),
    "dgsr.constants": ("dgsr.core.constants", "dgsr.core.linear_terms"),
    "dgsr.scaling": ("dgsr.core.exponent_scaling",),
    "dgsr.pareto": ("dgsr.core.pareto",),
    "dgsr.budget": ("dgsr.core.budget",),
    "dgsr.policy": ("dgsr.search.policy",),
    "dgsr.mutations": ("dgsr.search.mutations",),
    "dgsr.parallel": ("dgsr.search.parallel",),
    "dgsr.random_policy": ("dgsr.policies.random",),
    "dgsr.semantic_backprop": ("dgsr.policies.semantic.backprop",),
    "dgsr.operand_library": ("dgsr.policies.semantic.operand_library",),
    "dgsr.semantic_policy": ("dgsr.policies.semantic.policy",),
    "dgsr.mixture_policy": ("dgsr.policies.mixture",),
    "dgsr.tokens": ("dgsr.neural.tokens",),
    "dgsr.model": ("dgsr.neural.model", "dgsr.neural.model_config", "dgsr.neural.numeric_features"),
    "dgsr.sampling": ("dgsr.neural.sampling",),
    "dgsr.neural_policy": ("dgsr.neural.policy",),
    "dgsr.checkpoint": ("dgsr.neural.checkpoint", "dgsr.core.files"),
    "dgsr.generator": ("dgsr.training.generator",),
    "dgsr.dismantle": ("dgsr.training.dismantle",),
    "dgsr.corpus": ("dgsr.training.corpus",),
    "dgsr.teacher": ("dgsr.training.teacher",),
    "dgsr.pretrain": ("dgsr.training.pretrain", "dgsr.training.pretrain_config", "dgsr.training.batches",
                      "dgsr.training.optim", "dgsr.cli.pretrain"),
    "dgsr.regressor": ("dgsr.estimator.regressor", "dgsr.estimator.front"),
    "dgsr.selection": ("dgsr.estimator.model_selection",),
    "dgsr.validation": ("dgsr.estimator.input_checks",),
    "dgsr.features": ("dgsr.estimator.features",),
    "dgsr.export": ("dgsr.estimator.export",),
    "dgsr.plotting": ("dgsr.estimator.plotting",),
    "dgsr.progress": ("dgsr.estimator.progress",),
    "dgsr.search_cli": ("dgsr.cli.search",),
    "dgsr.data_cli": ("dgsr.cli.data",),
}


class _MovedModule(types.ModuleType):
    """Stands in for an old module: attribute lookups go to the modules the code moved to."""

    def __init__(self, name: str, targets: tuple[str, ...]) -> None:
        super().__init__(name, f"Moved: see {', '.join(targets)}.")
        self._targets = targets

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self._targets:
            try:
                module = importlib.import_module(target)
            except ModuleNotFoundError as err:
                if err.name != target:
                    raise
                continue
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} (moved to {self._targets[0]}) has no attribute {attr!r}")


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        warnings.warn(f"{spec.name} moved to {MOVED[spec.name][0]} in dgsr 0.2; the old path is kept for "
                      "one release", DeprecationWarning, stacklevel=2)
        return _MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module) -> None:
        pass


def install() -> None:
    """Answer for the old module names (idempotent)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
