"""Group commit of independent inserts: many callers share one transaction and one multi-row
INSERT, each gets exactly its own record, numbers stay unique and contiguous, and a row that fails
(in validation or in the database) fails only its own caller."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa
from engine_support import ReservationLog, assert_unique_contiguous, make_platform, number, run_threads

from autonumber.db.tables import counter_table
from autonumber.errors import RecordError
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform
from autonumber.write.group_commit import GroupCommit
from autonumber.write.strategy import INSIDE_UP_TO

pytestmark = pytest.mark.timeout(180)
SERVER_THREADS, SQLITE_THREADS, PER_THREAD = 50, 8, 20
QUEUED = 12


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    p = make_platform(db_url, group_commit=True, pool_size=8, reservation_pool_size=4)
    yield p
    p.close()


def _groups(p: Platform) -> GroupCommit:
    assert p.records.group_commit is not None
    return p.records.group_commit


def test_group_commit_is_on_by_default(db_url: str) -> None:
    p = make_platform(db_url)
    try:
        assert p.records.group_commit is not None
    finally:
        p.close()


def test_threads_get_their_own_records_unique_and_contiguous(platform: Platform) -> None:
    p = platform
    log = ReservationLog(p)
    threads = SQLITE_THREADS if p.dialect.name == "sqlite" else SERVER_THREADS
    _groups(p).reset_stats()

    def work(i: int) -> list[str]:
        out = []
        for k in range(PER_THREAD):
            subject = f"t{i}-{k}"
            record = p.records.insert("Case", {"Subject": subject})
            assert record["Subject"] == subject, "a caller got another caller's record"
            stored = p.records.get("Case", record["Id"])
            assert stored["CaseNumber"] == record["CaseNumber"] and stored["Subject"] == subject
            out.append(record["CaseNumber"])
        return out

    values = run_threads(threads, work)
    total = threads * PER_THREAD
    assert assert_unique_contiguous(values) == list(range(1, total + 1))
    assert p.records.count("Case") == total
    stats = _groups(p).reset_stats()
    assert stats.rows == total and stats.split == 0
    assert stats.groups < total, "no insert was ever grouped"
    # one reservation per group, and each covers exactly its group's numbers
    assert sum(r.count for r in log.items) == total
    handed = set(number(v) for v in values)
    for res in log.items:
        assert set(range(res.first, res.first + res.count)) <= handed


class _Hold:
    """Holds the first group's transaction open until released, so others queue into one group."""

    def __init__(self, p: Platform) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        p.events.subscribe(RecordBeforeCreate, self)

    def __call__(self, event: RecordBeforeCreate) -> None:
        if any("hold" in r.values() for r in event.records):
            self.entered.set()
            assert self.release.wait(60)


def _queue_behind_hold(
    p: Platform, subjects: list[str], rows: list[dict[str, Any]] | None = None, obj: str = "Case"
) -> tuple[dict[str, Any], list[Any]]:
    """Insert `hold`, queue every row behind it, release; return the hold's record and results."""
    hold = _Hold(p)
    rows = rows if rows is not None else [{"Subject": s} for s in subjects]
    first = "Subject" if obj == "Case" else "Name"
    with ThreadPoolExecutor(len(rows) + 1) as pool:
        held = pool.submit(p.records.insert, obj, {first: "hold"})
        assert hold.entered.wait(30)
        futures = [pool.submit(p.records.insert, obj, row) for row in rows]
        deadline = time.monotonic() + 30
        while _groups(p).queued(obj) < len(rows):
            assert time.monotonic() < deadline, "callers did not queue behind the held group"
            time.sleep(0.01)
        hold.release.set()
        results: list[Any] = []
        for f in futures:
            try:
                results.append(f.result(60))
            except Exception as exc:
                results.append(exc)
        return held.result(60), results


def test_a_row_the_database_refuses_fails_only_its_caller(platform: Platform) -> None:
    p = platform
    first = p.records.insert("Case", {"Subject": "first"})

    def poison(event: RecordBeforeCreate) -> None:
        for record in event.records:
            if record.get("Subject") == "poison":
                record["Id"] = first["Id"]  # type: ignore[index]  # a duplicate primary key

    p.events.subscribe(RecordBeforeCreate, poison)
    _groups(p).reset_stats()
    subjects = [f"ok-{i}" for i in range(QUEUED)]
    subjects.insert(QUEUED // 2, "poison")
    held, results = _queue_behind_hold(p, subjects)
    stats = _groups(p).reset_stats()
    assert stats.split == 1, "the queued rows did not form one group that failed"
    failed = [r for s, r in zip(subjects, results, strict=True) if s == "poison"]
    assert len(failed) == 1 and isinstance(failed[0], sa.exc.IntegrityError)
    good = [r for s, r in zip(subjects, results, strict=True) if s != "poison"]
    assert all(isinstance(r, dict) for r in good)
    assert [r["Subject"] for r in good] == [s for s in subjects if s != "poison"]
    values = [first["CaseNumber"], held["CaseNumber"], *[r["CaseNumber"] for r in good]]
    assert len(set(values)) == len(values)
    assert p.records.count("Case") == 2 + QUEUED
    for r in good:
        assert p.records.get("Case", r["Id"])["CaseNumber"] == r["CaseNumber"]


def test_invalid_row_never_enters_a_group(platform: Platform) -> None:
    p = platform
    hold = _Hold(p)
    with ThreadPoolExecutor(2) as pool:
        held = pool.submit(p.records.insert, "Case", {"Subject": "hold"})
        assert hold.entered.wait(30)
        # a flight is in the air: a valid caller would queue; an invalid one is refused at once
        with pytest.raises(RecordError, match="Case has no field 'Nope'"):
            p.records.insert("Case", {"Nope": 1})
        assert _groups(p).queued("Case") == 0
        hold.release.set()
        held.result(60)
    assert p.records.count("Case") == 1


def test_a_caller_transaction_is_never_grouped(platform: Platform) -> None:
    p = platform
    _groups(p).reset_stats()
    with p.begin() as conn:
        record = p.records.insert("Case", {"Subject": "mine"}, conn)
    assert p.records.get("Case", record["Id"])["Subject"] == "mine"
    assert _groups(p).reset_stats().rows == 0


def test_a_group_of_rows_setting_different_fields(platform: Platform) -> None:
    p = platform
    rows: list[dict[str, Any]] = [
        {"Name": f"a{i}", "BillingCountryCode": "SG"} if i % 2 else {"Name": f"a{i}"} for i in range(QUEUED)
    ]
    _groups(p).reset_stats()
    _, results = _queue_behind_hold(p, [], rows, obj="Account")
    assert _groups(p).reset_stats().largest == QUEUED
    for row, stored in zip(rows, results, strict=True):
        assert isinstance(stored, dict), stored
        again = p.records.get("Account", stored["Id"])
        assert again["Name"] == row["Name"]
        assert again["BillingCountryCode"] == row.get("BillingCountryCode")


def _committed_counter(p: Platform) -> int:
    """The Case counter's next value as another session sees it (committed state only)."""
    with p.fresh_db.connect() as conn:
        return int(conn.execute(sa.select(sa.func.max(counter_table.c.next_value))).scalar_one())


def test_a_large_group_reserves_before_it_writes_so_the_counter_row_is_not_held(platform: Platform) -> None:
    """A group of more than INSIDE_UP_TO rows commits its numbers first (other processes' writers
    overlap with its INSERT); a smaller group, one included, reserves in its own transaction (one
    COMMIT). SQLite has one writer at a time: there every group reserves inside."""
    p = platform
    seen: dict[int, int] = {}

    def look(event: RecordBeforeCreate) -> None:
        if "hold" not in (r.get("Subject") for r in event.records):
            seen[len(event.records)] = _committed_counter(p)

    p.events.subscribe(RecordBeforeCreate, look)
    p.records.insert("Case", {"Subject": "alone"})  # 1, the counter's next value becomes 2
    small, large = INSIDE_UP_TO, INSIDE_UP_TO + 4
    held, results = _queue_behind_hold(p, [f"s{i}" for i in range(small)])  # hold 2, then 3..small+2
    held2, results2 = _queue_behind_hold(p, [f"l{i}" for i in range(large)])
    assert all(isinstance(r, dict) for r in results + results2)
    outside = p.dialect.name != "sqlite"
    assert seen[1] == 1, "a group of one made its reservation visible before its COMMIT"
    assert seen[small] == 3, "a small group made its reservation visible before its COMMIT"
    after_small = small + 3  # the second hold takes small+3, the large group the next `large`
    assert seen[large] == (after_small + 1 + large if outside else after_small + 1)
    numbers = [held["CaseNumber"], *[r["CaseNumber"] for r in results]]
    numbers += [held2["CaseNumber"], *[r["CaseNumber"] for r in results2]]
    assert_unique_contiguous(numbers)
