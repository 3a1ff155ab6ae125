"""The interpreter settings of a bulk import: the collector off and threads switching every
millisecond while imports run, each restored to what it was when the last one ends; a young
collection still frees reference cycles."""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from collections.abc import Iterator

import pytest

from autonumber.bulk.collection import (
    SWITCH_INTERVAL,
    YoungCollections,
    collect_young,
    paused_collection,
    quick_switches,
)


@pytest.fixture(autouse=True)
def _enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()  # as it was, whatever the test left


def test_paused_inside_and_restored_after_even_on_error() -> None:
    with pytest.raises(RuntimeError), paused_collection():
        assert not gc.isenabled()
        raise RuntimeError("batch failed")
    assert gc.isenabled()


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    with paused_collection():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_and_concurrent_pauses_end_with_the_last() -> None:
    inside, release = threading.Event(), threading.Event()

    def other_import() -> None:
        with paused_collection():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=other_import)
    with paused_collection():
        worker.start()
        assert inside.wait(10)
        with paused_collection():
            assert not gc.isenabled()
    assert not gc.isenabled()  # the other import still runs
    release.set()
    worker.join(10)
    assert gc.isenabled()


class _Node:
    other: object


def _cycle() -> weakref.ref[_Node]:
    """Two objects that refer to each other and to nothing else: only a collection frees them."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_young_collection_frees_cycles_made_while_paused() -> None:
    with paused_collection():
        gone = _cycle()
        assert gone() is not None  # a cycle: reference counting alone does not free it
        collect_young()
        assert gone() is None


def test_young_collections_run_once_every_so_many_rows() -> None:
    collections = YoungCollections(every=10)
    with paused_collection():
        gone = _cycle()
        collections.after(6)
        assert gone() is not None, "6 rows of 10: no collection yet"
        collections.after(4)
        assert gone() is None, "10 rows: collected"
        again = _cycle()
        collections.after(9)
        assert again() is not None, "the count starts over after a collection"
        collections.after(1)
        assert again() is None


@pytest.mark.parametrize("before", [0.005, SWITCH_INTERVAL / 2])
def test_threads_switch_quickly_while_imports_run_then_as_before(before: float) -> None:
    was = sys.getswitchinterval()
    sys.setswitchinterval(before)
    try:
        with quick_switches():
            assert sys.getswitchinterval() == pytest.approx(min(before, SWITCH_INTERVAL))
            with quick_switches():  # a second import at the same time
                pass
            assert sys.getswitchinterval() == pytest.approx(min(before, SWITCH_INTERVAL))
        assert sys.getswitchinterval() == pytest.approx(before)
    finally:
        sys.setswitchinterval(was)
