"""Case 29: the reservation runs in its own short transaction, so a caller
transaction that stays open for 2 s after its insert does not delay another caller's reservation.

Not on SQLite: there a caller transaction holds the database's single write lock from its start
(docs/engine.md, the SQLite rule), so a second writer waits by design; docs/engine.md explains the rule."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from engine_support import all_strategies, make_platform, number

from autonumber.runtime import Platform

HOLD = 2.0


@pytest.fixture(params=all_strategies())
def platform(request: pytest.FixtureRequest, server_db_url: str) -> Iterator[Platform]:
    p = make_platform(server_db_url, strategy=request.param)
    yield p
    p.close()


def test_case29_open_caller_txn_does_not_block_reservations(platform: Platform) -> None:
    inserted = threading.Event()
    first: dict[str, str] = {}

    def slow_caller() -> None:
        with platform.begin() as conn:
            first.update(platform.records.insert("Case", {"Subject": "slow"}, conn=conn))
            inserted.set()
            time.sleep(HOLD)

    slow = threading.Thread(target=slow_caller)
    slow.start()
    assert inserted.wait(10)
    started = time.perf_counter()
    assigned = platform.engine.assign_one("Case.CaseNumber", {})
    reserve_wait = time.perf_counter() - started
    started = time.perf_counter()
    row = platform.records.insert("Case", {"Subject": "fast"})
    insert_wait = time.perf_counter() - started
    still_open = slow.is_alive()
    slow.join()
    assert still_open, "the slow caller must still hold its transaction while we measured"
    assert reserve_wait < HOLD / 2 and insert_wait < HOLD / 2, (reserve_wait, insert_wait)
    assert number(assigned) == number(first["CaseNumber"]) + 1
    assert number(row["CaseNumber"]) == number(first["CaseNumber"]) + 2
