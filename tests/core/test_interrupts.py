"""A Ctrl-C is recognised whether it arrives as ``KeyboardInterrupt`` or as the ``SystemError``
CPython raises when the signal handler ran while compiled code was returning (stop 38's CI)."""

from __future__ import annotations

import signal

import pytest

from dgsr.core.interrupts import INTERRUPTS, is_interrupt, raised_as
from dgsr.core.time_cap import can_cap, run_capped
from tests.ctrl_c import CTRL_C_SHAPES


def _caught(fn) -> BaseException:
    try:
        fn()
    except BaseException as err:  # noqa: BLE001 - the point is to look at what arrives
        return err
    raise AssertionError("did not raise")


@pytest.mark.parametrize("shape", CTRL_C_SHAPES)
def test_both_shapes_of_a_ctrl_c_are_interrupts_and_are_caught_by_the_tuple(shape):
    err = _caught(shape)
    assert is_interrupt(err)
    assert isinstance(err, INTERRUPTS)


def test_a_chain_of_system_errors_down_to_the_ctrl_c_is_an_interrupt():
    inner = SystemError("inner")
    inner.__context__ = KeyboardInterrupt()  # implicit chaining only
    outer = SystemError("outer")
    outer.__cause__ = inner
    assert is_interrupt(outer)


@pytest.mark.parametrize("err", [
    SystemError("a bug in an extension"),
    ValueError("x"),
    RuntimeError("wrapping"),
    None,
])
def test_other_errors_are_not_interrupts(err):
    assert not is_interrupt(err)


def test_only_system_error_carries_an_interrupt():
    # A library that turns a Ctrl-C into its own error type has handled it: not ours to catch.
    err = ValueError("handled")
    err.__cause__ = KeyboardInterrupt()
    assert not is_interrupt(err)


def test_a_cyclic_chain_ends():
    a, b = SystemError("a"), SystemError("b")
    a.__cause__, b.__cause__ = b, a
    assert not is_interrupt(a)


def test_raised_as_names_the_kind():
    err = SystemError("returned a result with an exception set")
    err.__cause__ = TimeoutError()
    assert raised_as(err, TimeoutError) and not raised_as(err, KeyboardInterrupt)


@pytest.mark.skipif(not can_cap(), reason="no interval timer here")
def test_an_alarm_that_arrives_through_compiled_code_still_ends_the_capped_call():
    def spin_then_return_over_the_alarm():
        try:
            while True:
                pass
        except BaseException as err:  # what CPython does when C code returns over it
            raise SystemError("returned a result with an exception set") from err

    before = signal.getsignal(signal.SIGALRM)
    assert run_capped(spin_then_return_over_the_alarm, 0.05) == (False, None)
    assert signal.getsignal(signal.SIGALRM) == before


@pytest.mark.skipif(not can_cap(), reason="no interval timer here")
def test_a_system_error_that_is_not_the_alarm_leaves_the_capped_call():
    def broken():
        raise SystemError("a bug in an extension")

    with pytest.raises(SystemError, match="a bug"):
        run_capped(broken, 5.0)
