"""Files written by dgsr 0.1.0 still load after the layer regroup, in a fresh process (pickles name
module paths, and the modules moved)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

LEGACY = Path(__file__).parent / "data" / "legacy"


def _in_fresh_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(300)
def test_model_pickled_by_0_1_0_loads_and_predicts_the_same_numbers():
    check = np.load(LEGACY / "model_v0_1_0_check.npz")
    out = _in_fresh_process(
        "import pickle, numpy as np, pandas as pd\n"
        f"est = pickle.load(open({str(LEGACY / 'model_v0_1_0.pkl')!r}, 'rb'))\n"
        f"X = pd.DataFrame(np.load({str(LEGACY / 'model_v0_1_0_check.npz')!r})['X'], columns=['m', 'r'])\n"
        "print(type(est).__module__, type(est.expression_).__module__)\n"
        "print(repr(est.predict(X).tolist()))\n")
    modules, predictions = out.strip().splitlines()
    assert modules == "dgsr.estimator.regressor dgsr.core.expression"
    np.testing.assert_array_equal(np.array(eval(predictions)), check["y"])


@pytest.mark.timeout(300)
def test_online_objects_pickled_by_0_1_0_load_as_the_moved_classes():
    out = _in_fresh_process(
        "import torch\n"
        f"obj = torch.load({str(LEGACY / 'online_objects_v0_1_0.pt')!r}, weights_only=False)\n"
        "from dgsr.search.mutations import Mutation\n"
        "from dgsr.core.expression import Expression\n"
        "from dgsr.online.controller import TrialSpec\n"
        "items = obj['buffers']['mutations']['items']\n"
        "print(type(obj['trial']) is TrialSpec, obj['trial'].dataset, obj['trial'].n_samples)\n"
        "print(all(isinstance(i.mutation, Mutation) and isinstance(i.state, Expression) for i in items),"
        " len(items) > 0)\n")
    assert out.split() == ["True", "prod", "11", "True", "True"]


def test_old_import_paths_warn_and_resolve_to_the_new_objects():
    import dgsr
    from dgsr.core.constants import fit_constants
    from dgsr.estimator.regressor import SymbolicRegressor

    with pytest.warns(DeprecationWarning, match="dgsr.core.constants"):
        from dgsr.constants import fit_constants as old_fit
    assert old_fit is fit_constants
    from dgsr.regressor import SymbolicRegressor as old_cls

    assert old_cls is SymbolicRegressor is dgsr.SymbolicRegressor
    with pytest.raises(ImportError):
        from dgsr.regressor import no_such_name  # noqa: F401
