"""PostgreSQL: a reservation whose numbers are stored only by the caller's later COMMIT commits
without waiting for the disk (`synchronous_commit` off for its own transaction alone); every other
COMMIT, and every later user of the pooled connection, waits as before (docs/engine.md, "A
reservation's COMMIT")."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from engine_support import traced

from autonumber.runtime import Platform
from support import make_platform

pytestmark = pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)

DEFERRED = "set_config('synchronous_commit', 'off', true)"
SOURCE = "SELECT source FROM pg_settings WHERE name = 'synchronous_commit'"


def reservations(seen: list[str]) -> list[str]:
    """The statements that moved a counter."""
    return [s for s in seen if 'UPDATE "_System_AutoNumberCounter"' in s]


def session_settings(platform: Platform) -> list[str]:
    """Where each connection of the reservation pool now takes `synchronous_commit` from, read on
    the driver's connection: "session" only if a setting outlived its transaction."""
    pool: Any = platform.reservation_db.pool
    held = [platform.reservation_db.raw_connection() for _ in range(pool.checkedin())]
    try:
        return [str(c.driver_connection.execute(SOURCE).fetchone()[0]) for c in held]
    finally:
        for c in held:
            c.driver_connection.rollback()
            c.close()


def test_a_reservation_for_a_callers_row_defers_its_flush_to_the_callers_commit(platform: Platform) -> None:
    """Case's number comes from one autocommit statement (increment and journal line) that defers
    its own COMMIT."""
    with traced(platform) as seen, platform.begin() as conn:
        record = platform.records.insert("Case", {"Subject": "s"}, conn)
    (reservation,) = reservations(seen)
    assert DEFERRED in reservation, seen
    sources = session_settings(platform)
    assert sources and "session" not in sources
    assert platform.records.get("Case", record["Id"])["CaseNumber"] == record["CaseNumber"]


def test_a_scoped_reservation_defers_its_flush_in_its_own_transaction(platform: Platform) -> None:
    """Quote_No__c's counter is chosen by prefix and date: its reservation is a transaction of
    several statements, the first of which defers that transaction's COMMIT (QuoteNumber's is the
    one autocommit statement)."""
    account = platform.records.insert("Account", {"Name": "a", "BillingCountryCode": "SG"})
    platform.records.insert("Quote", {"AccountId": account["Id"]})  # the scope's counter row exists
    with traced(platform) as seen, platform.begin() as conn:
        record = platform.records.insert("Quote", {"AccountId": account["Id"]}, conn)
    assert len(reservations(seen)) == 2, seen
    scoped = next(s for s in reservations(seen) if DEFERRED not in s)
    first = seen.index(scoped)
    assert any(s.startswith("SELECT") and DEFERRED in s for s in seen[:first]), seen
    assert "COMMIT" in seen[first:], seen
    sources = session_settings(platform)
    assert sources and "session" not in sources
    stored = platform.records.get("Quote", record["Id"])
    assert stored["Quote_No__c"] == record["Quote_No__c"] and stored["Quote_No__c"].startswith("SG-QT-")


def test_numbers_handed_out_or_committed_by_us_wait_for_the_disk(platform: Platform) -> None:
    """assign_one's number leaves the database at once, and the group writer's COMMIT stores its
    rows: neither may be lost in a crash, so neither defers."""
    with traced(platform) as seen:
        platform.engine.assign_one("Case.CaseNumber", {})
        platform.records.insert("Case", {"Subject": "grouped"})
        with platform.begin() as conn:
            platform.engine.assign_one("Account.Account_ID__c", {}, conn)
    assert len(reservations(seen)) >= 2, seen
    assert not any(DEFERRED in s for s in seen), seen


def test_concurrent_deferred_and_durable_reservations_never_share_one(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The combiner groups concurrent single reservations of one counter; one that defers its
    flush must never carry a number `assign_one` hands out. Every number stays unique."""
    kinds: list[tuple[str, bool]] = []
    reserve_one = platform.engine.combiner.reserve_one

    def noted(key: Any, reserve_n: Any) -> Any:
        kinds.append((threading.current_thread().name.split("-")[0], key[-1]))
        return reserve_one(key, reserve_n)

    monkeypatch.setattr(platform.engine.combiner, "reserve_one", noted)
    errors: list[BaseException] = []
    numbers: list[str] = []
    start = threading.Barrier(8)

    def hand_out() -> None:
        for _ in range(25):
            numbers.append(platform.engine.assign_one("Case.CaseNumber", {}))

    def store() -> None:
        for _ in range(25):
            with platform.begin() as conn:
                numbers.append(platform.records.insert("Case", {"Subject": "t"}, conn)["CaseNumber"])

    def run(work: Any) -> None:
        start.wait()
        try:
            work()
        except BaseException as exc:  # reported below, never lost
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=(work,), name=f"{work.__name__}-{i}")
        for i, work in enumerate([hand_out, store] * 4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(set(numbers)) == len(numbers) == 200
    assert sorted(set(kinds)) == [("hand_out", False), ("store", True)], kinds


def test_durable_reservations_makes_every_reservation_wait_for_the_disk(db_url: str) -> None:
    p = make_platform(db_url, poll_interval=3600.0, durable_reservations=True)
    try:
        with traced(p) as seen, p.begin() as conn:
            record = p.records.insert("Case", {"Subject": "s"}, conn)
        (reservation,) = reservations(seen)
        assert DEFERRED not in reservation, seen
        assert p.records.get("Case", record["Id"])["CaseNumber"] == record["CaseNumber"]
    finally:
        p.close()
