"""In-process combining: concurrent requests for one counter share one reservation of k values.

While a reservation for a counter is in flight, new requests for it join a waiting group; when
the flight lands, the first member of that group reserves for the whole group at once. Under load
one durable commit serves many callers; with no contention it costs one reservation, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from .reservation import Reservation

ReserveN = Callable[[int], Reservation]


@dataclass
class _Group:
    size: int = 0
    lead: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    result: Reservation | None = None
    error: BaseException | None = None


@dataclass
class _Slot:
    in_flight: bool = False
    waiting: _Group | None = None


class Combiner:
    """Groups concurrent single-value requests per key; one member reserves for the group."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: dict[Hashable, _Slot] = {}
        self.largest_group = 0

    def reserve_one(self, key: Hashable, reserve_n: ReserveN) -> tuple[Reservation, int]:
        """Return the group's reservation and this caller's offset in it."""
        with self._lock:
            slot = self._slots.setdefault(key, _Slot())
            if not slot.in_flight:
                slot.in_flight = True
                group, index, run_now = _Group(size=1), 0, True
            else:
                if slot.waiting is None:
                    slot.waiting = _Group()
                group, index, run_now = slot.waiting, slot.waiting.size, False
                group.size += 1
        if run_now:
            self._run(key, slot, group, reserve_n)
        elif index == 0:
            group.lead.wait()
            self._run(key, slot, group, reserve_n)
        else:
            group.done.wait()
        if group.error is not None:
            raise group.error
        assert group.result is not None
        return group.result, index

    def _run(self, key: Hashable, slot: _Slot, group: _Group, reserve_n: ReserveN) -> None:
        try:
            group.result = reserve_n(group.size)
            self.largest_group = max(self.largest_group, group.size)
        except BaseException as exc:  # every member of the group must see the failure
            group.error = exc
        finally:
            group.done.set()
            with self._lock:
                following = slot.waiting
                slot.waiting = None
                if following is None:
                    slot.in_flight = False
                    if self._slots.get(key) is slot:
                        del self._slots[key]
            if following is not None:
                following.lead.set()
