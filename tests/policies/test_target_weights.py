"""policies.semantic.target_weights: the compiled clean_weights equals the numpy definition bit
for bit, and masks what it promises (non-finite rows, poles, weights far above the median)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dgsr.core.kernels import compiler
from dgsr.policies.semantic.target_weights import clean_weights, clean_weights_numpy

pytestmark = pytest.mark.timeout(300, method="thread")
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
entries = st.one_of(st.floats(-1e3, 1e3), st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e305, 1e-300]))


@pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")
@SETTINGS
@given(st.integers(1, 4).flatmap(lambda rows: st.integers(1, 12).flatmap(lambda cols: st.tuples(
    hnp.arrays(np.float64, (rows, cols), elements=entries), hnp.arrays(np.float64, (rows, cols), elements=entries)))))
def test_compiled_clean_weights_equal_the_numpy_definition(pair):
    weights, targets = pair
    np.testing.assert_array_equal(clean_weights(weights, targets), clean_weights_numpy(weights, targets))


@pytest.mark.parametrize("clean", [clean_weights, clean_weights_numpy])
def test_masked_rows_weigh_nothing_and_no_row_weighs_more_than_a_thousand_medians(clean):
    targets = np.linspace(1.0, 2.0, 20)[None, :].repeat(2, axis=0)
    targets[0, 3] = np.nan  # undefined
    targets[0, 5] = 1e6  # next to a pole
    weights = np.ones_like(targets)
    weights[1, 7] = 1e9  # one row would decide the match
    weights[1, 8] = -1.0
    out = clean(weights, targets)
    assert out[0, 3] == 0.0 and out[0, 5] == 0.0 and out[1, 8] == 0.0
    assert out[1, 7] == 1e3  # capped at 1,000 times the median weight (1)
    assert np.all(out[0, [0, 1, 2, 4, 6]] == 1.0)


@pytest.mark.skipif(not compiler.AVAILABLE, reason="numba is not installed (or DGSR_NO_JIT is set)")
@pytest.mark.parametrize("levels", [2, 5, 1000])
def test_compiled_medians_of_long_rows_with_many_ties_equal_the_numpy_definition(levels):
    # The policy's rows are 100 long; few distinct values make the selection's partitions unequal.
    rng = np.random.default_rng(levels)
    targets = rng.integers(0, levels, (30, 257)).astype(float) * 0.5
    weights = rng.integers(1, levels + 1, (30, 257)).astype(float)
    targets[3, ::7] = np.nan
    weights[4, ::5] = 0.0
    targets[5, 11] = 1e9  # far outside its row's bulk
    np.testing.assert_array_equal(clean_weights(weights, targets), clean_weights_numpy(weights, targets))
