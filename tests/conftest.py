"""Shared test fixtures: small random valid expressions, built only from the core API."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from dgsr.core.expression import Expression
from dgsr.core.operators import BINARY, UNARY
from dgsr.search.mutations import is_valid


def random_tree(rng: np.random.Generator, n_features: int, n_ops: int) -> Expression:
    """A random (unsimplified) expression with about ``n_ops`` operators, obeying the rules."""
    def leaf() -> Expression:
        if rng.random() < 0.7:
            return Expression.variable(int(rng.integers(n_features)))
        return Expression.constant(float(np.round(rng.normal(), 3)))

    for _ in range(100):
        nodes = [leaf() for _ in range(n_ops + 1)]
        for _ in range(n_ops):
            if rng.random() < 0.35:
                i = int(rng.integers(len(nodes)))
                nodes[i] = Expression.combine(str(rng.choice(UNARY)), nodes[i])
            elif len(nodes) > 1:
                a, b = (nodes.pop(int(rng.integers(len(nodes)))) for _ in range(2))
                nodes.append(Expression.combine(str(rng.choice(BINARY)), a, b))
        while len(nodes) > 1:
            a, b = nodes.pop(), nodes.pop()
            nodes.append(Expression.combine(str(rng.choice(BINARY)), a, b))
        if is_valid(nodes[0]):
            return nodes[0]
    raise RuntimeError("could not draw a valid tree")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the numerical kernels into numba's disk cache once, before any test runs.

    The first fit after installing compiles them (a minute or more on a slow machine). Without
    this, that minute fell inside whichever test fitted first, under its own timeout; under
    pytest-xdist every worker's first fit compiled at once, and a thread-method timeout ended
    the worker. An xdist worker finds them compiled by the controller, and only loads them.
    """
    if hasattr(config, "workerinput"):
        return
    from dgsr.estimator.warm_up import warm_up_kernels

    warm_up_kernels()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def torch_one_thread():
    """Torch on one thread for the test (the machine is shared), restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def thresholds():
    """The garbage collector's default thresholds during the test, the process's own after it."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)
