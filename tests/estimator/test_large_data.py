"""PySR's ``batching`` and ``batch_size`` (issue 50 item 6): the search values candidates on a
sample, above REFIT_ROWS rows the refit works on a sample too, and the front is reported on
all rows, without a full-size copy of the data."""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest

import dgsr.estimator.fit_front as fit_front_module
from dgsr import SymbolicRegressor
from dgsr.core.evaluate import as_columns
from dgsr.core.parser import parse
from dgsr.estimator import large_data
from dgsr.estimator.fit_config import FitConfig
from dgsr.estimator.front import front_entry
from dgsr.estimator.large_data import REFIT_ROWS, refit_rows, scored_on_all_rows


def _law(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1, 3, size=(n, 3))
    return X, 2.5 * X[:, 0] * X[:, 1] / X[:, 2] + X[:, 0]


def _fit(X, y, **params) -> SymbolicRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SymbolicRegressor(**{"max_evaluations": 30, "max_time": None, "random_state": 0, **params}).fit(X, y)


def test_refit_rows_only_above_the_limit_and_only_with_batching():
    assert refit_rows(REFIT_ROWS, None) is None
    assert refit_rows(10 * REFIT_ROWS, False) is None
    rows = refit_rows(10 * REFIT_ROWS, None)
    assert len(rows) == REFIT_ROWS and rows[0] == 0 and rows[-1] == 10 * REFIT_ROWS - 1
    assert (np.diff(rows) > 0).all()
    assert np.array_equal(rows, refit_rows(10 * REFIT_ROWS, True))


def test_batch_size_is_the_search_sample_and_batching_off_means_every_row():
    assert FitConfig().search_config().max_rows == 1000
    assert FitConfig(batch_size=64).search_config().max_rows == 64
    assert FitConfig(batching=False, batch_size=64).search_config().max_rows is None


@pytest.mark.parametrize("weighted", [False, True])
def test_scores_on_all_rows_are_those_of_the_whole_array(monkeypatch, weighted):
    monkeypatch.setattr(large_data, "CHUNK_ROWS", 700)  # several chunks and a short last one
    X, y = _law(5000)
    w = np.random.default_rng(1).uniform(0.5, 2.0, 5000) if weighted else None
    exprs = [parse(t, ["a", "b", "c"]) for t in ("a*b/c", "2.4*a*b/c + a", "a + 1")]
    entries = [front_entry(e, as_columns(X[:100]), y[:100]) for e in exprs]  # scored on a sample
    full = [front_entry(e, as_columns(X), y, w=w) for e in exprs]
    rescored = scored_on_all_rows(entries, X, y, w)
    for got, want in zip(rescored, full):
        assert got.mse == pytest.approx(want.mse, rel=1e-12) and got.r2 == pytest.approx(want.r2, rel=1e-12)


def test_an_entry_undefined_on_some_row_is_dropped():
    X, y = _law(3000)
    X[2500, 0] = -1.0  # log(a) is undefined on that row only
    entries = [front_entry(parse(t, ["a", "b", "c"]), as_columns(X[:100]), y[:100]) for t in ("log(a)", "a")]
    assert [e.expression for e in scored_on_all_rows(entries, X, y, None)] == [entries[1].expression]


def test_above_the_limit_the_refit_sees_a_sample_and_the_front_all_rows(monkeypatch):
    monkeypatch.setattr(large_data, "REFIT_ROWS", 2000)
    seen = []
    polish = fit_front_module.polish
    monkeypatch.setattr(fit_front_module, "polish", lambda exprs, columns, *a, **k: seen.append(columns.shape[1])
                        or polish(exprs, columns, *a, **k))
    X, y = _law(20_000)
    est = _fit(X, y, max_evaluations=2)
    assert seen == [2000]
    for row in range(len(est.equations_)):  # the table's loss and r2 are those of all 20,000 rows
        pred = est.predict(X, index=row)
        assert est.equations_["loss"].iloc[row] == pytest.approx(float(np.mean((pred - y) ** 2)), rel=1e-9)
    seen.clear()
    _fit(X, y, max_evaluations=2, batching=False)
    assert seen == [20_000]


@pytest.mark.timeout(300)
def test_a_million_rows_fit_makes_no_copy_of_the_data_and_finds_the_law():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(1_000_000, 20))
    y = 2.5 * X[:, 0] * X[:, 1] / X[:, 2] + X[:, 3]
    tracemalloc.start()
    try:
        est = _fit(X, y, max_evaluations=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.8 * X.nbytes, f"{peak / 2**20:.0f} MB allocated at peak for a {X.nbytes / 2**20:.0f} MB input"
    assert est.score(X[:10_000], y[:10_000]) > 0.999999 and math.isfinite(est.equations_["loss"].iloc[-1])


def test_the_budget_keeps_the_timed_scoring_for_after_the_polish(monkeypatch):
    from dgsr.estimator import budget_plan
    from dgsr.estimator.budget_plan import plan_budget

    config = FitConfig(max_time=60, model_selection="balanced")
    assert plan_budget(config, 10_000, 0.0).search_time_end == 57.0  # the polish's 5%
    plan = plan_budget(config, 10_000_000, 0.0, scoring_seconds=4.0)
    assert plan.search_time_end == pytest.approx(53.0)
    monkeypatch.setattr(budget_plan.time, "perf_counter", lambda: 50.0)
    assert plan.time_left() == pytest.approx(6.0)  # the polish does not spend the scoring's time
    assert plan_budget(config, 10_000_000, 0.0, scoring_seconds=100.0).search_time_end == pytest.approx(45.0)


def test_the_scoring_time_estimate_is_one_timed_chunk_times_the_chunks(monkeypatch):
    clock = iter([10.0, 10.25])  # one chunk and a typical front on it: 0.25 s on this "machine"
    monkeypatch.setattr(large_data.time, "perf_counter", lambda: next(clock))
    X = np.ones((8 * large_data.CHUNK_ROWS, 3))
    assert large_data.scoring_seconds(X) == pytest.approx(8 * 0.25)
