"""The one-standard-error rule on errors near the float range (issue 47's no-signal run:
a fold's formula exploded on a few rows and the variance of the differences overflowed)."""
import warnings

import numpy as np

from dgsr.estimator.model_selection import one_se_eligible


def test_huge_errors_are_not_as_good_and_leak_no_warning():
    ref = np.ones(10)
    exploding = np.r_[np.full(5, 1e300), np.ones(5)]
    errors = np.vstack([ref, exploding])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mask = one_se_eligible(errors, 0)
    # Before the fix the squared differences overflowed to an infinite standard error,
    # which made the exploding row "within one standard error" of the reference.
    assert mask.tolist() == [True, False]


def test_scaled_rule_matches_plain_rule_on_ordinary_errors():
    rng = np.random.default_rng(0)
    errors = rng.random((6, 50)) + np.linspace(0, 0.3, 6)[:, None]
    d = errors - errors[0]
    se = d.std(axis=1, ddof=1) / np.sqrt(50)
    plain = d.mean(axis=1) <= se + 1e-3
    assert one_se_eligible(errors, 0, floor=1e-3).tolist() == plain.tolist()
    # Scale invariance: multiplying every error by 1e250 changes nothing.
    assert one_se_eligible(errors * 1e250, 0, floor=1e-3 * 1e250).tolist() == plain.tolist()
