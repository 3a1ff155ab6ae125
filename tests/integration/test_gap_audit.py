"""The gap audit and its reservation journal: every number the counter moved past that no
stored record carries is listed with its reason; exit 0 without gaps, 1 with."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from engine_support import CASE, counter_rows, make_platform, number

from autonumber.audit import audit_gaps
from autonumber.cli import main
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.errors import CounterMissing
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform


class Boom(Exception):
    """The caller's own failure after its insert."""


def gaps_cli(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(["audit", "gaps", CASE, "--db", url, *extra])
    out, err = capsys.readouterr()
    assert err == ""
    code = info.value.code
    return (code if isinstance(code, int) else 0), out


def insert(p: Platform) -> int:
    return number(p.records.insert("Case", {"Subject": "good"})["CaseNumber"])


def rolled_back(p: Platform) -> int:
    seen: list[str] = []
    with pytest.raises(Boom), p.begin() as conn:
        seen.append(p.records.insert("Case", {"Subject": "lost"}, conn)["CaseNumber"])
        raise Boom()
    return number(seen[0])


def test_rolled_back_insert_is_named_with_its_reason(
    server_db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_platform(server_db_url)
    try:
        a, lost, b = insert(p), rolled_back(p), insert(p)
    finally:
        p.close()
    assert (lost, b) == (a + 1, a + 2)
    code, out = gaps_cli(capsys, server_db_url)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "Case.CaseNumber (standard): 3 value(s) checked, 1 missing"
    [line] = lines[1:]  # the number as printed, the reason, when it was reserved and given back
    assert line.startswith(f"  scope 'global': {lost:08d} (counter {lost}): rolled back; reserved 2"), line
    assert ", released 2" in line
    code, out = gaps_cli(capsys, server_db_url, "--json")
    report = json.loads(out)
    assert code == 1 and report["missing"] == 1
    [gap] = report["gaps"]
    reserved, released = (
        datetime.fromisoformat(gap.pop("reserved_at")),
        datetime.fromisoformat(gap.pop("released_at")),
    )
    assert reserved <= released
    assert gap == {
        "scope_key": "",
        "first": lost,
        "last": lost,
        "count": 1,
        "reason": "rolled back",
        "numbers": f"{lost:08d}",
        "caller": f"{socket.gethostname()[:80]}:{os.getpid()}",  # no label set: the process
    }


def test_no_gaps_exits_0(platform: Platform, capsys: pytest.CaptureFixture[str]) -> None:
    insert(platform)
    insert(platform)
    code, out = gaps_cli(capsys, str(platform.db.url.render_as_string(hide_password=False)))
    assert code == 0 and out.splitlines() == ["Case.CaseNumber (standard): 2 value(s) checked, 0 missing"]


@pytest.mark.timeout(60)
def test_a_counter_moved_far_ahead_costs_what_the_journal_holds(
    platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fifty million skipped values are one run, found without visiting each (the timeout is a
    liveness bound: visiting them took minutes)."""
    insert(platform)
    url = platform.db.url.render_as_string(hide_password=False)
    with pytest.raises(SystemExit):
        main(["counter", "set", "Case", "CaseNumber", "--next", "50000000", "--db", url])
    capsys.readouterr()
    insert(platform)
    report = audit_gaps(platform, "Case.CaseNumber")
    assert [(g.first, g.last) for g in report.gaps] == [(2, 49_999_999)]
    assert report.gaps[0].reason.startswith("skipped by `autonumber counter set`")
    assert report.checked == 50_000_000 and report.missing == 49_999_998


def test_sqlite_rollback_gives_the_number_back(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """On SQLite the reservation runs in the caller's savepoint: a rollback leaves no gap at all."""
    p = make_platform(sqlite_url)
    try:
        a, lost, b = insert(p), rolled_back(p), insert(p)
    finally:
        p.close()
    assert lost == b == a + 1
    assert gaps_cli(capsys, sqlite_url)[0] == 0


@pytest.mark.parametrize("group_commit", [False, True], ids=["own-txn", "group-commit"])
def test_failed_insert_is_named_with_its_reason(server_db_url: str, group_commit: bool) -> None:
    """A number reserved off the insert's transaction and then not stored is a gap with its reason;
    under group commit the number is reserved in the insert's own transaction and comes back."""
    p = make_platform(server_db_url, group_commit=group_commit)
    try:
        first = p.records.insert("Case", {"Subject": "good"})

        armed = [True]

        def duplicate_id(event: object) -> None:
            assert isinstance(event, RecordBeforeCreate)
            for record in event.records:
                if armed[0]:
                    record["Id"] = first["Id"]

        p.events.subscribe(RecordBeforeCreate, duplicate_id)
        with pytest.raises(sa.exc.IntegrityError):
            p.records.insert("Case", {"Subject": "fails"})
        armed[0] = False
        insert(p)
        report = audit_gaps(p, CASE)
    finally:
        p.close()
    if group_commit:
        assert report.gaps == []
        return
    assert [(g.first, g.count) for g in report.gaps] == [(number(first["CaseNumber"]) + 1, 1)]
    assert report.gaps[0].reason.startswith("insert failed: ")


def test_batch_rollback_is_one_run(server_db_url: str) -> None:
    p = make_platform(server_db_url)
    try:
        insert(p)
        with pytest.raises(Boom), p.begin() as conn:
            p.records.insert_many("Case", [{"Subject": f"r{i}"} for i in range(5)], conn)
            raise Boom()
        insert(p)
        report = audit_gaps(p, CASE)
        with p.db.connect() as conn:
            lines = conn.execute(
                sa.select(reservation_journal.c.state, reservation_journal.c.count).order_by(
                    reservation_journal.c.Id
                )
            ).all()
    finally:
        p.close()
    assert [(g.first, g.last, g.reason) for g in report.gaps] == [(2, 6, "rolled back")]
    # the two single inserts are groups of one: their numbers commit with their rows, no line
    assert [tuple(r) for r in lines] == [("reserved", 5), ("rolled_back", 5)]


DIE = """
import os, sys
import autonumber
p = autonumber.connect(sys.argv[1])
print(p.engine.assign_one("Case.CaseNumber", {}), flush=True)
os._exit(0)
"""


def test_reserved_by_a_process_that_died(db_url: str, tmp_path: Path) -> None:
    p = make_platform(db_url)
    try:
        insert(p)
        script = tmp_path / "die.py"
        script.write_text(DIE)
        url = p.db.url.render_as_string(hide_password=False)
        out = subprocess.run(
            [sys.executable, str(script), url], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        insert(p)
        report = audit_gaps(p, CASE)
    finally:
        p.close()
    assert len(report.gaps) == 1 and report.gaps[0].first == number(out.strip()) == 2
    assert report.gaps[0].reason.startswith("reserved but never stored: its process ended without recording")


def test_scope_and_range_filters(server_db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    p = make_platform(server_db_url)
    try:
        insert(p)
        rolled_back(p)
        insert(p)
        rolled_back(p)
        insert(p)
    finally:
        p.close()
    [line] = gaps_cli(capsys, server_db_url, "--from", "3", "--to", "5")[1].splitlines()[1:]
    assert line.startswith("  scope 'global': 00000004 (counter 4): rolled back; reserved "), line
    assert gaps_cli(capsys, server_db_url, "--to", "1")[0] == 0
    assert gaps_cli(capsys, server_db_url, "--scope-key", "nope")[0] == 0


def test_prune_by_age(platform: Platform, capsys: pytest.CaptureFixture[str]) -> None:
    platform.engine.assign_one(CASE, {})  # its own reservation transaction: one journal line
    url = platform.db.url.render_as_string(hide_password=False)
    with pytest.raises(SystemExit) as info:
        main(["audit", "prune", "--older-than", "1d", "--db", url])
    assert info.value.code in (0, None) and "removed 0 journal line(s)" in capsys.readouterr().out
    with platform.begin() as conn:
        conn.execute(sa.update(reservation_journal).values(logged_at=datetime(2000, 1, 1)))
    with pytest.raises(SystemExit) as info:
        main(["audit", "prune", "--older-than", "30d", "--db", url])
    assert info.value.code in (0, None) and "removed 1 journal line(s)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["audit", "prune", "--older-than", "soon", "--db", url])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "--older-than 'soon'" in err


def test_journal_is_one_line_per_reservation_and_none_in_the_callers_savepoint(platform: Platform) -> None:
    platform.engine.assign_batch(CASE, [{}] * 7)
    platform.records.insert_many("Case", [{"Subject": f"s{i}"} for i in range(3)])
    with platform.db.connect() as conn:
        rows = conn.execute(
            sa.select(
                reservation_journal.c.first_value, reservation_journal.c.count, reservation_journal.c.state
            )
        ).all()
    expected = [(1, 7, "reserved")]
    if platform.dialect.name != "sqlite":
        expected.append((8, 3, "reserved"))  # SQLite reserves in the caller's savepoint: no line
    assert sorted(tuple(r) for r in rows) == expected


def test_each_reservation_has_one_line_with_its_range_and_clock(server_db_url: str) -> None:
    """The line written with the increment (folded into it on PostgreSQL) names exactly the range and
    the clock sample the reservation handed out, once per reservation; a group of one writes none."""
    p = make_platform(server_db_url)
    seen: list[tuple[int, int, datetime]] = []
    p.engine.hooks.reserved = lambda r: seen.append((r.first, r.count, r.assigned_at.replace(tzinfo=None)))
    try:
        for _ in range(3):
            p.engine.assign_one(CASE, {})
        p.engine.assign_batch(CASE, [{}] * 4)
        with p.begin() as conn:
            p.records.insert("Case", {"Subject": "in the caller's transaction"}, conn)
        insert(p)  # a group of one: number and row commit together, no line
        with p.db.connect() as conn:
            lines = conn.execute(
                sa.select(
                    reservation_journal.c.first_value,
                    reservation_journal.c.count,
                    reservation_journal.c.logged_at,
                    reservation_journal.c.state,
                ).order_by(reservation_journal.c.Id)
            ).all()
    finally:
        p.close()
    assert [tuple(r[:3]) for r in lines] == seen[:5]
    assert [r.state for r in lines] == ["reserved"] * 5
    assert [(first, count) for first, count, _ in seen] == [(1, 1), (2, 1), (3, 1), (4, 4), (8, 1), (9, 1)]


def test_a_rolled_back_transaction_releases_its_locks_before_it_waits_to_journal(server_db_url: str) -> None:
    """The rollback hook that journals a caller's given-back numbers needs a reservation
    connection. It runs before SQLAlchemy's ROLLBACK, so it must release the caller's row locks
    first: here every reservation connection is held by a thread waiting for a row the caller's
    transaction locked (as reservations wait on a gapless counter row the caller holds). Without
    that, the hook waits for a connection that never comes (a deadlock until the pool's timeout),
    and the journal misses the line."""
    p = make_platform(server_db_url, poll_interval=3600.0, connection_timeout=10.0)
    reservations = p.engine.reserver.db
    account = p.catalog.current().field_id("Account.Account_ID__c")
    row = counter_table.c.field_id == account
    held = threading.Event()
    done: list[str] = []

    def hog() -> None:
        conns = [reservations.connect() for _ in range(p.budget.reservations)]
        held.set()
        try:
            conns[0].execute(sa.select(counter_table.c.next_value).where(row).with_for_update()).all()
            done.append("locked")
        finally:
            for c in conns:
                c.close()

    try:
        with pytest.raises(Boom), p.begin() as conn:
            lost = number(p.records.insert("Case", {"Subject": "lost"}, conn)["CaseNumber"])
            conn.execute(sa.select(counter_table.c.next_value).where(row).with_for_update()).all()
            waiter = threading.Thread(target=hog)
            waiter.start()
            assert held.wait(30)
            raise Boom()
        waiter.join(60)
        assert done == ["locked"]
        with p.db.connect() as conn:
            lines = conn.execute(
                sa.select(reservation_journal.c.state, reservation_journal.c.first_value).where(
                    reservation_journal.c.state == "rolled_back"
                )
            ).all()
    finally:
        p.close()
    assert [tuple(r) for r in lines] == [("rolled_back", lost)]


def test_an_increment_that_matched_no_row_leaves_no_line(server_db_url: str) -> None:
    """The line goes with the increment in one round trip; when the increment matched no row (the
    counter row gone), no line is written, not even one of the values the connection's previous
    reservation left behind (MariaDB reads them from session variables), though that attempt's
    transaction commits before the error is raised."""
    p = make_platform(server_db_url, reservation_pool_size=1)  # one connection: its variables are set
    try:
        p.engine.assign_one(CASE, {})
        with p.begin() as conn:
            conn.execute(sa.delete(counter_table).where(counter_table.c.field_id == CASE))
        with pytest.raises(CounterMissing):
            p.engine.assign_one(CASE, {})
        with p.db.connect() as conn:
            lines = conn.execute(sa.select(reservation_journal.c.first_value)).scalars().all()
    finally:
        p.close()
    assert lines == [1]


def test_a_reservation_whose_line_fails_leaves_the_counter_unmoved_and_unlocked(server_db_url: str) -> None:
    """The increment and its line commit together or not at all, also where they go as one round
    trip that commits by itself: the journal table gone, the increment is undone and the counter
    row is not left locked by the transaction a failed text left open on MariaDB."""
    p = make_platform(server_db_url, reservation_pool_size=1)
    quote = p.db.dialect.identifier_preparer.quote
    journal, hidden = quote(reservation_journal.name), "journal_hidden"
    try:
        p.engine.assign_one(CASE, {})
        before = counter_rows(p, CASE)
        with p.db.begin() as conn:
            conn.execute(sa.text(f"ALTER TABLE {journal} RENAME TO {hidden}"))
        try:
            with pytest.raises(sa.exc.DBAPIError):
                p.engine.assign_one(CASE, {})
        finally:
            with p.db.begin() as conn:
                conn.execute(sa.text(f"ALTER TABLE {hidden} RENAME TO {journal}"))
        assert counter_rows(p, CASE) == before
        with p.fresh_db.begin() as conn:  # no lock held: another session takes the row at once
            if conn.dialect.name == "mysql":
                conn.execute(sa.text("SET SESSION innodb_lock_wait_timeout = 1"))
                lock = sa.select(counter_table.c.next_value).with_for_update()
            else:
                lock = sa.select(counter_table.c.next_value).with_for_update(nowait=True)
            conn.execute(lock.where(counter_table.c.field_id == CASE)).one()
        assert number(p.engine.assign_one(CASE, {})) == before[""]
    finally:
        p.close()
