"""A value stored behind the counter's back costs one skipped number, never a jam (docs/engine.md,
"Values stored behind the counter's back"), on every backend and every write path: a row written
outside the product holding the counter's next number makes the next insert skip past it — per
call, group commit, a list, a committed-batch stream, a caller's transaction, a shared counter's
other member, a per_day scope — the skip is journaled, the gap audit names it and lists no stored
value, and `setup verify` passes afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

import autonumber
from autonumber.audit import audit_gaps
from autonumber.backfill import backfill
from autonumber.db.tables import reservation_journal
from autonumber.errors import NumberAlreadyStored
from autonumber.objects.custom import add_object
from autonumber.rules.verify import verify
from autonumber.runtime import Platform
from autonumber.web.app import create_app
from support import bootstrap_url, run_cli

JOB = "Job__c"


@pytest.fixture
def platform(db_url: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Platform]:
    """Job__c.No__c `JM-{0000}` (global) and Job__c.Day__c `D{YYYY}{MM}{DD}-{00}` (per_day)."""
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    with p.db.begin() as conn:
        add_object(conn, JOB, ["Name:text(40)"])
    for field, fmt, scope in (
        ("No__c", "JM-{0000}", "global"),
        ("Day__c", "D{YYYY}{MM}{DD}-{00}", "per_day"),
    ):
        code, out = run_cli(
            ["field", "add", JOB, field, "--format", fmt, "--scope", scope, "--db", db_url], capsys
        )
        assert code == 0, out
    p.catalog.refresh()
    yield p
    p.close()


def store_raw(p: Platform, **values: str) -> None:
    """A row written outside the product (a restore, an import script)."""
    table = p.catalog.current().table(JOB)
    row = {
        "Id": f"raw{len(values)}{sorted(values.values())[0]}",
        "CreatedDate": datetime.now(UTC),
        "Name": "raw",
    }
    with p.db.begin() as conn:
        conn.execute(sa.insert(table).values({**row, **values}))


def stored_numbers(p: Platform, field: str) -> list[str]:
    table = p.catalog.current().table(JOB)
    with p.db.connect() as conn:
        return [
            str(v)
            for v in conn.execute(sa.select(table.c[field]).where(table.c[field].is_not(None))).scalars()
        ]


def skips(p: Platform) -> list[tuple[str, int, int, str]]:
    j = reservation_journal
    with p.db.connect() as conn:
        rows = conn.execute(
            sa.select(j.c.field_id, j.c.first_value, j.c.count, j.c.detail).where(j.c.state == "skipped")
        )
        return [(str(f), int(a), int(n), str(d)) for f, a, n, d in rows]


def today_day_key(p: Platform) -> str:
    with p.db.connect() as conn:
        return p.engine.dialect.utc_now(conn).strftime("D%Y%m%d-")


def assert_sound(p: Platform) -> None:
    """Verify passes, no value twice, and the gap audit lists no stored value."""
    assert [f.message for f in verify(p.db)] == []
    p.catalog.refresh()
    for rule in p.catalog.current().rules_of(JOB):
        values = stored_numbers(p, rule.field_name)
        assert len(values) == len(set(values)), values
        report = audit_gaps(p, rule.field_id)
        stored = {int(v[-2:]) if rule.field_name == "Day__c" else int(v.split("-")[-1]) for v in values}
        for gap in report.gaps:
            assert not stored & set(range(gap.first, gap.last + 1)), (gap, stored)


def test_one_stored_row_costs_one_skip_not_a_jam(platform: Platform) -> None:
    platform.records.insert(JOB, {"Name": "a"})
    store_raw(platform, No__c="JM-0002")
    got = [platform.records.insert(JOB, {"Name": "b"})["No__c"] for _ in range(3)]
    assert got == ["JM-0003", "JM-0004", "JM-0005"]
    assert [(f, first, n) for f, first, n, _ in skips(platform)] == [(f"{JOB}.No__c", 2, 1)]
    report = audit_gaps(platform, f"{JOB}.No__c")
    assert report.missing == 0, report.gaps
    assert_sound(platform)


def test_a_run_of_stored_rows_is_skipped_at_once_with_its_reason_in_the_audit(platform: Platform) -> None:
    store_raw(platform, No__c="JM-0003")
    store_raw(platform, No__c="JM-0007")
    got = [platform.records.insert(JOB, {"Name": "a"})["No__c"] for _ in range(3)]
    assert got == ["JM-0001", "JM-0002", "JM-0008"]  # the counter meets JM-0003: past every stored value
    report = audit_gaps(platform, f"{JOB}.No__c")
    reasons = {(g.first, g.last): g.reason for g in report.gaps}
    assert set(reasons) == {(4, 6)}, reasons
    assert "written outside autonumber" in reasons[(4, 6)], reasons
    assert_sound(platform)


def test_group_commit_skips_past_a_stored_row(db_url: str, platform: Platform) -> None:
    grouped = autonumber.connect(db_url, group_commit=True)
    try:
        store_raw(platform, No__c="JM-0001")
        assert grouped.records.insert(JOB, {"Name": "a"})["No__c"] == "JM-0002"
    finally:
        grouped.close()
    assert_sound(platform)


def test_many_records_and_a_committed_stream_skip_past_stored_rows(platform: Platform) -> None:
    store_raw(platform, No__c="JM-0002")
    first = [
        int(r["No__c"][3:]) for r in platform.records.insert_many(JOB, [{"Name": str(i)} for i in range(3)])
    ]
    # one reservation of three, taken again above the stored row (the first try's numbers: gaps
    # where they were reserved off the transaction, given back where they were reserved in it)
    assert first[0] > 2 and first == list(range(first[0], first[0] + 3)), first
    store_raw(platform, No__c=f"JM-{first[-1] + 1:04d}")
    rows = ((f"line {i}", {"Name": str(i)}) for i in range(4))
    batches = list(platform.records.insert_stream(JOB, rows, batch_size=2, commit_each=True))
    streamed = [int(r["No__c"][3:]) for b in batches for r in b.records()]
    assert streamed[0] > first[-1] + 1 and streamed == sorted(set(streamed)), streamed
    assert_sound(platform)


def test_a_callers_transaction_goes_on_or_is_told_to_run_again(platform: Platform) -> None:
    store_raw(platform, No__c="JM-0001")
    dialect = platform.engine.dialect
    if dialect.error_aborts_transaction:  # PostgreSQL: the failed INSERT aborted the transaction
        refused = pytest.raises(NumberAlreadyStored, match=r"already stored.*run it again")
        with refused, platform.db.begin() as conn:
            platform.records.insert(JOB, {"Name": "a"}, conn)
        with platform.db.begin() as conn:
            assert platform.records.insert(JOB, {"Name": "a"}, conn)["No__c"] == "JM-0002"
    else:
        with platform.db.begin() as conn:
            one = platform.records.insert(JOB, {"Name": "a"}, conn)
            two = platform.records.insert(JOB, {"Name": "b"}, conn)
        assert (one["No__c"], two["No__c"]) == ("JM-0002", "JM-0003")
    assert_sound(platform)


def test_a_per_day_scope_skips_past_its_own_stored_row(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = today_day_key(platform)
    assert platform.records.insert(JOB, {"Name": "a"})["Day__c"] == f"{prefix}01"  # the day's row exists
    store_raw(platform, Day__c=f"{prefix}02", No__c="JM-0100")
    ahead = [f.message for f in verify(platform.db)]  # advice that names the repair the engine makes
    assert len(ahead) == 2 and all(
        "skips past" in m and "autonumber counter set Job__c" in m for m in ahead
    ), ahead
    assert any(f"--scope-key '{prefix[1:-1]}'" in m for m in ahead), ahead
    got = platform.records.insert(JOB, {"Name": "b"})
    assert got["Day__c"] == f"{prefix}03"
    assert got["No__c"] == "JM-0002"  # JM-0100 is ahead, not next: nothing to skip yet
    code, out = run_cli(["counter", "set", JOB, "No__c", "--next", "101", "--db", db_url], capsys)
    assert code == 0, out
    assert_sound(platform)


def test_a_stored_value_of_another_member_of_a_shared_counter_is_skipped(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    with platform.db.begin() as conn:
        add_object(conn, "Inv__c", ["Name:text(40)"])
    for obj in (JOB, "Inv__c"):
        argv = [
            "field",
            "add",
            obj,
            "Doc__c",
            "--format",
            "DOC-{0000}",
            "--shared-counter",
            "docs",
            "--db",
            db_url,
        ]
        code, out = run_cli(argv, capsys)
        assert code == 0, out
    platform.catalog.refresh()
    inv = platform.catalog.current().table("Inv__c")
    store_raw(platform, Doc__c="DOC-0001")  # collides with the next number of Job__c's column
    with platform.db.begin() as conn:  # the other member stored further ahead
        conn.execute(
            sa.insert(inv).values(Id="rawinv", CreatedDate=datetime.now(UTC), Name="r", Doc__c="DOC-0005")
        )
    assert platform.records.insert(JOB, {"Name": "a"})["Doc__c"] == "DOC-0006"
    assert platform.records.insert("Inv__c", {"Name": "b"})["Doc__c"] == "DOC-0007"
    assert_sound(platform)


@pytest.mark.parametrize(
    "options", [["--numbering", "gapless"], ["--allocation", "blocks:5"]], ids=["gapless", "blocks"]
)
def test_gapless_and_block_fields_skip_past_a_stored_row(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    argv = ["field", "add", JOB, "Seq__c", "--format", "S-{0000}", *options, "--db", db_url]
    code, out = run_cli(argv, capsys)
    assert code == 0, out
    p = autonumber.connect(db_url)
    try:
        with p.db.begin() as conn:
            assert p.records.insert(JOB, {"Name": "a"}, conn)["Seq__c"] == "S-0001"
        store_raw(p, Seq__c="S-0002")
        if p.engine.dialect.error_aborts_transaction:
            with pytest.raises(NumberAlreadyStored, match="run it again"), p.db.begin() as failed:
                p.records.insert(JOB, {"Name": "b"}, failed)
        with p.db.begin() as conn:
            got = p.records.insert(JOB, {"Name": "c"}, conn)["Seq__c"]
        assert int(got[2:]) > 2, got
    finally:
        p.close()
    assert_sound(platform)


def test_a_block_that_met_a_stored_value_is_given_up(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rest of a block that handed out a stored value may hold more of them (a restore writes
    runs): it is given up as a gap, and the next block is reserved past what the scope stores, so a
    caller's transaction on PostgreSQL is told to run again once, not once per stored value."""
    argv = ["field", "add", JOB, "Seq__c", "--format", "S-{0000}", "--allocation", "blocks:3", "--db", db_url]
    code, out = run_cli(argv, capsys)
    assert code == 0, out
    p = autonumber.connect(db_url)
    try:
        assert [p.records.insert(JOB, {"Name": str(i)})["Seq__c"] for i in range(3)] == [
            "S-0001",
            "S-0002",
            "S-0003",
        ]
        store_raw(p, Seq__c="S-0004")  # the next block starts here
        store_raw(p, Seq__c="S-0006")  # and this one is in it
        if p.engine.dialect.error_aborts_transaction:  # a caller's transaction runs again once
            with pytest.raises(NumberAlreadyStored, match="run it again"), p.db.begin() as failed:
                p.records.insert(JOB, {"Name": "refused"}, failed)
            with p.db.begin() as conn:
                got = p.records.insert(JOB, {"Name": "b"}, conn)["Seq__c"]
        else:  # the write is tried again in place
            got = p.records.insert(JOB, {"Name": "b"})["Seq__c"]
        assert got == "S-0007", got
        gaps = [(g.first, g.last, g.reason) for g in audit_gaps(p, f"{JOB}.Seq__c").gaps]
        if p.engine.dialect.name == "sqlite":  # SQLite holds no blocks: one skip
            assert [(a, b) for a, b, _ in gaps] == [(5, 5)] and "already stored: S-0004" in gaps[0][2], gaps
        else:
            assert [(a, b) for a, b, _ in gaps] == [(5, 5), (8, 9)], gaps  # 8, 9: the block held now
            assert "unused rest of a block: S-0004 was already stored" in gaps[0][2], gaps
    finally:
        p.close()
    assert_sound(platform)


def test_the_shell_and_the_http_api_skip_past_a_stored_row(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    store_raw(platform, No__c="JM-0001")
    code, out = run_cli(["records", "insert", JOB, "--data", '{"Name": "cli"}', "--db", db_url], capsys)
    assert code == 0 and json.loads(out)["No__c"] == "JM-0002", out
    store_raw(platform, No__c="JM-0003")
    with TestClient(create_app(platform)) as client:
        response = client.post(f"/api/records/{JOB}", json={"Name": "http"})
    assert response.status_code == 201, response.text
    assert response.json()["No__c"] == "JM-0004"
    assert_sound(platform)


def test_a_backfill_skips_past_a_value_stored_meanwhile(
    db_url: str, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(4):
        platform.records.insert(JOB, {"Name": f"old {i}"})
    code, out = run_cli(["field", "add", JOB, "Ref__c", "--format", "R-{0000}", "--db", db_url], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    table = platform.catalog.current().table(JOB)
    with platform.db.begin() as conn:  # an application numbered one row itself
        one = conn.execute(sa.select(table.c.Id).order_by(table.c.CreatedDate.desc()).limit(1)).scalar_one()
        conn.execute(sa.update(table).where(table.c.Id == one).values(Ref__c="R-0002"))
    result = backfill(platform, f"{JOB}.Ref__c", batch_size=2)  # the second batch meets R-0002
    assert result.rows == 3
    values = sorted(stored_numbers(platform, "Ref__c"))
    assert len(values) == 4 and "R-0002" in values and len(set(values)) == 4, values
    assert_sound(platform)
