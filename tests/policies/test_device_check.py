"""A torch device that is not there is one clear error (issue 48, rough item): ``policy="neural",
device="cuda"`` on a CPU-only torch raised torch's AssertionError from deep inside."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dgsr.estimator.regressor import SymbolicRegressor

pytestmark = pytest.mark.timeout(300, method="thread")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch without a usable GPU")
def test_cuda_without_a_gpu_says_what_to_do():
    X = np.random.default_rng(0).uniform(-1, 1, (30, 1))
    est = SymbolicRegressor(policy="neural", device="cuda", max_evaluations=200, max_time=None, random_state=0)
    with pytest.raises(ValueError, match=r"device='cuda', but this torch .*pass device='cpu'"):
        est.fit(X, X[:, 0] ** 2)


def test_an_unknown_device_is_named():
    X = np.random.default_rng(0).uniform(-1, 1, (30, 1))
    est = SymbolicRegressor(policy="neural", device="gpu0", max_evaluations=200, max_time=None, random_state=0)
    with pytest.raises(ValueError, match="device must be a torch device"):
        est.fit(X, X[:, 0] ** 2)
