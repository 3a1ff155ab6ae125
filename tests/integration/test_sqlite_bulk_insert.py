"""SQLite's bulk path (`SQLiteDialect.bulk_sender`): multi-row INSERTs that store every value as the
one-row INSERT would, whatever the number of rows and columns, within SQLite's limit of bound
variables; a refusal named by the short INSERT with nothing kept; and an import's rows written on
the sender's thread, so SQLite stores a batch while the next one is read."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import dialect_for
from autonumber.db.sqlite import ROWS_PER_INSERT, SQLiteDialect
from autonumber.runtime import Platform
from support import import_cases

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)

AWKWARD = ["tab\there", "new\nline", "quote ' \" and ;", "four-byte 🦄 and é", "", None]


def _sqlite(engine: sa.Engine) -> SQLiteDialect:
    dialect = dialect_for(engine)
    assert isinstance(dialect, SQLiteDialect)
    return dialect


def _rows(n: int) -> list[dict[str, Any]]:
    """`n` Case rows; every third sets no Subject (a second set of fields, its column default)."""
    rows: list[dict[str, Any]] = []
    for i in range(n):
        row: dict[str, Any] = {
            "Id": f"{i:032x}",
            "CreatedDate": datetime(2026, 12, 3, 23, 50, i % 60, 1000 * i % 1_000_000),
            "CaseNumber": f"S{i:07d}",
        }
        if i % 3:
            row["Subject"] = AWKWARD[i % len(AWKWARD)]
        rows.append(row)
    return rows


def _stored(conn: sa.Connection) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.execute(sa.text('SELECT Id, CreatedDate, Subject, CaseNumber FROM "Case" ORDER BY Id'))
    ]


def _expected(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the one-row INSERT stores for `rows`, written in a transaction rolled back."""
    with conn.begin() as txn:
        for row in rows:
            conn.execute(sa.insert(table), row)
        stored = _stored(conn)
        txn.rollback()
    return stored


@pytest.mark.parametrize("count", [1, ROWS_PER_INSERT, 2 * ROWS_PER_INSERT + 7])
def test_multi_row_inserts_store_what_the_one_row_insert_stores(
    platform: Platform, engine: sa.Engine, count: int
) -> None:
    table = platform.catalog.current().table("Case")
    rows = _rows(count)
    with engine.connect() as conn:
        expected = _expected(conn, table, rows)
    with engine.begin() as conn:
        _sqlite(engine).bulk_insert(conn, table, rows)
    with engine.connect() as conn:
        assert _stored(conn) == expected
    assert len(expected) == count


@pytest.mark.parametrize(
    ("limit", "value", "most"),
    [(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10, 3), (sqlite3.SQLITE_LIMIT_SQL_LENGTH, 160, None)],
    ids=["variables", "statement-length"],
)
def test_lower_limits_make_shorter_inserts(
    platform: Platform, engine: sa.Engine, limit: int, value: int, most: int | None
) -> None:
    """A build of SQLite with lower limits (999 variables before 3.32; a shorter statement) still
    takes a batch, in more and shorter INSERTs than its two sets of fields would make (SQLite
    refuses a statement past either limit): 3 rows of 3 fields under 10 variables."""
    table = platform.catalog.current().table("Case")
    rows = _rows(50)
    statements: list[str] = []
    with engine.connect() as conn:
        expected = _expected(conn, table, rows)
    with engine.begin() as conn:
        driver = conn.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        was = driver.setlimit(limit, value)
        driver.set_trace_callback(statements.append)
        try:
            _sqlite(engine).bulk_insert(conn, table, rows)
        finally:
            driver.set_trace_callback(None)
            driver.setlimit(limit, was)
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert len(inserts) > 2, "shorter INSERTs than one per set of fields"
    if most is not None:
        assert max(s.count("), (") + 1 for s in inserts) == most
    with engine.connect() as conn:
        assert _stored(conn) == expected


def test_a_refused_row_is_named_by_the_short_insert_and_nothing_is_kept(
    platform: Platform, engine: sa.Engine
) -> None:
    table = platform.catalog.current().table("Case")
    rows = _rows(ROWS_PER_INSERT + 3)
    rows[-2]["CaseNumber"] = rows[1]["CaseNumber"]
    with pytest.raises(sa.exc.IntegrityError) as info, engine.begin() as conn:
        _sqlite(engine).bulk_insert(conn, table, rows)
    assert "UNIQUE constraint failed" in str(info.value.orig)
    assert info.value.statement is not None and info.value.statement.count("?") <= len(table.c)
    with engine.connect() as conn:
        assert _stored(conn) == []


def test_an_import_writes_its_rows_on_the_sender_thread(
    platform: Platform,
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each batch's INSERTs run on the batch sender's thread, never on the importing thread, and
    every row lands once with its number."""
    threads: list[str] = []
    sender = SQLiteDialect.bulk_sender

    def traced(self: SQLiteDialect, conn: sa.Connection, table: sa.Table, rows: Any) -> Any:
        send = sender(self, conn, table, rows)
        assert send is not None

        def on_thread(handed: Callable[[], None]) -> None:
            threads.append(threading.current_thread().name)
            send(handed)

        return on_thread

    monkeypatch.setattr(SQLiteDialect, "bulk_sender", traced)
    file = tmp_path / "cases.jsonl"
    file.write_text("".join(f'{{"Subject": "s{i}"}}\n' for i in range(25)), encoding="utf-8")

    code, out = import_cases(file, db_url, capsys, "--batch-size", "10", "--quiet")

    assert code == 0, out
    assert len(threads) == 3 and all(t.startswith("autonumber-batch-send") for t in threads), threads
    stored = platform.records.list("Case", limit=100)
    assert sorted(r["Subject"] for r in stored) == sorted(f"s{i}" for i in range(25))
    assert len({r["CaseNumber"] for r in stored}) == 25
