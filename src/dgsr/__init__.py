"""dgsr: symbolic regression by Monte-Carlo tree search with a learned mutation policy (DGSR-MCTS)."""

from __future__ import annotations

__version__ = "0.32.0"

__all__ = ["Expression", "SymbolicRegressor", "__version__", "load_policy"]


def __getattr__(name: str):
    # Lazy imports keep `import dgsr` light (no sympy, scikit-learn or torch until used): the
    # command line imports this package before it knows whether it only prints its version.
    if name == "Expression":
        from dgsr.core.expression import Expression

        return Expression
    if name == "SymbolicRegressor":
        from dgsr.estimator.regressor import SymbolicRegressor

        return SymbolicRegressor
    if name == "load_policy":
        from dgsr.estimator.policy_loading import load_policy

        return load_policy
    raise AttributeError(f"module 'dgsr' has no attribute {name!r}")
