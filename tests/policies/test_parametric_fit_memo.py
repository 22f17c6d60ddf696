"""operand_library.FitMemo: the parametric operands are fitted once per set of fit rows and kept
across a search's trials; the library is the same with or without the memo, whatever the
trial's scoring rows, and a memo built on other rows is never read."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dgsr.core.evaluate import as_columns
from dgsr.policies.semantic import operand_library
from dgsr.policies.semantic.operand_library import FitMemo, build_library
from dgsr.policies.semantic.policy import SemanticPolicy

pytestmark = pytest.mark.timeout(300, method="thread")


def _friedman(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A sine of a shifted product plus terms of clearly decreasing weight: every trial's rows
    rank the variables the same way, so every trial asks for the same fits (which bumps are
    fitted follows that ranking)."""
    X = np.random.default_rng(seed).uniform(-1.5, 1.5, size=(n, 4))
    y = 2.0 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + 8.0 * X[:, 0] + 6.0 * X[:, 1] + 4.0 * X[:, 2]
    return X, y


def _same_library(a, b) -> None:
    assert [e.key() for e in a.expressions] == [e.key() for e in b.expressions]
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.parametric, b.parametric)


def _count_fits(monkeypatch) -> list[int]:
    calls = [0]
    fit = operand_library.fit_inner_constants

    def counting(*args, **kwargs):
        calls[0] += 1
        return fit(*args, **kwargs)

    monkeypatch.setattr(operand_library, "fit_inner_constants", counting)
    return calls


def test_the_library_is_the_same_with_the_memo_for_every_trials_rows(monkeypatch):
    """Three trials' scoring rows (the relevance order read off each may differ) with the same fit
    rows: the memo's library equals a fresh computation every time, and the later trials fit
    nothing new."""
    X, y = _friedman(600, 1)
    fit_rows = (as_columns(X[::2]), y[::2])
    memo = FitMemo()
    calls = _count_fits(monkeypatch)
    fresh_fits = []
    for seed in range(3):
        rows = np.sort(np.random.default_rng(seed).choice(600, size=100, replace=False))
        columns = as_columns(X[rows])
        before = calls[0]
        fresh = build_library(columns, y[rows], fit_parametric=True, fit_rows=fit_rows)
        fresh_fits.append(calls[0] - before)
        before = calls[0]
        kept = build_library(columns, y[rows], fit_parametric=True, fit_rows=fit_rows, fit_memo=memo)
        if seed > 0:
            assert calls[0] == before  # every fit came from the memo
        _same_library(kept, fresh)
    assert min(fresh_fits) > 0


def test_a_memo_of_other_rows_is_emptied_not_read():
    X, y = _friedman(400, 2)
    memo = FitMemo()
    columns = as_columns(X[:100])
    build_library(columns, y[:100], fit_parametric=True, fit_rows=(as_columns(X[100:]), y[100:]), fit_memo=memo)
    assert memo.fits
    other_y = y[100:] * 2.0 + 1.0  # same inputs, another target
    with_memo = build_library(columns, y[:100], fit_parametric=True, fit_rows=(as_columns(X[100:]), other_y),
                              fit_memo=memo)
    fresh = build_library(columns, y[:100], fit_parametric=True, fit_rows=(as_columns(X[100:]), other_y))
    _same_library(with_memo, fresh)


def test_the_policy_keeps_its_fits_across_trials_but_does_not_pickle_them(monkeypatch):
    X, y = _friedman(800, 3)
    policy = SemanticPolicy()
    calls = _count_fits(monkeypatch)
    policy.prepare(X, y, np.random.default_rng(0))
    first = calls[0]
    policy.prepare(X, y, np.random.default_rng(1))
    assert first > 0 and calls[0] == first
    copy = pickle.loads(pickle.dumps(policy))
    assert "_parametric_fits" not in copy.__dict__
    _same_library(copy.prepare(X, y, np.random.default_rng(2)).library,
                  policy.prepare(X, y, np.random.default_rng(2)).library)
    assert calls[0] > first  # the copy fitted its own
