"""The import's batch sender: one send in flight, each settled before the next starts, its error
raised in the importing thread, and nothing left running when the context ends."""

from __future__ import annotations

import threading
import time

import pytest

from autonumber.batch_sender import BatchSender


def test_each_send_runs_off_the_caller_thread_after_the_one_before() -> None:
    order: list[str] = []
    threads: set[int] = set()

    def send(name: str, seconds: float) -> None:
        threads.add(threading.get_ident())
        time.sleep(seconds)
        order.append(name)

    with BatchSender() as sender:
        sender.start(lambda: send("first", 0.05))
        sender.start(lambda: send("second", 0))
        assert order == ["first"]  # start waited for the first before the second began
    assert order == ["first", "second"]  # the context settled the last
    assert threading.get_ident() not in threads


def test_a_failed_send_is_raised_where_the_next_starts_or_at_settle() -> None:
    def refused() -> None:
        raise ValueError("duplicate key")

    with BatchSender() as sender:
        sender.start(refused)
        with pytest.raises(ValueError, match="duplicate key"):
            sender.start(lambda: None)
        sender.start(refused)
        with pytest.raises(ValueError, match="duplicate key"):
            sender.settle()
        sender.settle()  # nothing in flight: nothing to raise


def test_an_error_in_the_caller_waits_for_the_send_in_flight_and_wins() -> None:
    done = threading.Event()

    def slow_refused() -> None:
        time.sleep(0.05)
        done.set()
        raise ValueError("send failed too")

    with pytest.raises(KeyError), BatchSender() as sender:
        sender.start(slow_refused)
        raise KeyError("bad line")
    assert done.is_set()  # the send ended before the caller could roll back
