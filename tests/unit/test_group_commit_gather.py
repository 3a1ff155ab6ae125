"""GroupCommit without a database: the callers of a flight that just landed are gathered into the
next one, instead of splitting into two halves that wait for each other's flight."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from autonumber.write import group_commit
from autonumber.write.group_commit import GroupCommit, Row

CALLERS = 8
ROUNDS = 12
FLIGHT = 0.04
"""Seconds a write takes: long beside a caller's way back, so the gathering window (half of it)
holds on a loaded machine too."""


class SlowWriter:
    """Writes take FLIGHT seconds; records each group's size."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, object_name: str, rows: list[Row]) -> list[Row]:
        with self._lock:
            self.sizes.append(len(rows))
        time.sleep(FLIGHT)
        return rows


def closed_loop(gc: GroupCommit) -> list[list[Row]]:
    """CALLERS callers, each inserting ROUNDS rows one after the other."""

    def caller(i: int) -> list[Row]:
        return [gc.insert("Case", {"n": f"{i}-{k}"}) for k in range(ROUNDS)]

    with ThreadPoolExecutor(CALLERS) as pool:
        return list(pool.map(caller, range(CALLERS)))


@pytest.fixture(autouse=True)
def long_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window is half a flight (20 ms here), not the production cap of 5 ms."""
    monkeypatch.setattr(group_commit, "MAX_GATHER", 1.0)


def test_the_callers_of_a_landed_flight_fly_together_in_the_next() -> None:
    writer = SlowWriter()
    gc = GroupCommit(writer)
    stored = closed_loop(gc)
    assert [r["n"] for rows in stored for r in rows] == [
        f"{i}-{k}" for i in range(CALLERS) for k in range(ROUNDS)
    ]  # every caller got its own rows back
    assert sum(writer.sizes) == CALLERS * ROUNDS
    steady = writer.sizes[2:]  # the first flights form before every caller has arrived
    assert max(steady) == CALLERS, writer.sizes
    assert sum(steady) / len(steady) >= 6, writer.sizes
    assert gc.stats.gathered > 0


def test_without_gathering_the_callers_split_into_halves() -> None:
    """The same loop with `gather=0`: a flight holds about half the callers (what gathering fixes)."""
    writer = SlowWriter()
    closed_loop(GroupCommit(writer, gather=0))
    steady = writer.sizes[2:]
    assert sum(steady) / len(steady) <= 5, writer.sizes


def test_a_caller_alone_never_waits() -> None:
    writer = SlowWriter()
    gc = GroupCommit(writer)
    for k in range(5):
        assert gc.insert("Case", {"n": k}) == {"n": k}
    assert writer.sizes == [1] * 5
    assert gc.stats.gathered == 0


def test_a_gathering_leader_departs_at_its_deadline_with_whoever_came() -> None:
    """A held flight of one lands while two callers wait: their leader waits for the landed
    flight's caller too, which does not come back, and departs with the two at its deadline."""
    release = threading.Event()
    sizes: list[int] = []

    def write(object_name: str, rows: list[Row]) -> list[Row]:
        sizes.append(len(rows))
        if rows[0]["n"] == "hold":
            release.wait(10)
        return rows

    gc = GroupCommit(write)
    with ThreadPoolExecutor(3) as pool:
        held = pool.submit(gc.insert, "Case", {"n": "hold"})
        while not sizes:
            time.sleep(0.005)
        members = [pool.submit(gc.insert, "Case", {"n": i}) for i in range(2)]
        deadline = time.monotonic() + 10
        while gc.queued("Case") < 2:
            assert time.monotonic() < deadline, "the members did not queue"
            time.sleep(0.005)
        # the gathering window is half the held flight: a flight of a second leaves the leader
        # half a second to wake before it closes (a few ms of flight failed on a loaded machine)
        time.sleep(1.0)
        release.set()
        assert held.result(10) == {"n": "hold"}
        assert [f.result(10) for f in members] == [{"n": 0}, {"n": 1}]
    assert sizes == [1, 2]
    assert gc.stats.gathered == 1


def test_gather_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="gather"):
        GroupCommit(SlowWriter(), gather=-0.1)


class CountingCondition(threading.Condition):
    """Counts the wake-ups sent to a gathering leader."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.wakeups = 0

    def notify_all(self) -> None:
        self.wakeups += 1
        super().notify_all()


def test_a_gathering_leader_is_woken_once_per_flight_not_at_every_join() -> None:
    """The joiners of a gathering group wake its leader only when the group holds the rows the
    leader waits for: earlier wake-ups would only send it back to wait (a GIL hand-off each)."""
    writer = SlowWriter()
    gc = GroupCommit(writer)
    counting = CountingCondition(gc._lock)
    gc._joined = counting
    closed_loop(gc)
    assert gc.stats.gathered > 0
    assert counting.wakeups <= gc.stats.groups, (counting.wakeups, gc.stats)
