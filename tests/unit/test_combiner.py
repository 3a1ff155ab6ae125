"""The in-process Combiner with fake reservations: requests that arrive while a reservation is in
flight form a group, one member reserves for all, everyone gets a distinct offset, an error reaches
every member of its group, and leadership passes from one flight to the next."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from autonumber.engine.combining import Combiner
from autonumber.engine.reservation import Reservation

AT = datetime(2026, 4, 17, tzinfo=UTC)


class FakeCounter:
    """Hands out consecutive values; the first flight blocks until released (to let groups form)."""

    def __init__(self) -> None:
        self.next = 1
        self.sizes: list[int] = []
        self.leaders: list[str] = []
        self.release_first = threading.Event()
        self.first_entered = threading.Event()
        self._lock = threading.Lock()

    def reserve(self, n: int) -> Reservation:
        with self._lock:
            first = not self.sizes
            self.sizes.append(n)
            self.leaders.append(threading.current_thread().name)
            start, self.next = self.next, self.next + n
        if first:
            self.first_entered.set()
            assert self.release_first.wait(10)
        return Reservation(AT, "", start, n)


def _wait_for_waiters(combiner: Combiner, key: str, expected: int) -> None:
    for _ in range(1000):
        with combiner._lock:
            slot = combiner._slots.get(key)
            if slot is not None and slot.waiting is not None and slot.waiting.size == expected:
                return
        threading.Event().wait(0.005)
    raise AssertionError(f"{expected} waiters never joined")


def test_waiters_form_one_group_with_distinct_offsets() -> None:
    combiner, fake = Combiner(), FakeCounter()
    with ThreadPoolExecutor(9) as pool:
        first = pool.submit(combiner.reserve_one, "k", fake.reserve)
        assert fake.first_entered.wait(5)
        rest = [pool.submit(combiner.reserve_one, "k", fake.reserve) for _ in range(8)]
        _wait_for_waiters(combiner, "k", 8)
        fake.release_first.set()
        results = [first.result(5)] + [f.result(5) for f in rest]
    assert fake.sizes == [1, 8], "one flight for the first caller, one shared reservation for the group"
    values = [res.first + offset for res, offset in results]
    assert sorted(values) == list(range(1, 10))
    assert sorted(offset for _, offset in results[1:]) == list(range(8))
    assert combiner.largest_group == 8
    assert combiner._slots == {}, "an idle key leaves no slot behind"


def test_an_error_reaches_every_member_of_its_group_only() -> None:
    combiner, fake = Combiner(), FakeCounter()
    boom = RuntimeError("database refused")

    def failing(n: int) -> Reservation:
        fake.sizes.append(n)
        raise boom

    with ThreadPoolExecutor(5) as pool:
        first = pool.submit(combiner.reserve_one, "k", fake.reserve)
        assert fake.first_entered.wait(5)
        group = [pool.submit(combiner.reserve_one, "k", failing) for _ in range(4)]
        _wait_for_waiters(combiner, "k", 4)
        fake.release_first.set()
        assert first.result(5)[0].first == 1
        for member in group:
            with pytest.raises(RuntimeError, match="database refused"):
                member.result(5)
    assert fake.sizes == [1, 4]
    res, offset = combiner.reserve_one("k", fake.reserve)
    assert (res.first, offset) == (2, 0), "after a failed group the key works again"


def test_leadership_is_handed_to_the_next_group() -> None:
    """While group 2 is in flight, newcomers form group 3, led by its own first member."""
    combiner = Combiner()
    gates = [threading.Event() for _ in range(3)]
    entered = [threading.Event() for _ in range(3)]
    sizes: list[int] = []
    flights = iter(range(3))
    counter = {"next": 1}
    lock = threading.Lock()

    def reserve(n: int) -> Reservation:
        i = next(flights)
        with lock:
            sizes.append(n)
            start = counter["next"]
            counter["next"] += n
        entered[i].set()
        assert gates[i].wait(10)
        return Reservation(AT, "", start, n)

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(combiner.reserve_one, "k", reserve)]
        assert entered[0].wait(5)
        futures += [pool.submit(combiner.reserve_one, "k", reserve) for _ in range(3)]
        _wait_for_waiters(combiner, "k", 3)
        gates[0].set()
        assert entered[1].wait(5), "the first member of the waiting group must lead the next flight"
        futures += [pool.submit(combiner.reserve_one, "k", reserve) for _ in range(4)]
        _wait_for_waiters(combiner, "k", 4)
        gates[1].set()
        assert entered[2].wait(5)
        gates[2].set()
        results = [f.result(5) for f in futures]
    assert sizes == [1, 3, 4]
    assert sorted(res.first + off for res, off in results) == list(range(1, 9))


def test_keys_do_not_share_flights() -> None:
    combiner = Combiner()
    seen: list[int] = []
    a = combiner.reserve_one("a", lambda n: (seen.append(n), Reservation(AT, "", 10, n))[1])
    b = combiner.reserve_one("b", lambda n: (seen.append(n), Reservation(AT, "", 20, n))[1])
    assert (a[0].first, b[0].first, seen) == (10, 20, [1, 1])


def test_many_threads_get_distinct_values() -> None:
    combiner = Combiner()
    lock = threading.Lock()
    state = {"next": 1, "flights": 0}

    def reserve(n: int) -> Reservation:
        with lock:
            start = state["next"]
            state["next"] += n
            state["flights"] += 1
        threading.Event().wait(0.002)
        return Reservation(AT, "", start, n)

    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda _i: combiner.reserve_one("k", reserve), range(2000)))
    values = sorted(res.first + off for res, off in results)
    assert values == list(range(1, 2001))
    assert state["flights"] < 2000, "under concurrency some requests must have shared a flight"
