"""runtime.collector: the garbage collector's thresholds are raised for a search and put back after."""

from __future__ import annotations

import gc

import pytest

from dgsr.runtime import collector


def test_raised_inside_restored_after_even_when_nested_or_raising(thresholds):
    with collector.fewer_collections():
        assert gc.get_threshold() == collector.SEARCH_THRESHOLDS
        with collector.fewer_collections():  # a nested search (or another thread's) keeps them
            assert gc.get_threshold() == collector.SEARCH_THRESHOLDS
        assert gc.get_threshold() == collector.SEARCH_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(KeyError), collector.fewer_collections():
        raise KeyError("x")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_change_made_meanwhile_and_a_disabled_collector_are_left_alone(thresholds):
    with collector.fewer_collections():
        gc.set_threshold(5, 5, 5)  # the user's code changed them during the search: theirs stays
    assert gc.get_threshold() == (5, 5, 5)
    gc.set_threshold(0)  # the collector switched off by a threshold of 0
    with collector.fewer_collections():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0
    gc.set_threshold(100_000, 50, 200)  # higher than the search's: kept as they are
    with collector.fewer_collections():
        assert gc.get_threshold() == (100_000, 50, 200)
