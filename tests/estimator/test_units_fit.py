"""PySR's X_units, y_units and dimensional_constraint_penalty through the estimator (issue 50,
item 2): the units choose the law over a shorter formula of the wrong units, equations_ says
which rows are consistent, and the units survive the model file and pickle."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from dgsr import SymbolicRegressor
from dgsr.core.units import UnitCheck, checked_units
from tests.cli.dgsr_process import run_python


def _data():
    """y = m*v**2/2 (kinetic energy, J) with 2% noise; on this narrow range of v the shorter
    3*m*v (the units of momentum) fits nearly as well."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"m": rng.uniform(1, 3, 200), "v": rng.uniform(5.9, 6.1, 200)})
    return X, 0.5 * X.m * X.v**2 * (1 + 0.02 * rng.normal(size=200))


#: The law, the shorter formula of the wrong units and a smaller one: all three on the front.
GUESSES = ["0.5*m*v**2", "3*m*v", "m"]
UNITS = {"X_units": ["kg", "m/s"], "y_units": "J"}


def _fit(X, y, penalty: float = 1000.0, only_numbers: bool = True, **fit_kwargs) -> SymbolicRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_evaluations=300, max_time=None, random_state=0, guesses=GUESSES,
                                model_selection="best", dimensional_constraint_penalty=penalty,
                                dimensionless_constants_only=only_numbers)
        return est.fit(X, y, **fit_kwargs)


def _consistent(expr) -> bool:
    xs, y = checked_units(UNITS["X_units"], UNITS["y_units"], 2)
    return UnitCheck(xs, y, dimensionless_constants=True).report(expr).consistent


def test_units_select_the_law_over_a_shorter_formula_of_the_wrong_units():
    X, y = _data()
    plain = _fit(X, y)
    assert "dimensionally_consistent" not in plain.equations_.columns
    assert not _consistent(plain.expression_)  # without units: 3.004*m*v, the better score
    est = _fit(X, y, **UNITS)
    assert _consistent(est.expression_) and est.equations_["r2"].iloc[est.best_index_] > 0.99
    assert est.sympy(precision=2) == plain.sympy(index=2, precision=2)  # 0.5*m*v**2
    assert est.equations_["dimensionally_consistent"].tolist() == [_consistent(e) for e in est.expressions_]
    assert est.X_units_ == ["kg", "m/s"] and est.y_units_ == "J"


def test_the_penalty_is_in_the_loss_of_the_inconsistent_rows_only():
    X, y = _data()
    plain, est = _fit(X, y), _fit(X, y, **UNITS)
    by_text = {str(e): loss for e, loss in zip(plain.expressions_, plain.equations_["loss"])}
    for e, loss, ok in zip(est.expressions_, est.equations_["loss"], est.equations_["dimensionally_consistent"]):
        if str(e) in by_text:
            assert (loss == pytest.approx(by_text[str(e)])) == ok  # consistent rows keep their loss


def test_by_default_constants_carry_units_and_are_counted():
    """PySR's default: a constant may carry a unit, so 3*m*v is consistent, with one dimensional constant."""
    X, y = _data()
    est = _fit(X, y, only_numbers=False, **UNITS)
    table = est.equations_
    rows = [i for i, e in enumerate(est.expressions_) if sorted(e.symbols) == sorted(("mul", "mul", "c", "x0", "x1"))]
    assert rows and table["dimensionally_consistent"].iloc[rows[0]]
    assert table["dimensional_constants"].iloc[rows[0]] == 1
    assert not table["dimensionally_consistent"].iloc[0]  # m alone: kg, no constant to carry J


def test_a_wrong_unit_is_one_clear_error_before_the_search():
    X, y = _data()
    with pytest.raises(ValueError, match=r"X_units\[1\] \(column 'v'\): 'furlongz' is not a unit"):
        _fit(X, y, X_units=["kg", "furlongz"], y_units="J")
    with pytest.raises(ValueError, match="X_units must be a list of 2 units"):
        _fit(X, y, X_units=["kg"], y_units="J")


def test_units_survive_the_model_file_and_pickle(tmp_path):
    X, y = _data()
    est = _fit(X, y, **UNITS)
    est.save(tmp_path / "model.json")
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(est))
    code = (
        "import pickle\n"
        "from dgsr import SymbolicRegressor\n"
        f"a = SymbolicRegressor.from_file({str(tmp_path / 'model.json')!r})\n"
        f"b = pickle.loads(open({str(tmp_path / 'model.pkl')!r}, 'rb').read())\n"
        "for e in (a, b):\n"
        "    print(e.X_units_, e.y_units_, e.equations_['dimensionally_consistent'].tolist(),"
        " e.equations_['dimensional_constants'].tolist())\n"
    )
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    want = (f"{est.X_units_} {est.y_units_} {est.equations_['dimensionally_consistent'].tolist()} "
            f"{est.equations_['dimensional_constants'].tolist()}")
    assert out.stdout.strip().splitlines() == [want, want]


def test_several_targets_take_one_unit_each():
    X, y = _data()
    Y = pd.DataFrame({"E": y, "p": X.m * X.v})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_evaluations=600, max_time=None, random_state=0).fit(
            X, Y, X_units=["kg", "m/s"], y_units=["J", "kg*m/s"])
    assert [o.y_units_ for o in est.estimators_] == ["J", "kg*m/s"]
    assert all("dimensionally_consistent" in table.columns for table in est.equations_)
    with pytest.raises(ValueError, match="y_units must be a list of 2 units"):
        est.fit(X, Y, X_units=["kg", "m/s"], y_units="J")


def _bose_einstein() -> tuple[np.ndarray, np.ndarray, dict]:
    """1/(exp(h*omega/(kb*T)) - 1): the law's argument is the columns' one dimensionless group."""
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, size=(500, 4))
    h, omega, kb, T = X.T
    return X, 1.0 / (np.exp(h * omega / (kb * T)) - 1.0), {
        "X_units": ["kg*m**2/s", "1/s", "kg*m**2/(K*s**2)", "K"], "y_units": "1"}


@pytest.mark.parametrize("unit_chains", [True, False])
def test_units_give_the_chains_the_dimensionless_group_as_their_argument(unit_chains):
    import sympy

    from dgsr.policies.semantic.policy import SemanticPolicy

    X, y, units = _bose_einstein()
    # Without the groups, the single index would read the same product off the data: off here.
    policy = SemanticPolicy(unit_chains=unit_chains, index_chains=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SymbolicRegressor(max_evaluations=8000, random_state=0, policy=policy, reduce_units=False)
        est.fit(X, y, **units)
    x0, x1, x2, x3 = sympy.symbols("x0 x1 x2 x3")
    law = 1 / (sympy.exp(x0 * x1 / (x2 * x3)) - 1)
    found = sympy.simplify(est.sympy() - law) == 0
    assert found == unit_chains  # within this budget, only through the group h*omega/(kb*T)
    assert policy.unit_groups == ()  # the caller's policy object is not changed
