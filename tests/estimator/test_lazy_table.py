"""``equations_`` is built when first read: ``fit`` spends no time on SymPy, ``sympy()`` simplifies
its one row, and the table, pickles and refits agree with what an eager table gave."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import sympy

from dgsr.estimator import display
from dgsr.estimator.regressor import SymbolicRegressor

# SymPy's time cap uses SIGALRM, as pytest-timeout's signal method does.
pytestmark = pytest.mark.timeout(180, method="thread")


def _data(seed: int = 1) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"mass": rng.uniform(1, 4, 150), "height": rng.uniform(0.5, 3, 150)})
    return X, pd.Series(2.5 * X["mass"] * X["height"] + 1.0, name="energy")


def _fit(X: pd.DataFrame, y: pd.Series) -> SymbolicRegressor:
    return SymbolicRegressor(policy="random", max_evaluations=1500, max_time=60, random_state=0).fit(X, y)


@pytest.fixture
def simplify_calls(monkeypatch) -> list:
    calls = []
    real = display.simplify

    def counting(expr, timeout, probes=()):
        calls.append(expr)
        return real(expr, timeout=timeout, probes=probes)

    monkeypatch.setattr(display, "simplify", counting)
    return calls


def test_fit_simplifies_nothing_and_sympy_simplifies_only_its_row(simplify_calls):
    X, y = _data()
    est = _fit(X, y)
    assert simplify_calls == []
    assert len(est.expressions_) >= 3  # a front with rows besides the selected one

    chosen = est.sympy()
    # Each row is simplified as it is and with the columns' signs assumed (both positive here).
    assert len(simplify_calls) <= 2 and len({str(e) for e in simplify_calls}) == 1
    assert {s.name for s in chosen.free_symbols} <= {"mass", "height"}
    grid = {sympy.Symbol("mass"): 2.0, sympy.Symbol("height"): 1.5}
    assert float(chosen.subs(grid)) == pytest.approx(est.predict(pd.DataFrame({"mass": [2.0], "height": [1.5]}))[0])

    table = est.equations_
    assert len(simplify_calls) <= 2 * len(est.expressions_)  # the selected row was not simplified again
    assert len({str(e) for e in simplify_calls}) == len(est.expressions_)
    assert table["sympy"].iloc[est.best_index_] is chosen
    assert table.selected_row == est.best_index_
    assert est.equations_ is table  # built once


def test_an_unread_fit_pickled_builds_the_same_table_in_a_fresh_process(tmp_path):
    X, y = _data()
    est = _fit(X, y)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(est))
    expected = est.equations_["equation"].tolist()
    script = tmp_path / "read.py"
    script.write_text(
        "import pickle, sys\n"
        f"est = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "print('|'.join(est.equations_['equation']))\n"
        "print(est.sympy())\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=170, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].split("|") == expected
    assert sympy.simplify(sympy.sympify(lines[1]) - est.sympy()) == 0


def test_a_refit_shows_the_new_front_not_the_old_table():
    X, y = _data()
    est = _fit(X, y)
    first = est.equations_
    assert any("mass" in e for e in first["equation"])
    renamed = X.rename(columns={"mass": "m", "height": "h"})
    est.fit(renamed, 3.0 * renamed["m"] - renamed["h"])
    second = est.equations_
    assert second is not first
    assert all("mass" not in e for e in second["equation"]) and any("m" in e for e in second["equation"])
    assert {s.name for s in est.sympy().free_symbols} <= {"m", "h"}


def test_a_table_stored_by_an_earlier_version_is_read_as_it_is():
    X, y = _data()
    est = _fit(X, y)
    legacy = pd.DataFrame({"equation": ["stored"], "sympy": [sympy.Symbol("stored")]})
    state = dict(est.__dict__)
    state.pop("_equations")
    state.pop("_sympy_rows")
    state["equations_"] = legacy  # how 0.9.0 and earlier pickled the table
    old = SymbolicRegressor.__new__(SymbolicRegressor)
    old.__dict__.update(state)
    assert old.equations_ is legacy
    assert old.sympy(index=0) == sympy.Symbol("stored")
