"""Buckingham's pi theorem on a fit's units (dgsr.core.unit_reduction): the groups are pure
numbers and the prefactor has the target's unit, checked by changing the units of measure;
the lifted formula is the reduced one over the original columns."""

from __future__ import annotations

import numpy as np
import pytest

from dgsr.core.evaluate import evaluate
from dgsr.core.parser import parse
from dgsr.core.unit_reduction import MAX_EXPONENT, monomial, pi_reduction

# Dimensions in the order length, mass, time, current, temperature, amount, luminosity.
M, KG, S, K = (1, 0, 0, 0, 0, 0, 0), (0, 1, 0, 0, 0, 0, 0), (0, 0, 1, 0, 0, 0, 0), (0, 0, 0, 0, 1, 0, 0)
NONE = (0,) * 7


def _dims(**powers: float) -> tuple[float, ...]:
    base = {"m": M, "kg": KG, "s": S, "K": K}
    return tuple(float(sum(p * base[u][i] for u, p in powers.items())) for i in range(7))


JOULE = _dims(kg=1, m=2, s=-2)
#: Planck's law: h [J s], omega [1/s], kb [J/K], T [K], c [m/s] -> spectral energy density [J s/m**3].
PLANCK_X = [_dims(kg=1, m=2, s=-1), _dims(s=-1), _dims(kg=1, m=2, s=-2, K=-1), _dims(K=1), _dims(m=1, s=-1)]
PLANCK_Y = _dims(kg=1, m=-1, s=-1)


def _rows(n_columns: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 3.0, (40, n_columns))


def _in_other_units(X: np.ndarray, x_dims, scale: np.ndarray) -> np.ndarray:
    """``X`` measured in base units ``scale`` times smaller (metres to centimetres, ...)."""
    factors = np.array([np.prod(scale ** np.array(d)) for d in x_dims])
    return X * factors


@pytest.mark.parametrize("x_dims, y_dims, n_groups", [
    (PLANCK_X, PLANCK_Y, 1),
    ([_dims(kg=1), _dims(m=1, s=-1)], JOULE, 0),                            # m*v**2
    ([_dims(m=1, s=-1), _dims(m=1, s=-1), _dims(s=-1)], _dims(s=-1), 1),    # relativistic Doppler
    ([_dims(m=1)] * 3 + [NONE], _dims(m=1), 3),                             # lengths and an angle
])
def test_groups_are_pure_numbers_and_the_prefactor_has_the_targets_unit(x_dims, y_dims, n_groups):
    reduction = pi_reduction(x_dims, y_dims)
    assert reduction is not None and reduction.n_groups == n_groups
    X = _rows(len(x_dims))
    scale = np.array([100.0, 1000.0, 60.0, 1.0, 3.0, 1.0, 1.0])  # cm, g, minutes, ..., a third of a kelvin
    Xo = _in_other_units(X, x_dims, scale)
    np.testing.assert_allclose(reduction.group_columns(Xo), reduction.group_columns(X), rtol=1e-12)
    y_factor = np.prod(scale ** np.array(y_dims))
    np.testing.assert_allclose(reduction.prefactor_values(Xo), y_factor * reduction.prefactor_values(X), rtol=1e-12)


def test_the_lifted_formula_is_the_prefactor_times_the_reduced_one_of_the_groups():
    reduction = pi_reduction(PLANCK_X, PLANCK_Y).with_reciprocals()
    X = _rows(5, seed=1)
    reduced = parse("x0/(exp(x0) - 1) + 0.5*x1", ["x0", "x1"])
    lifted = reduction.lift(reduced)
    groups = reduction.group_columns(X)
    expected = reduction.prefactor_values(X) * (groups[:, 0] / (np.exp(groups[:, 0]) - 1) + 0.5 * groups[:, 1])
    np.testing.assert_allclose(evaluate(lifted, X), expected, rtol=1e-12)
    np.testing.assert_allclose(groups[:, 1], 1.0 / groups[:, 0], rtol=1e-12)  # the reciprocal group


def test_planck_reduces_to_one_group_of_four_variables():
    reduction = pi_reduction(PLANCK_X, PLANCK_Y)
    (group,) = reduction.groups
    assert sorted(abs(e) for e in group) == [0.0, 1.0, 1.0, 1.0, 1.0]  # h*omega/(kb*T), either way up
    assert group[4] == 0.0  # the speed of light is not in it
    assert reduction.prefactor[4] == -3.0  # 1/c**3: the only column with metres


def test_a_target_unit_the_columns_cannot_make_gives_no_reduction():
    # F = G*m1*m2/r**2 from kg and m: the newton's seconds come from G, a constant with a unit.
    assert pi_reduction([_dims(kg=1), _dims(kg=1), _dims(m=1)], _dims(kg=1, m=1, s=-2)) is None


@pytest.mark.parametrize("x_dims", [[NONE, NONE], [], [_dims(m=1)] * 17])
def test_nothing_to_reduce_without_units_or_with_too_many_columns(x_dims):
    assert pi_reduction(x_dims, NONE) is None


def test_exponents_beyond_the_limit_or_off_the_halves_give_no_reduction():
    assert MAX_EXPONENT < 4 and pi_reduction([_dims(m=1)], _dims(m=4)) is None  # only x0**4 has the unit
    # x1 = x0**(1/3) in units: that basis is off the grid of halves, the other gives x0/x1**3.
    assert pi_reduction([_dims(m=3), _dims(m=1)], NONE).groups == ((1.0, -3.0),)


def test_monomials_are_products_over_products_with_roots_and_squares():
    X = _rows(3, seed=2)
    expr = monomial((1.5, -2.0, 0.5))
    np.testing.assert_allclose(evaluate(expr, X), X[:, 0] ** 1.5 * np.sqrt(X[:, 2]) / X[:, 1] ** 2, rtol=1e-12)
    np.testing.assert_allclose(evaluate(monomial((0.0, -3.0, 0.0)), X), X[:, 1] ** -3.0, rtol=1e-12)
    assert set(monomial((2.5, 0.0, 0.0)).symbols) <= {"mul", "sq", "sqrt", "x0"}


# Differences of same-unit groups (Reduction.difference_pairs): ((x_i - x_j)*B, a pure number).
PER_S = _dims(s=-1)
#: A Lorentzian line in the detuning: I0 [W/m**2], omega, omega_0 [1/s], tau [s] -> [W/m**2].
LINE_X, LINE_Y = [_dims(kg=1, s=-3), PER_S, PER_S, S], _dims(kg=1, s=-3)


def test_two_same_unit_columns_outside_the_basis_give_one_difference_group():
    reduction = pi_reduction(LINE_X, LINE_Y)
    assert reduction is not None
    # Of the bases as simple ({I0, omega} or {I0, tau}), the one that leaves omega and omega_0
    # out: only then is (omega - omega_0)*tau a group (else it is an affine function of one).
    assert len(reduction.difference_pairs()) == 1
    X = _rows(4)
    with_difference = reduction.with_differences(reduction.difference_pairs())
    columns = with_difference.group_columns(X)
    assert columns.shape == (40, reduction.n_groups + 1)
    np.testing.assert_allclose(columns[:, -1], (X[:, 1] - X[:, 2]) * X[:, 3])
    # Lifted, the difference column is (omega - omega_0)*tau over the original columns.
    lifted = with_difference.lift(parse(f"x{reduction.n_groups}"))
    np.testing.assert_allclose(evaluate(lifted, X), X[:, 0] * (X[:, 1] - X[:, 2]) * X[:, 3])


def test_a_difference_group_is_a_pure_number():
    reduction = pi_reduction(LINE_X, LINE_Y)
    reduction = reduction.with_differences(reduction.difference_pairs())
    X = _rows(4, seed=1)
    scale = np.array([10.0, 3.0, 7.0, 1.0, 1.0, 1.0, 1.0])  # centimetres, grams, other seconds
    np.testing.assert_allclose(reduction.group_columns(_in_other_units(X, LINE_X, scale))[:, -1],
                               reduction.group_columns(X)[:, -1])


def test_dimensionless_columns_pair_and_reciprocals_or_other_units_do_not():
    # d [m], theta1, theta2 [1], r [m] -> [m]: theta1 - theta2 is a difference; d and r share a
    # unit but one is the basis (r/d - 1 is no new group); no reciprocal pairs.
    reduction = pi_reduction([M, NONE, NONE, M], M).with_reciprocals()
    pairs = reduction.difference_pairs()
    assert len(pairs) == 1
    a, b = pairs[0]
    X = _rows(4, seed=2)
    np.testing.assert_allclose(np.abs(reduction.group_columns(X)[:, a] - reduction.group_columns(X)[:, b]),
                               np.abs(X[:, 1] - X[:, 2]))
    assert pi_reduction([M, KG, S], _dims(m=1, kg=1, s=1)).difference_pairs() == []
