"""The import's batch sender: one send in flight, each settled before the next starts, `start`
returning once the send has handed its rows over, its error raised in the importing thread, and
nothing left running when the context ends."""

from __future__ import annotations

import threading
import time

import pytest

from autonumber.db.bulk import Handed
from autonumber.write.batch_sender import BatchSender


def test_each_send_runs_off_the_caller_thread_after_the_one_before() -> None:
    order: list[str] = []
    threads: set[int] = set()
    second_may_end = threading.Event()  # so the second cannot end before the check below

    def send(name: str, seconds: float, handed: Handed, until: threading.Event | None = None) -> None:
        threads.add(threading.get_ident())
        handed()
        time.sleep(seconds)
        if until is not None:
            until.wait(5)
        order.append(name)

    with BatchSender() as sender:
        sender.start(lambda handed: send("first", 0.05, handed))
        sender.start(lambda handed: send("second", 0, handed, second_may_end))
        assert order == ["first"]  # start waited for the first before the second began
        second_may_end.set()
    assert order == ["first", "second"]  # the context settled the last
    assert threading.get_ident() not in threads


def test_a_failed_send_is_raised_where_the_next_starts_or_at_settle() -> None:
    def refused(handed: Handed) -> None:
        raise ValueError("duplicate key")

    with BatchSender() as sender:
        sender.start(refused)
        with pytest.raises(ValueError, match="duplicate key"):
            sender.start(lambda handed: None)
        sender.start(refused)
        with pytest.raises(ValueError, match="duplicate key"):
            sender.settle()
        sender.settle()  # nothing in flight: nothing to raise


def test_an_error_in_the_caller_waits_for_the_send_in_flight() -> None:
    done = threading.Event()

    def slow(handed: Handed) -> None:
        handed()
        time.sleep(0.05)
        done.set()

    with pytest.raises(KeyError), BatchSender() as sender:
        sender.start(slow)
        raise KeyError("bad line")
    assert done.is_set()  # the send ended before the caller could roll back


def test_the_send_error_wins_over_the_callers_but_never_over_an_interruption() -> None:
    def refused(handed: Handed) -> None:
        raise ValueError("duplicate key in batch 2")

    with pytest.raises(ValueError, match="batch 2") as caught, BatchSender() as sender:
        sender.start(refused)
        raise KeyError("the reservation of batch 3 found no connection")
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(GeneratorExit), BatchSender() as sender:
        sender.start(refused)
        raise GeneratorExit


def test_a_send_that_already_failed_is_raised_before_the_next_batch_reserves() -> None:
    started = threading.Event()

    def refused(handed: Handed) -> None:
        started.set()
        raise ValueError("connection lost")

    with BatchSender() as sender:
        sender.start(refused)
        assert started.wait(10)
        time.sleep(0.01)
        with pytest.raises(ValueError, match="connection lost"):
            sender.settle_if_done()
        sender.settle_if_done()  # nothing in flight


def test_start_returns_once_the_send_has_handed_its_rows_over_not_before() -> None:
    steps: list[str] = []
    answered = threading.Event()

    def send(handed: Handed) -> None:
        time.sleep(0.05)  # writing the rows: the caller waits
        steps.append("written")
        handed()
        answered.wait(10)  # the server's answer: the caller goes on meanwhile
        steps.append("answered")

    with BatchSender() as sender:
        sender.start(send)
        steps.append("caller")
        answered.set()
    assert steps == ["written", "caller", "answered"]


def test_a_send_that_fails_before_handing_over_releases_start_and_is_raised() -> None:
    def refused(handed: Handed) -> None:
        raise ValueError("LOAD DATA LOCAL refused")

    with BatchSender() as sender:
        sender.start(refused)  # returns: the send ended without handing anything over
        with pytest.raises(ValueError, match="refused"):
            sender.settle()
