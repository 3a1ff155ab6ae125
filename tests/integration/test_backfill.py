"""`field add --backfill` / `field backfill`: the rows that exist get numbers in CreatedDate then Id
order, a batch per transaction; a run killed with SIGKILL resumes with no row numbered twice and none
skipped; writers inserting meanwhile never get a number twice (every backend, CLI and library)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from autonumber.backfill import backfill
from autonumber.rules import verify
from autonumber.runtime import Platform
from support import number, run_cli

FIELD = ["Account", "Member_No__c"]
ADD = ["field", "add", *FIELD, "--format", "MB-{000000}", "--start", "100"]


def accounts(platform: Platform, n: int, batch: int = 50) -> None:
    """`n` accounts in batches (each batch shares one CreatedDate: Id breaks the tie)."""
    for at in range(0, n, batch):
        rows = [{"Name": f"old {i}", "BillingCountryCode": "SG"} for i in range(at, min(n, at + batch))]
        platform.records.insert_many("Account", rows)


def numbered(platform: Platform) -> list[tuple[object, str, str | None]]:
    """(CreatedDate, Id, Member_No__c) of every account, in CreatedDate then Id order."""
    table = sa.Table("Account", sa.MetaData(), autoload_with=platform.db)
    with platform.db.connect() as conn:
        rows = conn.execute(
            sa.select(table.c.CreatedDate, table.c.Id, table.c.Member_No__c).order_by(
                table.c.CreatedDate, table.c.Id
            )
        )
        return [tuple(r) for r in rows]


def test_field_add_backfill_numbers_existing_rows_in_created_then_id_order(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts(platform, 120, batch=25)
    code, out = run_cli([*ADD, "--backfill", "--batch-size", "40", "--db", db_url], capsys)
    assert code == 0, out
    assert "Account.Member_No__c: backfilled 120 row(s) in 3 batch(es), MB-000100 … MB-000219" in out
    assert "Account.Member_No__c: 40/120 row(s)" in out  # plain progress lines when not a terminal
    values = [v for _, _, v in numbered(platform)]
    assert values == [f"MB-{n:06d}" for n in range(100, 220)]
    code, out = run_cli(["field", "backfill", *FIELD, "--db", db_url], capsys)
    assert code == 0 and "no row to backfill" in out, out
    platform.catalog.refresh()
    assert platform.records.insert("Account", {"Name": "new"})["Member_No__c"] == "MB-000220"
    assert verify(platform.db) == []


def test_backfill_of_a_field_without_a_rule_is_one_line(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["field", "backfill", "Account", "Name", "--db", db_url], capsys)
    assert code == 2 and out.startswith("error: ") and "no autonumber rule" in out and out.count("\n") == 1, (
        out
    )


def test_writers_inserting_during_a_backfill_never_share_a_number(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    accounts(platform, 300)
    code, out = run_cli([*ADD, "--db", db_url], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    started = threading.Event()
    errors: list[BaseException] = []
    inserted: list[str] = []

    def progress(done: int, total: int) -> None:
        started.set()

    def writer(t: int) -> None:
        try:
            assert started.wait(120), "the backfill committed no batch"
            for i in range(15):
                inserted.append(platform.records.insert("Account", {"Name": f"new {t}-{i}"})["Member_No__c"])
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    result = backfill(platform, "Account.Member_No__c", batch_size=20, progress=progress)
    for th in threads:
        th.join()
    assert errors == []
    rows = numbered(platform)
    assert result.rows == 300 and len(rows) == 360 and all(v is not None for _, _, v in rows)
    values = [number(str(v)) for _, _, v in rows]
    assert len(set(values)) == 360
    old = [number(str(v)) for _, _, v in rows if str(v) not in inserted]
    assert old == sorted(old)  # the backfilled rows keep CreatedDate, Id order among themselves
    assert verify(platform.db) == []


KILLED_RUN = textwrap.dedent(
    """
    import sys, threading
    import autonumber
    from autonumber.backfill import backfill

    platform = autonumber.connect(sys.argv[1])
    seen = []

    def reserved(res):
        seen.append(res)
        if len(seen) == 3:  # the third batch's numbers are reserved, its rows not yet written
            print("held", flush=True)
            threading.Event().wait()

    platform.engine.hooks.reserved = reserved
    backfill(platform, "Account.Member_No__c", batch_size=25)
    """
)


def test_a_backfill_killed_mid_batch_resumes_with_no_row_twice_and_none_skipped(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    accounts(platform, 200)
    code, out = run_cli([*ADD, "--db", db_url], capsys)
    assert code == 0, out
    script = tmp_path / "killed.py"
    script.write_text(KILLED_RUN)
    child = subprocess.Popen(
        [sys.executable, str(script), db_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "held", (line, child.stderr.read() if child.poll() is not None else "")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(60)
    assert child.returncode == -signal.SIGKILL
    after_kill = [v for _, _, v in numbered(platform)]
    assert sum(v is not None for v in after_kill) == 50  # two batches committed, the third rolled back
    code, out = run_cli(["field", "backfill", *FIELD, "--db", db_url], capsys)
    assert code == 0 and "backfilled 150 row(s)" in out, out
    values = [number(str(v)) for _, _, v in numbered(platform)]
    assert len(values) == 200 and len(set(values)) == 200
    assert values == sorted(values)  # resumed in order: the killed batch's reservation is a gap at most
    assert values[:50] == list(range(100, 150))
    assert verify(platform.db) == []
