"""torch is optional (the ``dgsr[neural]`` extra): without it the default search, the random
policy, the CLI, export, SymPy output and pickling work, and every torch-only path says how to
install it. Checked in a fresh process in which importing torch (or safetensors) fails, as it does
where they are not installed; one process runs every check, so the imports are paid once."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

#: Put first on sys.meta_path before dgsr is imported: ``import torch`` then raises exactly the
#: error an environment without torch gives, whether or not this one has it.
_WITHOUT_TORCH = """
import sys

class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "safetensors"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoTorch())
"""

_CHECKS = """
import contextlib, io, json, os, pickle, tempfile
import numpy as np
import pandas as pd
import dgsr
from dgsr import SymbolicRegressor
from dgsr.cli import main

out = {}
rng = np.random.default_rng(0)
X = rng.uniform(1.0, 2.0, (60, 2))
y = X[:, 0] * X[:, 1]
for policy in ("semantic", "random"):
    est = SymbolicRegressor(policy=policy, max_time=None, max_evaluations=300, max_size=20,
                            random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    out[policy] = {"sympy": str(est.sympy()),
                   "pickle": bool(np.array_equal(again.predict(X), est.predict(X))),
                   "to_numpy": bool(np.allclose(est.to_numpy()(X), est.predict(X)))}

def fit_error(**params):
    try:
        SymbolicRegressor(max_time=None, max_evaluations=50, max_size=20, random_state=0, **params).fit(X, y)
    except ImportError as err:
        return [type(err).__name__, str(err)]
    return None

out["neural"] = fit_error(policy="neural")
out["finetune"] = fit_error(finetune=True)
checkpoint = os.path.join(tempfile.mkdtemp(), "mine.safetensors")
open(checkpoint, "wb").close()
out["checkpoint"] = fit_error(policy=checkpoint)

def cli(*args):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(list(args))
        except SystemExit as exit_:  # --version exits through argparse
            status = exit_.code
    return [status, stdout.getvalue(), stderr.getvalue()]

tmp = tempfile.mkdtemp()
data = os.path.join(tmp, "data.csv")
pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y}).to_csv(data, index=False)
run = os.path.join(tmp, "run")
out["cli_version"] = cli("--version")
out["cli_fit"] = cli("fit", data, "--target", "y", "--evals", "300", "--max-size", "20", "--out", run, "--quiet")
out["cli_predict"] = cli("predict", os.path.join(run, "model.pkl"), data)
out["cli_data"] = cli("data", "sample", "--n", "1")
out["cli_fit_neural"] = cli("fit", data, "--evals", "50", "--policy", "neural", "--out", os.path.join(tmp, "n"),
                            "--quiet")
out["cli_pretrain"] = cli("pretrain", "--steps", "1", "--out", os.path.join(tmp, "pt"))
out["cli_search"] = cli("search", data, "--out", os.path.join(tmp, "s"))
out["y"] = y.tolist()
out["torch_imported"] = any(name.split(".")[0] in ("torch", "safetensors") for name in sys.modules)
print(json.dumps(out))
"""

_FIX = 'pip install "dgsr[neural]"'


@pytest.fixture(scope="module")
def without_torch() -> dict:
    done = subprocess.run([sys.executable, "-c", _WITHOUT_TORCH + _CHECKS], capture_output=True, text=True,
                          timeout=280, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(300)
@pytest.mark.parametrize("policy", ["semantic", "random"])
def test_fit_predict_export_and_pickle_work_without_torch(without_torch, policy):
    result = without_torch[policy]
    assert result == {"sympy": "x0*x1", "pickle": True, "to_numpy": True}
    assert without_torch["torch_imported"] is False


@pytest.mark.timeout(300)
@pytest.mark.parametrize("params", ["neural", "finetune", "checkpoint"])
def test_torch_only_estimator_paths_name_the_fix(without_torch, params):
    kind, message = without_torch[params]
    assert kind == "TorchMissingError"
    assert _FIX in message and "PyTorch" in message


@pytest.mark.timeout(300)
def test_cli_works_without_torch(without_torch):
    status, stdout, _ = without_torch["cli_version"]
    assert status == 0 and stdout.startswith("dgsr ")
    status, _, stderr = without_torch["cli_fit"]
    assert status == 0, stderr
    status, stdout, stderr = without_torch["cli_predict"]
    assert status == 0, stderr
    np.testing.assert_allclose([float(v) for v in stdout.split()], without_torch["y"], rtol=1e-9)
    status, stdout, stderr = without_torch["cli_data"]  # synthetic training data needs no torch either
    assert status == 0 and stdout.strip(), stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", ["cli_fit_neural", "cli_pretrain", "cli_search"])
def test_torch_only_commands_fail_in_one_line_naming_the_fix(without_torch, command):
    status, _, stderr = without_torch[command]
    lines = stderr.strip().splitlines()
    assert status == 2, stderr
    assert lines[-1].startswith("dgsr: error: ") and _FIX in lines[-1]
    assert "Traceback" not in stderr
