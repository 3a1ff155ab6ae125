"""Case 29: the reservation runs in its own short transaction, so a caller
transaction that stays open after its insert does not delay another caller's reservation.

Not on SQLite: there a caller transaction holds the database's single write lock from its start
(docs/engine.md, the SQLite rule), so a second writer waits by design; docs/engine.md explains the rule."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from engine_support import all_strategies, make_platform, number

from autonumber.runtime import Platform

BLOCKED_AFTER = 30.0
"""A generous bound: a caller that has not finished by then is blocked by the open transaction
(MariaDB's lock wait is 50 s; PostgreSQL's is unbounded), not merely slow on a loaded machine."""


@pytest.fixture(params=all_strategies())
def platform(request: pytest.FixtureRequest, server_db_url: str) -> Iterator[Platform]:
    p = make_platform(server_db_url, strategy=request.param)
    yield p
    p.close()


def test_case29_open_caller_txn_does_not_block_reservations(platform: Platform) -> None:
    inserted, release = threading.Event(), threading.Event()
    first: dict[str, str] = {}
    fast: dict[str, object] = {}

    def slow_caller() -> None:
        with platform.begin() as conn:
            first.update(platform.records.insert("Case", {"Subject": "slow"}, conn=conn))
            inserted.set()
            release.wait(BLOCKED_AFTER * 2)  # held open until the other caller is done

    def fast_caller() -> None:
        try:
            fast["assigned"] = platform.engine.assign_one("Case.CaseNumber", {})
            fast["row"] = platform.records.insert("Case", {"Subject": "fast"})
        except BaseException as exc:  # handed to the test, which fails on it
            fast["error"] = exc

    slow = threading.Thread(target=slow_caller)
    slow.start()
    assert inserted.wait(60)
    other = threading.Thread(target=fast_caller)
    other.start()
    other.join(BLOCKED_AFTER)
    finished_while_open = not other.is_alive() and slow.is_alive() and not release.is_set()
    release.set()
    slow.join()
    other.join()
    assert "error" not in fast, fast.get("error")
    assert finished_while_open, "the reservation and insert waited for the open caller transaction"
    assigned, row = str(fast["assigned"]), fast["row"]
    assert isinstance(row, dict)
    assert number(assigned) == number(first["CaseNumber"]) + 1
    assert number(row["CaseNumber"]) == number(first["CaseNumber"]) + 2
