"""policies.semantic.matching.top_matches: an expansion's best operand matches, penalised for
size, picked in one pass: the same entries and order as sorting the whole table."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.policies.semantic import matching


def _table(rng, n_targets, n_operands):
    # Few distinct values, so ties are common (the same operand matching equally well at two
    # nodes), and undefined entries (-inf) as match_operands leaves them.
    match = rng.integers(0, 6, size=(n_targets, n_operands)).astype(float) / 4
    match[rng.random(match.shape) < 0.2] = -np.inf
    sizes = rng.integers(1, 7, size=n_operands).astype(float)
    extra = rng.choice([0.0, 2.0], size=n_targets)
    return match, sizes, extra


def _by_sorting(match, sizes, extra, penalty, n_top):
    table = match - penalty * (sizes[None, :] + extra[:, None])
    entries = [(-v, f) for f, v in enumerate(table.ravel()) if np.isfinite(v)]
    entries.sort()  # best first, equal values by flat index
    return [f for _, f in entries[:n_top]], [-v for v, _ in entries[:n_top]]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_the_best_entries_come_first_and_equal_ones_in_table_order(seed, compiled, monkeypatch):
    if not compiled:
        monkeypatch.setattr(matching.compiler, "AVAILABLE", False)
    elif matching._top_matches_jit is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(seed)
    match, sizes, extra = _table(rng, int(rng.integers(1, 25)), int(rng.integers(1, 60)))
    for n_top in (1, 7, 36, match.size, match.size + 5):
        index, value = matching.top_matches(match, sizes, extra, 0.01, n_top)
        want_index, want_value = _by_sorting(match, sizes, extra, 0.01, n_top)
        assert index.tolist() == want_index
        assert value.tolist() == want_value  # the same arithmetic: equal to the last bit


def test_no_finite_entry_or_no_room_gives_nothing():
    match = np.full((3, 4), -np.inf)
    index, value = matching.top_matches(match, np.ones(4), np.zeros(3), 0.01, 5)
    assert len(index) == 0 and len(value) == 0
    index, value = matching.top_matches(np.zeros((3, 4)), np.ones(4), np.zeros(3), 0.01, 0)
    assert len(index) == 0 and len(value) == 0
