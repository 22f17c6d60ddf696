"""A Ctrl-C is recognised whether it arrives as ``KeyboardInterrupt`` or as the ``SystemError``
CPython raises when the signal handler ran while compiled code was returning (stop 38's CI)."""

from __future__ import annotations

import signal

import pytest

from dgsr.runtime.interrupts import INTERRUPTS, is_interrupt, raised_as, watching_ctrl_c
from dgsr.runtime.time_cap import can_cap, run_capped
from tests.ctrl_c import CTRL_C_SHAPES


@pytest.mark.parametrize("shape", CTRL_C_SHAPES)
def test_both_shapes_of_a_ctrl_c_are_interrupts_and_are_caught_by_the_tuple(shape):
    with pytest.raises(BaseException) as caught:
        shape()
    err = caught.value
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


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test (a runner started in the background has SIGINT
    ignored, and then Python installs none)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _swallowed_ctrl_c() -> None:
    """A Ctrl-C whose KeyboardInterrupt never reaches the caller (as in a finalizer)."""
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass


def test_the_watch_notes_a_ctrl_c_whose_exception_was_lost(python_sigint_handler):
    with watching_ctrl_c() as watch:
        assert not watch.seen
        _swallowed_ctrl_c()
    assert watch.seen
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_the_watch_still_raises_keyboard_interrupt(python_sigint_handler):
    with pytest.raises(KeyboardInterrupt), watching_ctrl_c():
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_watch_leaves_a_program_s_own_handler_alone():
    calls = []
    before = signal.signal(signal.SIGINT, lambda *_: calls.append(1))
    try:
        with watching_ctrl_c() as watch:
            signal.raise_signal(signal.SIGINT)
        assert calls == [1] and not watch.seen
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_search_stops_at_a_ctrl_c_whose_exception_was_lost(python_sigint_handler):
    import numpy as np

    from dgsr.core.budget import Budget
    from dgsr.policies.random import RandomPolicy
    from dgsr.search.mcts import run_search

    class LosesACtrlC(RandomPolicy):
        calls = 0

        def propose(self, context, expression, k, rng):
            type(self).calls += 1
            if type(self).calls == 5:
                _swallowed_ctrl_c()
            return super().propose(context, expression, k, rng)

    X = np.random.default_rng(0).uniform(1, 3, size=(80, 2))
    result = run_search(X, X[:, 0] * X[:, 1] + np.sin(X[:, 1]), LosesACtrlC(), rng=0,
                        budget=Budget(max_evaluations=200_000))
    assert result.stop_reason == "interrupted"
    assert LosesACtrlC.calls == 5 and result.archive.front()
