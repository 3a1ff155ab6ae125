"""Block allocation (`--allocation blocks:N`, docs/changing-rules.md): a process reserves N numbers
in one counter UPDATE and hands them out itself. Many threads and several processes: every value
unique and stored; the counter moves once per block; a closed or killed process's unused rest is a
journaled gap that is never handed out again; refused on gapless fields."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest
import sqlalchemy as sa
from engine_support import run_threads

import autonumber
from autonumber.audit import audit_gaps
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.rules.verify import verify
from support import make_platform, number, run_cli

pytestmark = pytest.mark.timeout(300)
FIELD = "Case.Block_No__c"
BLOCK = 50
ADD = ["field", "add", "Case", "Block_No__c", "--format", "B-{000000}", "--allocation", f"blocks:{BLOCK}"]
THREADS, PER_THREAD = 8, 40
PROCESSES, PROC_THREADS, PROC_INSERTS = 3, 4, 30


def _add_field(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    make_platform(url).close()
    code, out = run_cli([*ADD, "--db", url], capsys)
    assert code == 0, out
    assert f"blocks:{BLOCK}" in out


def _insert_blocks(url: str, threads: int, per_thread: int) -> list[int]:
    """One process: its own platform, threads × inserts; the Block_No__c values it was given."""
    with autonumber.connect(url) as p:
        return run_threads(
            threads,
            lambda i: [
                number(p.records.insert("Case", {"Subject": f"t{i}-{k}"})["Block_No__c"])
                for k in range(per_thread)
            ],
        )


def _stored(url: str) -> list[int]:
    with autonumber.connect(url) as p:
        table = p.catalog.current().table("Case")
        with p.db.connect() as conn:
            rows = conn.execute(sa.select(table.c.Block_No__c).where(table.c.Block_No__c.is_not(None)))
            return [number(v) for v in rows.scalars()]


def _reservations(url: str) -> list[tuple[int, int]]:
    """(first, count) of every `reserved` journal line of the field."""
    j = reservation_journal
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            stmt = sa.select(j.c.first_value, j.c.count).where(j.c.field_id == FIELD, j.c.state == "reserved")
            return [(int(a), int(b)) for a, b in conn.execute(stmt)]
    finally:
        engine.dispose()


def test_threads_and_processes_get_unique_stored_numbers(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_field(db_url, capsys)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(PROCESSES, mp_context=spawn) as pool:
        futures = [pool.submit(_insert_blocks, db_url, PROC_THREADS, PROC_INSERTS) for _ in range(PROCESSES)]
        here = _insert_blocks(db_url, THREADS, PER_THREAD)
        there = [v for f in futures for v in f.result(timeout=240)]
    values = here + there
    total = THREADS * PER_THREAD + PROCESSES * PROC_THREADS * PROC_INSERTS
    assert len(values) == total
    assert len(set(values)) == total, "a number was handed out twice"
    assert sorted(_stored(db_url)) == sorted(values), "a returned number is not stored, or the reverse"
    engine = sa.create_engine(db_url)
    try:
        assert verify(engine) == []
    finally:
        engine.dispose()
    reserved = _reservations(db_url)
    if "sqlite" in db_url:  # one writer: numbers are taken in the caller's transaction, one at a time
        return
    assert all(count >= BLOCK for _, count in reserved), reserved
    assert len(reserved) <= total // BLOCK + 1 + PROCESSES + 1, "the counter moved more than once per block"


@pytest.mark.parametrize("group_commit", [True, False])
def test_group_commit_writer_takes_numbers_from_blocks(
    server_db_url: str, capsys: pytest.CaptureFixture[str], group_commit: bool
) -> None:
    _add_field(server_db_url, capsys)
    with autonumber.connect(server_db_url, group_commit=group_commit) as p:
        values = run_threads(
            THREADS,
            lambda i: [
                number(p.records.insert("Case", {"Subject": f"g{i}-{k}"})["Block_No__c"]) for k in range(20)
            ],
        )
    assert len(set(values)) == len(values) == THREADS * 20
    assert sorted(_stored(server_db_url)) == sorted(values)
    assert all(count >= BLOCK for _, count in _reservations(server_db_url))


def test_a_closed_or_killed_process_leaves_its_rest_as_a_journaled_gap_never_reused(
    server_db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = server_db_url
    _add_field(url, capsys)
    with autonumber.connect(url) as p:
        first = [number(p.records.insert("Case", {"Subject": "a"})["Block_No__c"]) for _ in range(3)]
    assert first == [1, 2, 3]
    code = (
        "import os, autonumber\n"
        f"p = autonumber.connect({url!r})\n"
        "print(p.records.insert('Case', {'Subject': 'killed'})['Block_No__c'], flush=True)\n"
        "os._exit(0)\n"
    )
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert killed.returncode == 0, killed.stderr
    assert number(killed.stdout.strip()) == BLOCK + 1
    with autonumber.connect(url) as p:
        after = number(p.records.insert("Case", {"Subject": "b"})["Block_No__c"])
        report = audit_gaps(p, FIELD)
    assert after == 2 * BLOCK + 1, "a restarted process must not reuse a number of an earlier block"
    gaps = {(g.first, g.last): g.reason for g in report.gaps}
    assert "closed its platform" in gaps[(4, BLOCK)]
    assert "process ended" in gaps[(BLOCK + 2, 2 * BLOCK)]
    assert (2 * BLOCK + 2, 3 * BLOCK) in gaps  # this test's own closed platform
    t = counter_table
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            assert (
                conn.execute(sa.select(t.c.next_value).where(t.c.field_id == FIELD)).scalar() == 3 * BLOCK + 1
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--numbering", "gapless"], "refused on a gapless field"),
        ([], "is not single or blocks:N"),
    ],
)
def test_blocks_refused_on_gapless_and_when_malformed(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    make_platform(sqlite_url).close()
    allocation = f"blocks:{BLOCK}" if extra else "blocks:1"
    argv = ["field", "add", "Case", "Block_No__c", "--format", "B-{000000}", "--allocation", allocation]
    code, out = run_cli([*argv, *extra, "--db", sqlite_url], capsys)
    assert code == 2
    assert expected in out
    assert len(out.strip().splitlines()) == 1, out


def test_field_set_turns_blocks_on_and_off(server_db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = server_db_url
    make_platform(url).close()
    base = ["field", "set", "Case", "CaseNumber", "--format", "{00000000}", "--db", url]
    code, out = run_cli([*base, "--allocation", "blocks:10"], capsys)
    assert code == 0, out
    with autonumber.connect(url) as p:
        assert p.catalog.current().rule("Case.CaseNumber").block_size == 10
        values = [number(p.records.insert("Case", {"Subject": "x"})["CaseNumber"]) for _ in range(12)]
    assert values == list(range(1, 13))
    code, out = run_cli([*base, "--numbering", "gapless"], capsys)
    assert code == 2 and "refused on a gapless field" in out, out
    code, out = run_cli([*base, "--allocation", "single"], capsys)
    assert code == 0, out
    with autonumber.connect(url) as p:
        assert number(p.records.insert("Case", {"Subject": "y"})["CaseNumber"]) == 21
