"""Group commit: concurrent independent `records.insert` calls for one object share one transaction.

The insert-side twin of engine/combining.py. While a group's transaction for an object is in
flight, new callers queue in the next group; when a flight lands, the next group's first member
writes every member's row at once (one reservation, one multi-row INSERT, one COMMIT) and each
member takes back its own record. A group whose write fails is retried row by row, each member
writing its own row alone, so one bad row never fails another caller — except when the write gave up
on lost races (`final`): a row alone would lose the same races, and its caller has waited enough.

Gathering: the callers of a flight that just landed are usually on their way back with their next
row, so the next group's leader waits for them a little (a share of the landed flight's duration,
at most MAX_GATHER) while its group still takes members. Without it, callers split into two
alternating halves, each waiting for the other's flight, and a group holds half of them.
"""

from __future__ import annotations

import threading
import time
from _thread import LockType
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]
Write = Callable[[str, list[Row]], list[Row]]
"""Writes checked rows of one object in one transaction of its own; returns them as stored."""
Retry = Callable[[str, list[Row], BaseException], list[Row]]
"""Writes one member's row alone after its group's write failed with that error (which may say the
group's COMMIT landed after all)."""

MAX_GROUP = 256
"""Rows per group: bounds one statement's size and one transaction's lock footprint."""
GATHER = 0.5
"""How long a group's leader waits for the callers of the flight that just landed, as a share of
that flight's duration (0: it departs at once)."""
MAX_GATHER = 0.005
"""The longest such wait, in seconds, however long the last flight took."""


def _held_lock() -> LockType:
    """A lock taken already: its next `acquire` waits for a `release` from another thread. A
    caller waits on one of its own, a C call each way, where threading.Event adds the Python of a
    Condition per waiter."""
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(eq=False)
class _Group:
    rows: list[Row] = field(default_factory=list)
    lead: LockType = field(default_factory=_held_lock)
    """Released when the group is handed its flight (its leader waits on it)."""
    members: list[LockType] = field(default_factory=list)
    """One per member after the leader, each released once the group's write has ended; the list
    is complete when the leader departs (no member joins a departed group)."""
    stored: list[Row] | None = None
    error: BaseException | None = None
    led: bool = False
    """A flight is handed to it: its leader gathers, then takes it out of the queue and writes."""
    expect: int = 0
    """The rows its leader waits for (the callers expected back), at most until `until`."""
    until: float = 0.0


@dataclass
class _Slot:
    flights: int = 0
    waiting: deque[_Group] = field(default_factory=deque)


@dataclass(frozen=True)
class _Landing:
    """An object's last flight: its rows, how long its write took, when it landed (monotonic)."""

    rows: int
    seconds: float
    at: float


@dataclass
class GroupStats:
    """What the groups did since the last `reset` (read by the benchmark and the tests)."""

    groups: int = 0
    rows: int = 0
    largest: int = 0
    split: int = 0
    """Groups whose write failed and whose rows were retried one by one."""
    gathered: int = 0
    """Flights whose leader waited for the callers of the flight before it."""


class GroupCommit:
    """Joins concurrent single-row inserts per object into groups written by one member."""

    def __init__(
        self,
        write: Write,
        *,
        max_group: int = MAX_GROUP,
        max_flights: int = 1,
        final: Callable[[BaseException], bool] = lambda exc: False,
        retry: Retry | None = None,
        gather: float = GATHER,
    ) -> None:
        if max_group < 1 or max_flights < 1 or gather < 0:
            raise ValueError("max_group and max_flights must be at least 1, gather at least 0")
        self._write = write
        self._retry: Retry = retry or (lambda object_name, rows, error: write(object_name, rows))
        self._final = final
        self._lock = threading.Lock()
        self._joined = threading.Condition(self._lock)
        self._slots: dict[str, _Slot] = {}
        self._landed: dict[str, _Landing] = {}
        self.max_group = max_group
        self.max_flights = max_flights
        self.gather = gather
        self.stats = GroupStats()

    def reset_stats(self) -> GroupStats:
        """Return the counters so far and start new ones."""
        with self._lock:
            stats, self.stats = self.stats, GroupStats()
        return stats

    def queued(self, object_name: str) -> int:
        """Rows waiting for a flight of `object_name` to land."""
        with self._lock:
            slot = self._slots.get(object_name)
            return sum(len(g.rows) for g in slot.waiting) if slot else 0

    def insert(self, object_name: str, row: Row) -> Row:
        """Write one checked row (in a group when others are writing too); return it as stored."""
        group, index = self._join(object_name, row)
        if group is None:  # nobody in flight or waiting: a group of one, written with no hand-off
            return self._alone(object_name, row)
        if index == 0:
            group.lead.acquire()
            self._depart(object_name, group)
            self._run(object_name, group)
        else:
            group.members[index - 1].acquire()
        if group.error is None:
            assert group.stored is not None
            return group.stored[index]
        if len(group.rows) == 1 or not isinstance(group.error, Exception) or self._final(group.error):
            raise group.error
        # Same Id as in the failed group: if that COMMIT did land after all, this insert is refused
        # as a duplicate Id instead of storing the record twice.
        return self._retry(object_name, [dict(row)], group.error)[0]

    def _join(self, object_name: str, row: Row) -> tuple[_Group | None, int]:
        """The group `row` joined and its place in it; None when it takes a free flight alone.
        A caller that finds the object idle right after a flight of several rows landed leads a
        group of its own that waits for the others of that flight."""
        with self._lock:
            slot = self._slots.setdefault(object_name, _Slot())
            if slot.flights < self.max_flights and not slot.waiting:
                slot.flights += 1
                landing = self._landed.get(object_name)
                now = time.monotonic()
                if landing is None or landing.rows < 2 or now - landing.at > landing.seconds:
                    return None, 0
                group = _Group([row])
                self._hand_flight(group, landing.rows, landing.seconds, now)
                group.lead.release()
                slot.waiting.append(group)
                return group, 0
            if not slot.waiting or len(slot.waiting[-1].rows) >= self.max_group:
                slot.waiting.append(_Group())
            group = slot.waiting[-1]
            group.rows.append(row)
            if len(group.rows) > 1:
                group.members.append(_held_lock())
            if group.led and len(group.rows) == group.expect:  # its gathering leader may depart
                self._joined.notify_all()
            return group, len(group.rows) - 1

    def _hand_flight(self, group: _Group, rows: int, seconds: float, now: float) -> None:
        """Give `group` a flight; its leader waits for `rows` rows, a share of `seconds` at most."""
        group.led = True
        group.expect = min(rows, self.max_group)
        group.until = now + min(MAX_GATHER, self.gather * seconds)

    def _depart(self, object_name: str, group: _Group) -> None:
        """Gather (see the module's docstring), then take `group` out of the queue: it is full."""
        with self._lock:
            if len(group.rows) < group.expect and group.until > time.monotonic():
                self.stats.gathered += 1
                while len(group.rows) < group.expect and (left := group.until - time.monotonic()) > 0:
                    self._joined.wait(left)
            self._slots[object_name].waiting.remove(group)

    def _alone(self, object_name: str, row: Row) -> Row:
        """The flight of a caller that found nobody to group with: its own row, its own error."""
        started = time.monotonic()
        try:
            return self._write(object_name, [dict(row)])[0]
        finally:
            self._land(object_name, 1, started, failed=False)

    def _run(self, object_name: str, group: _Group) -> None:
        started = time.monotonic()
        try:
            group.stored = self._write(object_name, [dict(r) for r in group.rows])
        except BaseException as exc:  # every member sees it, then retries its own row
            group.error = exc
        finally:
            for member in group.members:
                member.release()
            self._land(object_name, len(group.rows), started, failed=group.error is not None)

    def _land(self, object_name: str, rows: int, started: float, *, failed: bool) -> None:
        """Count a landed flight of `rows` rows and hand the slot to the next group waiting for
        one, if any; that group's leader waits for this flight's callers too."""
        with self._lock:
            self.stats.groups += 1
            self.stats.rows += rows
            self.stats.largest = max(self.stats.largest, rows)
            self.stats.split += failed and rows > 1
            now = time.monotonic()
            self._landed[object_name] = _Landing(rows, now - started, now)
            slot = self._slots[object_name]
            following = next((g for g in slot.waiting if not g.led), None)
            if following is None:
                slot.flights -= 1
                if slot.flights == 0:
                    del self._slots[object_name]
            else:
                self._hand_flight(following, rows + len(following.rows), now - started, now)
        if following is not None:
            following.lead.release()
