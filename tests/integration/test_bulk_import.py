"""Streamed bulk import on every backend: batches from a generator, all or nothing, --errors, and
--commit-every surviving a SIGKILL then --resume with every row exactly once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from engine_support import ReservationLog, assert_unique_contiguous

from autonumber.bulk.collection import SWITCH_INTERVAL
from autonumber.bulk.imports import Checkpoint, ImportOptions, run_import
from autonumber.bulk.jsonl import Line, read_lines
from autonumber.errors import NumberAlreadyStored, RecordError
from autonumber.events import RecordBeforeCreate
from autonumber.runtime import Platform
from autonumber.write.rows import Batch
from support import import_cases, run_cli, send_batch


def _subjects(p: Platform) -> list[str]:
    return [r["Subject"] for r in p.records.list("Case", limit=10_000)]


def _case_numbers(p: Platform) -> list[str]:
    return [r["CaseNumber"] for r in p.records.list("Case", limit=10_000)]


def _write_cases(path: Path, count: int, bad: dict[int, str] | None = None) -> None:
    lines = [json.dumps({"Subject": f"s{i}"}) for i in range(1, count + 1)]
    for number, text in (bad or {}).items():
        lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_generator_streams_in_batches_one_reservation_per_batch_and_field(platform: Platform) -> None:
    log = ReservationLog(platform)
    rows = (
        {"Account_Country_Code__c": "SG", "RecordTypeId": "rt_Contract_Services_Agreement"} for _ in range(25)
    )
    stored = platform.records.insert_many("Contract", rows, batch_size=10)
    assert sorted(r.count for r in log.items) == [5, 5, 10, 10, 10, 10], "2 fields x 3 batches"
    assert [r["ContractNumber"] for r in stored] == [f"{i:08d}" for i in range(1, 26)]
    assert platform.records.count("Contract") == 25


def test_insert_stream_yields_each_batch(platform: Platform) -> None:
    labelled = ((f"row {i}", {"Subject": f"s{i}"}) for i in range(1, 18))
    sizes = [len(batch) for batch in platform.records.insert_stream("Case", labelled, batch_size=5)]
    assert sizes == [5, 5, 5, 2]
    assert_unique_contiguous(_case_numbers(platform))
    assert platform.records.count("Case") == 17


def test_rows_off_the_fast_path_are_checked_in_full_and_ids_are_ordered_uuid7(platform: Platform) -> None:
    """Plain ASCII text takes the fast check; accents, NUL, wrong types and unknown fields go through
    the full one (stored as given, or refused naming the label); each batch's Ids increase."""
    subjects = ["plain", "Ünïcödé ✓", None, "x" * 255, "plain again"]
    labelled = ((f"row {i}", {"Subject": s}) for i, s in enumerate(subjects, 1))
    batches = list(platform.records.insert_stream("Case", labelled, batch_size=2))
    stored = {r["Id"]: r["Subject"] for r in platform.records.list("Case", limit=100)}
    for batch in batches:
        ids = [row["Id"] for row in batch.rows]
        assert ids == sorted(ids) and all(uuid.UUID(hex=i).version == 7 for i in ids)
        for row in batch.rows:
            assert stored[row["Id"]] == row["Subject"]
    assert sorted(stored.values(), key=str) == sorted(subjects, key=str)
    refused: list[tuple[dict[str, Any], str]] = [
        ({"Subject": "a\x00b"}, "row 1: Case.Subject contains a NUL"),
        ({"Subject": "x" * 256}, "row 1: Case.Subject is 256 characters; at most 255 fit"),
        ({"Subject": 7}, "row 1: Case.Subject must be text, got 7"),
        ({"Nope": "x"}, "row 1: Case has no field 'Nope'"),
        ({"CaseNumber": "x"}, "row 1: Case.CaseNumber is an autonumber field"),
        ({"Id": "x"}, "row 1: Id is set by the platform"),
    ]
    for values, why in refused:
        with pytest.raises(RecordError, match=re.escape(why)):
            list(platform.records.insert_stream("Case", iter([("row 1", values)])))
    assert platform.records.count("Case") == len(subjects)


def test_a_bad_line_in_the_middle_writes_nothing(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "cases.jsonl"
    _write_cases(file, 50, {27: '{"Subject": 7}'})
    code, out = import_cases(file, db_url, capsys, "--batch-size", "10")
    assert code == 2
    assert f"{file}:27: Case.Subject must be text" in out, out
    assert len(out.strip().splitlines()) == 1, "no record printed: nothing was stored"
    assert platform.records.count("Case") == 0


def test_errors_mode_writes_rejected_lines_and_imports_the_rest(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file, errors = tmp_path / "cases.jsonl", tmp_path / "rejected.jsonl"
    _write_cases(file, 30, {4: "{not json", 12: '{"CaseNumber": "9"}', 29: "[1]"})
    argv = [
        "records",
        "insert-many",
        "Case",
        "--file",
        str(file),
        "--batch-size",
        "7",
        "--errors",
        str(errors),
    ]
    code, out = run_cli([*argv, "--quiet", "--db", db_url], capsys)
    assert code == 0, out
    assert "inserted 27 Case records" in out and "3 lines rejected" in out
    rejected = [json.loads(line) for line in errors.read_text().splitlines()]
    assert [r["line"] for r in rejected] == [4, 12, 29]
    assert (
        "invalid JSON" in rejected[0]["error"] and "CaseNumber is an autonumber field" in rejected[1]["error"]
    )
    assert rejected[1]["text"] == '{"CaseNumber": "9"}'
    assert sorted(_subjects(platform)) == sorted(f"s{i}" for i in range(1, 31) if i not in (4, 12, 29))
    assert_unique_contiguous(_case_numbers(platform))


def test_an_import_pauses_the_collector_and_switches_threads_quickly_then_restores_both(
    platform: Platform, tmp_path: Path
) -> None:
    import gc

    file = tmp_path / "cases.jsonl"
    _write_cases(file, 12)
    seen: list[tuple[bool, float]] = []
    before = sys.getswitchinterval()
    assert gc.isenabled()
    run_import(
        platform.records,
        "Case",
        lambda after: read_lines(file.open("rb"), str(file), after=after),
        ImportOptions(batch_size=5),
        stored=lambda _batch: seen.append((gc.isenabled(), sys.getswitchinterval())),
    )
    assert seen == [(False, min(before, SWITCH_INTERVAL))] * 3
    assert gc.isenabled() and sys.getswitchinterval() == before


def test_resume_after_a_failure_before_and_after_a_commit(
    platform: Platform, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint's two cases: the pending batch committed before the process died (its probe
    Id is stored: continue after `pending`), or it rolled back (continue after `done`)."""
    file, checkpoint = tmp_path / "cases.jsonl", tmp_path / "cases.checkpoint"
    _write_cases(file, 40)
    options = ImportOptions(commit_every=10, checkpoint=checkpoint)
    resumed = ImportOptions(commit_every=10, checkpoint=checkpoint, resume=True)

    def lines(after: int) -> Iterable[Line]:
        return read_lines(file.open("rb"), str(file), after=after)

    class Died(Exception):
        pass

    def die_at(line: int) -> Callable[[Batch], None]:
        def check(batch: Batch) -> None:
            if batch.labels[-1].number == line:
                raise Died

        return check

    with pytest.raises(Died):  # after batch 2's COMMIT
        run_import(platform.records, "Case", lines, options, stored=die_at(20))
    state = json.loads(checkpoint.read_text())
    assert state["pending"] == 20 and platform.records.exists("Case", state["probe"])
    assert platform.records.count("Case") == 20
    with pytest.raises(RecordError, match="unfinished import"):
        run_import(platform.records, "Case", lines, options)

    original = Checkpoint.before_commit

    def fail_after_checkpoint(self: Checkpoint, batch: Batch) -> None:
        original(self, batch)
        die_at(30)(batch)  # inside batch 3's transaction, after its checkpoint: it rolls back

    monkeypatch.setattr(Checkpoint, "before_commit", fail_after_checkpoint)
    with pytest.raises(Died):
        run_import(platform.records, "Case", lines, resumed)
    monkeypatch.undo()
    state = json.loads(checkpoint.read_text())
    assert state["pending"] == 30 and not platform.records.exists("Case", state["probe"])
    assert platform.records.count("Case") == 20
    summary = run_import(platform.records, "Case", lines, resumed)
    assert summary.resumed_after == 20 and summary.inserted == 20
    assert sorted(_subjects(platform)) == sorted(f"s{i}" for i in range(1, 41))
    assert_unique_contiguous(_case_numbers(platform))


def test_resume_before_the_first_checkpoint_starts_at_line_1(platform: Platform, tmp_path: Path) -> None:
    """Killed before its first COMMIT, an import left no checkpoint file: --resume starts again."""
    file, checkpoint = tmp_path / "cases.jsonl", tmp_path / "cases.checkpoint"
    _write_cases(file, 12)
    resumed = ImportOptions(commit_every=5, checkpoint=checkpoint, resume=True)
    summary = run_import(
        platform.records, "Case", lambda after: read_lines(file.open("rb"), str(file), after=after), resumed
    )
    assert summary.resumed_after == 0 and summary.inserted == 12
    assert sorted(_subjects(platform)) == sorted(f"s{i}" for i in range(1, 13))


def _count_when(p: Platform, wanted: int, process: subprocess.Popen[bytes]) -> int:
    """Poll the table until it holds `wanted` rows (the process must still be running)."""
    deadline = time.monotonic() + 120
    while (count := p.records.count("Case")) < wanted:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, f"{count} rows after 120 s"
        time.sleep(0.05)
    return count


def test_sigkill_mid_import_then_resume_stores_every_row_once(
    platform: Platform, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The importer reads stdin; three batches are fed and committed, then half of a fourth, and the
    process is killed while it waits for more. `--resume` on the whole file finishes the job."""
    file, checkpoint = tmp_path / "cases.jsonl", tmp_path / "import.checkpoint"
    _write_cases(file, 100)
    lines = file.read_bytes().splitlines(keepends=True)
    argv = ["records", "insert-many", "Case", "--commit-every", "20", "--checkpoint", str(checkpoint)]
    command = [sys.executable, "-c", "from autonumber.cli import main; main()", *argv, "--db", db_url]
    process = subprocess.Popen(
        [*command, "--file", "-", "--quiet"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    assert process.stdin is not None
    try:
        process.stdin.write(b"".join(lines[:70]))
        process.stdin.flush()
        assert _count_when(platform, 60, process) == 60
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert platform.records.count("Case") == 60, "whole batches only"
    code, out = run_cli([*argv, "--file", str(file), "--resume", "--quiet", "--db", db_url], capsys)
    assert code == 0, out
    assert "inserted 40 Case records" in out and "resumed after line 60" in out
    assert sorted(_subjects(platform)) == sorted(f"s{i}" for i in range(1, 101))
    assert len(set(_case_numbers(platform))) == 100
    code, out = run_cli([*argv, "--file", str(file), "--resume", "--quiet", "--db", db_url], capsys)
    assert code == 0 and "inserted 0 Case records" in out, "a finished import resumes to nothing"
    assert platform.records.count("Case") == 100


def test_an_endless_line_fails_fast(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "records",
        "insert-many",
        "Case",
        "--file",
        "/dev/zero",
        "--max-line-bytes",
        "4096",
        "--db",
        db_url,
    ]
    code, out = run_cli(argv, capsys)
    assert code == 2 and "/dev/zero:1: line longer than 4096 bytes" in out, out
    assert platform.records.count("Case") == 0


def test_a_record_handler_sees_every_earlier_batch_stored(platform: Platform) -> None:
    """A batch's rows may be sent while the next batch is read; a RecordBeforeCreate handler,
    which may use the transaction, runs only once the batches before it are stored."""
    seen: list[int] = []
    table = platform.catalog.current().table("Case")

    def count_stored(event: RecordBeforeCreate) -> None:
        seen.append(event.conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())

    platform.events.subscribe(RecordBeforeCreate, count_stored)
    labelled = ((f"row {i}", {"Subject": f"s{i}"}) for i in range(1, 26))
    assert [len(b) for b in platform.records.insert_stream("Case", labelled, batch_size=5)] == [5] * 5
    assert seen == [0, 5, 10, 15, 20]


def test_a_batch_refused_by_the_database_fails_the_import_and_stores_nothing(platform: Platform) -> None:
    """Batch 3's numbers collide with a row written behind the engine's back: the refusal ends the
    one-transaction import (raised where it surfaces, even when that batch was still on its way),
    with the counter moved past the stored row, so the import run again goes through."""
    table = platform.catalog.current().table("Case")
    with platform.db.begin() as conn:
        conn.execute(sa.insert(table).values(Id="outside", CaseNumber=f"{12:08d}"))
    labelled = ((f"row {i}", {"Subject": f"s{i}"}) for i in range(1, 26))
    with pytest.raises(NumberAlreadyStored, match="run it again"):
        list(platform.records.insert_stream("Case", labelled, batch_size=5))
    assert platform.records.count("Case") == 1
    again = ((f"row {i}", {"Subject": f"s{i}"}) for i in range(1, 26))
    stored = [
        r["CaseNumber"]
        for b in platform.records.insert_stream("Case", again, batch_size=5)
        for r in b.records()
    ]
    assert len(stored) == 25 and min(stored) > f"{12:08d}", stored


def test_an_object_without_autonumbers_imports_in_batches_with_the_database_clock(
    platform: Platform, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No rule gives the batch its CreatedDate, so each batch reads the clock on the transaction's
    connection: only once the batch before it is stored."""
    code, out = run_cli(["object", "add", "Note__c", "--field", "Body:text(80)", "--db", db_url], capsys)
    assert code == 0, out
    platform.catalog.refresh()
    labelled = ((f"row {i}", {"Body": f"b{i}"}) for i in range(1, 26))
    assert [len(b) for b in platform.records.insert_stream("Note__c", labelled, batch_size=5)] == [5] * 5
    stored = platform.records.list("Note__c", limit=100)
    assert sorted(r["Body"] for r in stored) == sorted(f"b{i}" for i in range(1, 26))
    assert all(r["CreatedDate"] for r in stored)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_batch_of_two_field_sets_is_handed_over_once_its_last_copy_data_is_written(
    platform: Platform, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importing thread may go on once the rows have left: after the first set's COPY has
    ended and once the last set's data is written, before that COPY's end and the server's answer."""
    from psycopg import Copy

    table = platform.catalog.current().table("Case")
    rows: list[dict[str, Any]] = [{"Id": f"{i:032x}", "CaseNumber": f"P{i:07d}"} for i in range(6)]
    for row in rows[:3]:
        row["Subject"] = "s"  # a second set of fields: a second COPY
    steps: list[str] = []
    write, leave = Copy.write, Copy.__exit__

    def traced_write(self: Copy, buffer: Any) -> None:
        write(self, buffer)
        steps.append("written")

    def traced_exit(self: Copy, *exc: Any) -> None:
        leave(self, *exc)
        steps.append("ended")

    monkeypatch.setattr(Copy, "write", traced_write)
    monkeypatch.setattr(Copy, "__exit__", traced_exit)
    send_batch(engine, table, rows, steps)
    assert steps == ["written", "ended", "written", "handed", "ended"]
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 6
