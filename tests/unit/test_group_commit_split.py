"""GroupCommit without a database: a failed group is retried row by row, unless the write gave up on
lost races (`final`), where a row alone would lose the same races and its caller has waited enough."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from autonumber.write.group_commit import GroupCommit, Row


class LostRaces(Exception):
    pass


class Writer:
    """Holds the first flight until released; fails every group of more than one row."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[int] = []

    def __call__(self, object_name: str, rows: list[Row]) -> list[Row]:
        self.calls.append(len(rows))
        if rows[0]["n"] == "hold":
            self.release.wait(10)
        if len(rows) > 1:
            raise LostRaces("certification failed")
        return rows


def queued_behind_hold(gc: GroupCommit, writer: Writer, members: int) -> list[Future[Row]]:
    pool = ThreadPoolExecutor(members + 1)
    pool.submit(gc.insert, "Case", {"n": "hold"})
    while not writer.calls:
        time.sleep(0.01)
    futures = [pool.submit(gc.insert, "Case", {"n": i}) for i in range(members)]
    deadline = time.monotonic() + 10
    while gc.queued("Case") < members:
        assert time.monotonic() < deadline, "the callers did not queue behind the held flight"
        time.sleep(0.01)
    writer.release.set()
    pool.shutdown(wait=True)
    return futures


def outcomes(futures: list[Future[Row]]) -> list[Any]:
    return [f.exception() or f.result() for f in futures]


def test_a_failed_group_is_retried_row_by_row() -> None:
    writer = Writer()
    gc = GroupCommit(writer)
    results = outcomes(queued_behind_hold(gc, writer, 4))
    assert results == [{"n": i} for i in range(4)]
    assert writer.calls == [1, 4, 1, 1, 1, 1]


def test_a_group_that_gave_up_on_lost_races_is_not_retried_row_by_row() -> None:
    writer = Writer()
    gc = GroupCommit(writer, final=lambda exc: isinstance(exc, LostRaces))
    results = outcomes(queued_behind_hold(gc, writer, 4))
    assert all(isinstance(r, LostRaces) for r in results), results
    assert writer.calls == [1, 4]


def test_a_lone_row_gets_its_error_once() -> None:
    calls: list[int] = []

    def fail(object_name: str, rows: list[Row]) -> list[Row]:
        calls.append(len(rows))
        raise LostRaces("certification failed")

    with pytest.raises(LostRaces):
        GroupCommit(fail).insert("Case", {"n": 1})
    assert calls == [1]
