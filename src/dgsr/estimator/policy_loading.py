"""Policy loading by name: the ``policy=`` argument of the estimator and the CLI turned into a
:class:`~dgsr.search.policy.Policy`.

``"random"`` is the uniform :class:`~dgsr.policies.random.RandomPolicy`; ``"learned"`` the semantic
policy with the shipped learned prior (:mod:`dgsr.policies.learned`), and a path to a ``.json``
weights file the same with those weights; ``"neural"`` the shipped
pretrained weights (node values from accuracy: their critic is only pre-trained); a path to a
``.safetensors`` file a checkpoint (weights with the model config in the file's metadata,
CONTRACTS §4); a Policy object passes through. The neural
policy's module imports torch, so it is imported only when asked for.

It lives in the estimator layer because it reaches every policy, the neural one included; the
``policies/`` layer before ``neural/`` never imports it. Worker processes build their policy with
``functools.partial(load_policy, ...)``, which pickles by this module's path.
"""

from __future__ import annotations

import os

from dgsr.neural import require_torch  # torch-free: only says how to install torch when it is absent
from dgsr.neural.device import check_device
from dgsr.search.policy import Policy

#: The names ``policy=`` accepts besides a checkpoint path or a Policy object.
BUILTIN_POLICIES = ("semantic", "learned", "neural", "random")
#: What an object needs to be used as a policy (the :class:`~dgsr.search.policy.Policy` Protocol).
POLICY_MEMBERS = ("prepare", "propose", "value", "has_critic", "max_variables")


def load_policy(spec: str | os.PathLike | Policy, *, device: str = "cpu",
                operators: tuple[str, ...] | None = None) -> Policy:
    """The policy named by ``spec``.

    How the allowed operators reach a policy: a built-in policy takes them as its ``operators``
    constructor argument (canonical Table 1 names, None = all) and proposes nothing else; the
    search (``SearchConfig.operators``) also rejects any proposal that uses another operator, so
    a Policy object passed in (which is returned as is) stays correct, only less efficient.

    Parameters
    ----------
    spec:
        ``"semantic"``, ``"learned"``, ``"neural"``, ``"random"``, a path to a ``.safetensors``
        checkpoint or to learned-prior ``.json`` weights, or a Policy.
    device:
        Torch device for the neural policy (ignored by the others).
    operators:
        Allowed operators (from :func:`dgsr.core.operators.resolve_operators`), or None for all.

    Raises
    ------
    FileNotFoundError
        A checkpoint or weights path that does not exist.
    dgsr.policies.learned.weights.WeightsError
        A learned-prior weights file that cannot be used (a ValueError naming the file and why).
    ValueError
        Anything else.
    dgsr.neural.TorchMissingError
        The neural policy or a checkpoint without torch installed (an ImportError naming the fix).
    """
    if not isinstance(spec, (str, os.PathLike)):
        if isinstance(spec, Policy):
            return spec
        missing = [name for name in POLICY_MEMBERS if not hasattr(spec, name)]
        raise ValueError(f"policy must be one of {BUILTIN_POLICIES}, a checkpoint path or a Policy object, got "
                         f"{spec!r}" + (f" (it lacks {', '.join(missing)})" if missing else ""))
    text = os.fspath(spec)
    if text == "random":
        from dgsr.policies.random import RandomPolicy

        return RandomPolicy(operators=operators)
    if text == "semantic":
        from dgsr.policies.semantic.policy import SemanticPolicy

        return SemanticPolicy(operators=operators)
    if text == "learned" or text.endswith(".json"):
        from dgsr.policies.learned.policy import LearnedPriorPolicy

        if text != "learned" and not os.path.isfile(text):
            raise FileNotFoundError(f"learned-prior weights not found: {text}")
        return LearnedPriorPolicy(None if text == "learned" else text, operators=operators)
    if text == "neural":
        require_torch('policy="neural"')  # before the device check, which needs torch
        return _shipped_neural(check_device(device), operators)
    if text.endswith(".safetensors") or os.path.exists(text):
        if not os.path.isfile(text):
            raise FileNotFoundError(f"policy checkpoint not found: {text}")
        require_torch(f"the checkpoint policy {text!r}")
        check_device(device)
        from dgsr.neural.policy import NeuralPolicy

        return NeuralPolicy.from_checkpoint(text, device=device, operators=operators)
    raise ValueError(f"policy must be one of {BUILTIN_POLICIES}, a path to a .safetensors checkpoint or a "
                     f"Policy object, got {text!r}")


def _shipped_neural(device: str, operators: tuple[str, ...] | None = None) -> Policy:
    require_torch('policy="neural"')
    from dgsr.neural.policy import NeuralPolicy

    # The shipped critic is only pre-trained ("on a dismantling path or not"): node values from
    # accuracy searched better with these weights (docs/notes/policy_bench.md). A checkpoint from
    # `dgsr search` carries a critic refined by search and keeps the paper's critic values.
    return NeuralPolicy.from_pretrained(device=device, use_critic=False, operators=operators)
