"""``dgsr fit`` run in-process (:func:`dgsr.cli.main`) leaves the caller's process as it found it:
the collector's thresholds, the SIGINT, SIGALRM and SIGTERM handlers, the warning display and
filters, the BLAS threads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dgsr.cli.app as cli
from tests.process_state import own_process_state, process_state  # noqa: F401  (a fixture)

pytestmark = pytest.mark.timeout(300, method="thread")


def test_dgsr_fit_in_process_leaves_the_process_state_as_it_found_it(tmp_path, own_process_state):  # noqa: F811
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"q": rng.uniform(1, 5, 80), "C": rng.uniform(1, 5, 80)})
    df["V"] = df["q"] / df["C"]
    df.to_csv(tmp_path / "cap.csv", index=False)
    status = cli.main(["fit", str(tmp_path / "cap.csv"), "--out", str(tmp_path / "run"), "--policy", "random",
                       "--evals", "400", "--time", "30", "--quiet"])
    assert status == 0
    assert process_state() == own_process_state


def test_a_failing_command_leaves_it_too(tmp_path, own_process_state, capsys):  # noqa: F811
    assert cli.main(["fit", str(tmp_path / "missing.csv"), "--quiet"]) == 2
    assert process_state() == own_process_state
