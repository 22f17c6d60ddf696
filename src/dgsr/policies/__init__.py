"""Mutation policies that need no training: uniform, semantic and mixtures, and
:func:`load_policy`, which turns a ``policy=`` argument into a policy object."""

from dgsr.policies.registry import load_policy

__all__ = ["load_policy"]
