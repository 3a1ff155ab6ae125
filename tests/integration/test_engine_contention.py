"""Lost races on the CAS path (cases 21, 22, 22a): bounded retries with jitter, then
the fallback lane, serialised per counter by its semaphore; numbers stay unique throughout."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from engine_support import CASE, assert_unique_contiguous, bump_in_place, make_platform, number, run_threads
from prometheus_client import REGISTRY

from autonumber.catalog.cache import Rule
from autonumber.db import create_engine
from autonumber.db.tables import counter_table
from autonumber.runtime import Platform

RETRIES = 5


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url, strategy="cas", max_retries=RETRIES, pool_size=16, reservation_pool_size=16)
    yield p
    p.close()


def fallbacks() -> float:
    return REGISTRY.get_sample_value("autonumber_fallback_total") or 0.0


def in_flight() -> float:
    return REGISTRY.get_sample_value("autonumber_fallback_in_flight") or 0.0


class Bumper:
    """Makes every CAS attempt lose: another connection advances the row between read and CAS.

    On a single-writer backend (SQLite) a second connection cannot write while the reservation holds
    the lock, so the bump runs inside the reservation's transaction instead (and rolls back with it).
    """

    def __init__(self, p: Platform, url: str) -> None:
        self.single_writer = p.dialect.name == "sqlite"
        self.other = create_engine(url, pool_size=4)
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, conn: sa.Connection, rule: Rule, key: str, _value: int) -> None:
        with self._lock:
            self.count += 1
        if self.single_writer:
            bump_in_place(conn, rule, key)
            return
        with self.other.begin() as other:
            bump_in_place(other, rule, key)


def test_case21_lost_races_retry_with_bounded_jitter(platform: Platform) -> None:
    """Every reservation loses its first CAS once, retries after a jittered sleep and wins."""
    state = threading.local()
    forced = [0]
    lock = threading.Lock()

    def lose_first(conn: sa.Connection, rule: Rule, key: str, value: int) -> None:
        if getattr(state, "fresh", False):
            state.fresh = False
            with lock:
                forced[0] += 1
            bump_in_place(conn, rule, key)  # rolled back with the lost attempt: no gap

    def assign() -> str:
        state.fresh = True  # the first CAS of this reservation will lose
        return platform.engine.assign_one(CASE, {})

    sleeps: list[float] = []
    platform.engine.hooks.before_cas = lose_first
    platform.engine.reserver.sleep = lambda s: (sleeps.append(s), time.sleep(s))[1]
    lanes: list[str] = []  # this platform's fallbacks only (the prometheus counter is process-wide)
    reserve_fallback = platform.engine.reserver.reserve_fallback
    platform.engine.reserver.reserve_fallback = (  # type: ignore[method-assign]
        lambda rule, *args: (lanes.append(rule.field_id), reserve_fallback(rule, *args))[1]
    )
    values = run_threads(8, lambda _i: [assign() for _ in range(15)])
    assert assert_unique_contiguous(values) == list(range(1, 121))
    assert forced[0] == 120
    assert len(sleeps) >= 120
    assert all(0 <= s <= 2 ** (RETRIES + 3) / 1000 for s in sleeps)
    assert len(set(sleeps)) > len(sleeps) // 2, "jitter must spread the retries"
    if platform.dialect.name == "sqlite":
        # a single writer has no natural races: one forced loss each never exhausts the budget
        assert lanes == [], "one forced loss per reservation never needs the fallback lane"
    # On servers, natural contention on top of the forced loss may exhaust a budget: the fallback
    # lane then serves it (≈ 5-10 % of these 120 on MariaDB), and the numbers above stay contiguous.


def test_case22_five_losses_take_the_fallback_lane(platform: Platform, db_url: str) -> None:
    bumper = Bumper(platform, db_url)
    platform.engine.hooks.before_cas = bumper
    platform.engine.reserver.sleep = lambda _s: None
    before = fallbacks()
    try:
        value = platform.engine.assign_one(CASE, {})
    finally:
        bumper.other.dispose()
    assert bumper.count == RETRIES
    assert fallbacks() == before + 1
    bumps = 0 if bumper.single_writer else RETRIES
    assert number(value) == 1 + bumps
    assert _next_value(platform) == 2 + bumps


def test_case22a_herd_of_fallbacks_is_serialised_per_counter(platform: Platform, db_url: str) -> None:
    """16 threads exhaust their retries together; the semaphore lets one fallback at a time run."""
    bumper = Bumper(platform, db_url)
    seen: list[float] = []

    def inside(_rule: Rule, _key: str) -> None:
        seen.append(in_flight())
        time.sleep(0.003)  # widen the window in which a second fallback would be visible

    platform.engine.hooks.before_cas = bumper
    platform.engine.hooks.in_fallback = inside
    before = fallbacks()
    try:
        values = run_threads(16, lambda _i: [platform.engine.assign_one(CASE, {}) for _ in range(4)])
    finally:
        bumper.other.dispose()
    assert len(set(values)) == 64
    assert fallbacks() == before + 64
    assert len(seen) == 64 and max(seen) == 1.0, f"fallbacks in flight: {sorted(set(seen))}"
    assert platform.engine.reserver.max_fallback_in_flight == 1
    assert in_flight() == 0
    if bumper.single_writer:
        assert_unique_contiguous(values)
    assert max(number(v) for v in values) < _next_value(platform)


def _next_value(p: Platform) -> int:
    with p.db.connect() as conn:
        return int(
            conn.execute(
                sa.select(counter_table.c.next_value).where(
                    counter_table.c.field_id == CASE, counter_table.c.scope_key == ""
                )
            ).scalar_one()
        )
