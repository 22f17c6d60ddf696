"""Every process-wide setting dgsr changes is held by a ``with`` block that puts the previous
state back when the block ends, also when it ends by an exception."""

from __future__ import annotations

import gc
import signal
import threading
import warnings

import pytest
from threadpoolctl import threadpool_info

from dgsr.runtime.shared import SharedSetting
from dgsr.runtime.termination import sigterm_as_interrupt
from dgsr.runtime.threads import blas_threads, one_thread_env, torch_threads
from dgsr.runtime.warning_display import showing_warnings_with


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def test_a_shared_setting_is_applied_once_and_undone_by_the_last_block_even_on_exceptions():
    calls = []
    setting = SharedSetting(lambda: calls.append("apply") or "saved", lambda saved: calls.append(("undo", saved)))
    with setting.held():
        with pytest.raises(KeyError), setting.held():
            raise KeyError("inner")
        assert calls == ["apply"] and setting.inside == 1
    assert calls == ["apply", ("undo", "saved")] and setting.inside == 0
    with pytest.raises(ValueError), setting.held():
        raise ValueError("outer")
    assert calls[-1] == ("undo", "saved") and len(calls) == 4


def test_a_shared_setting_held_by_threads_is_undone_after_the_last_one():
    undone = []
    setting = SharedSetting(lambda: None, lambda _: undone.append(threading.current_thread().name))
    inside, release = threading.Barrier(3), threading.Event()

    def hold():
        with setting.held():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=hold, name=f"t{i}") for i in range(2)]
    for t in threads:
        t.start()
    with setting.held():
        inside.wait()
        release.set()
        for t in threads:
            t.join()
        assert undone == []  # this block still holds it
    assert undone == [threading.current_thread().name]


def test_the_warning_display_comes_back_after_an_exception():
    mine = warnings.showwarning
    shown = []
    with pytest.raises(RuntimeError), showing_warnings_with(lambda message, *rest, **kw: shown.append(str(message))):
        warnings.warn("inside", UserWarning, stacklevel=1)
        raise RuntimeError("boom")
    assert warnings.showwarning is mine
    assert shown == ["inside"]


def test_sigterm_handling_comes_back_after_an_exception():
    def theirs(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, theirs)
    try:
        with pytest.raises(RuntimeError), sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGTERM) is not theirs
            raise RuntimeError("boom")
        assert signal.getsignal(signal.SIGTERM) is theirs
    finally:
        signal.signal(signal.SIGTERM, before)


def test_blas_threads_come_back_after_an_exception():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        callers = _blas_threads()
        if not callers or max(callers) < 2:
            pytest.skip("no BLAS library here runs two threads")
        with pytest.raises(RuntimeError), blas_threads(1):
            assert max(_blas_threads()) == 1
            raise RuntimeError("boom")
        assert _blas_threads() == callers


def test_torch_threads_come_back_after_an_exception():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    other = 2 if before != 2 else 3
    with pytest.raises(RuntimeError), torch_threads(other):
        assert torch.get_num_threads() == other
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with torch_threads(None):  # None leaves it alone
        assert torch.get_num_threads() == before


def test_a_child_process_environment_pins_every_library_to_one_thread():
    env = one_thread_env()
    assert env["OMP_NUM_THREADS"] == "1" and env["OPENBLAS_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "1"


def test_a_stoppable_work_flag_comes_back_after_an_exception():
    from dgsr.search import workers

    assert workers._running is False
    with pytest.raises(RuntimeError), workers.stoppable_work():
        assert workers._running is True
        raise RuntimeError("boom")
    assert workers._running is False


def test_the_search_scope_puts_everything_back_after_an_exception():
    from dgsr.core.linear_terms import weighted_sum  # noqa: F401  (the memos' module loaded)
    from dgsr.core.structure_memos import STRUCTURE_MEMOS
    from dgsr.search.scope import search_scope

    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        handler = signal.getsignal(signal.SIGINT)
        with pytest.raises(RuntimeError), search_scope() as ctrl_c:
            assert gc.get_threshold() != (700, 10, 10)
            assert not ctrl_c.seen
            STRUCTURE_MEMOS.memoised[0](("add", "x0", "c"))  # a memo entry made during the search
            assert STRUCTURE_MEMOS.entries() > 0
            raise RuntimeError("boom")
        assert gc.get_threshold() == (700, 10, 10)
        assert signal.getsignal(signal.SIGINT) is handler
        assert STRUCTURE_MEMOS.entries() == 0
    finally:
        gc.set_threshold(*saved)
