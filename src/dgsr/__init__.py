"""dgsr: symbolic regression by Monte-Carlo tree search with a learned mutation policy (DGSR-MCTS)."""

from __future__ import annotations

from .expression import Expression

__version__ = "0.1.0"

__all__ = ["Expression", "SymbolicRegressor", "__version__", "load_policy"]


def __getattr__(name: str):
    # Lazy imports keep `import dgsr` light (no scikit-learn / torch until used).
    if name == "SymbolicRegressor":
        from .regressor import SymbolicRegressor

        return SymbolicRegressor
    if name == "load_policy":
        from .policies import load_policy

        return load_policy
    raise AttributeError(f"module 'dgsr' has no attribute {name!r}")
