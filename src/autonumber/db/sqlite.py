"""SQLite: the embedded default. Single writer, WAL, every writing transaction BEGIN IMMEDIATE."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, closing
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from autonumber.errors import ConfigError, SetupError

from .base import Counter, Dialect, Numbered, TransactionalDDL
from .bulk import Handed, Send, bound_columns, bound_tuples, by_fields, flat_rows, insert_text
from .driver import execute_rows, kept, statement
from .fence import INFO_KEY, schema_version
from .fence_sql import SQLiteFence, sqlite_declare
from .lease import lease_lock
from .replies import to_utc
from .url import mask

BUSY_TIMEOUT_MS = 30_000
READONLY = "autonumber_readonly"
"""Execution option: a connection that only reads begins a deferred transaction (no write lock)."""
ROWS_PER_INSERT = 5_000
"""A bulk write's rows per multi-row INSERT (fewer where the columns would pass SQLite's limits on
bound variables or statement length): one call into SQLite per 5,000 rows, each run without
Python's lock."""


PAGE_SIZES = tuple(2**k for k in range(9, 17))
"""The page sizes SQLite takes, in bytes (512 to 65,536)."""


def make_file(url: sa.URL, page_size: int) -> bool:
    """Make the database file `url` names with `page_size`-byte pages, in WAL mode, before any
    table exists (a WAL file's page size is fixed once its first page is written); True if made,
    False if the file already has that page size. Larger pages make a bulk import faster and each
    single insert slower (docs/import.md, "Page size")."""
    if page_size not in PAGE_SIZES:
        raise ConfigError(f"--page-size {page_size}: SQLite takes a power of two from 512 to 65536")
    name = url.database or ""
    if url.get_backend_name() != "sqlite" or name in ("", ":memory:") or url.query:
        raise ConfigError(f"--page-size is for a SQLite file named by a plain path, not {mask(url)!r}")
    path = Path(name)
    if path.exists() and path.stat().st_size > 0:
        have = _page_size_of(path)
        if have != page_size:
            raise ConfigError(
                f"{path} exists with {have}-byte pages: --page-size {page_size} applies only to a new "
                'file (docs/import.md, "Page size", says how to convert one)'
            )
        return False
    try:
        with closing(sqlite3.connect(path)) as new:
            new.execute(f"PRAGMA page_size={page_size}")
            new.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot create {path}: {exc}") from None
    return True


def _page_size_of(path: Path) -> int:
    """The page size in the header of the SQLite file at `path` (ConfigError if it is none)."""
    with path.open("rb") as file:
        header = file.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise ConfigError(f"{path} is not a SQLite database")
    size = int.from_bytes(header[16:18], "big")
    return 65_536 if size == 1 else size


class SQLiteDialect(TransactionalDDL, SQLiteFence, Dialect):
    """SQLite: the clock has millisecond resolution (`strftime('%f')`); locks are lease rows."""

    name = "sqlite"

    def insert(self, table: sa.Table) -> Any:
        return sqlite_insert(table)

    def resize_text_column(self, conn: Connection, table_name: str, column: str, length: int) -> None:
        """Nothing to alter: SQLite keeps a declared length as a name only and never enforces it
        (the field's MaxLength, which the product checks, is what changes)."""

    def index_names(self, conn: Connection, table_name: str) -> set[str]:
        """From sqlite_master: SQLAlchemy skips an index on an expression."""
        master = sa.table("sqlite_master", sa.column("name"), sa.column("type"), sa.column("tbl_name"))
        stmt = sa.select(master.c.name).where(master.c.type == "index", master.c.tbl_name == table_name)
        return {str(name) for name in conn.execute(stmt).scalars()}

    def date_column(self, conn: Connection, table_name: str, column: str) -> list[str]:
        """SQLite keeps a declared type as a name only: DATE and DATETIME both have NUMERIC
        affinity, and the type can change only by copying the whole table. What a DATE column
        reads is its text, `YYYY-MM-DD`, so each value is rewritten to its day and the declared
        name stays. A value that is no date refuses the step, changing nothing."""
        table = sa.table(table_name, sa.column("Id"), sa.column(column))
        value, day = table.c[column], sa.func.date(table.c[column])
        bad = conn.execute(
            sa.select(table.c.Id, value).where(value.is_not(None), day.is_(None)).limit(1)
        ).first()
        if bad is not None:
            raise SetupError(
                f"{table_name}.{column} of row {bad[0]} holds {str(bad[1])[:40]!r}, not a date; "
                "correct or clear it, then run autonumber db upgrade again"
            )
        done = conn.execute(sa.update(table).where(value.is_not(None), value != day).values({column: day}))
        return (
            [f"column {table_name}.{column}: {done.rowcount} value(s) cut to their day"]
            if done.rowcount
            else []
        )

    def greatest(self, a: Any, b: Any) -> sa.ColumnElement[Any]:
        """SQLite's two-argument max() is GREATEST."""
        return sa.func.max(a, b)

    def engine_options(self, pool_size: int) -> dict[str, Any]:
        return {"pool_size": pool_size, "max_overflow": pool_size * 4, "pool_timeout": 60}

    def configure_engine(self, engine: Engine, *, statement_batches: bool = False) -> None:
        # a shared-cache database (Django's in-memory test database) locks tables, not the file:
        # readers must not wait on the one writer's table locks (it may be the caller's transaction)
        shared_cache = engine.url.query.get("cache") == "shared"

        version = schema_version()

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, record: Any) -> None:
            dbapi_connection.isolation_level = None
            sqlite_declare(dbapi_connection, version)  # the writer fence's (db/fence.py)
            record.info[INFO_KEY] = version
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA synchronous=NORMAL")
            if shared_cache:
                cursor.execute("PRAGMA read_uncommitted=1")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # every `.begin()` takes the write lock up front unless the pool only reads (READONLY).
            # Sent on the driver's connection: SQLAlchemy's execute path (a cursor, events, a
            # result) cost a sixth of a one-row insert's CPU here. A refusal ("database is
            # locked") is wrapped as SQLAlchemy wraps any driver error, so callers see the same.
            statement = "BEGIN" if conn.get_execution_options().get(READONLY, False) else "BEGIN IMMEDIATE"
            try:
                conn.connection.driver_connection.execute(statement)  # type: ignore[union-attr]
            except sqlite3.Error as exc:
                raise sa.exc.DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc

    def numbers_on_insert(self, conn: Connection) -> bool:
        return True

    def insert_numbered(
        self,
        conn: Connection,
        counter: Counter,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        number: Numbered,
        params: Mapping[str, Any],
        *,
        commit: bool = False,
    ) -> list[tuple[str, datetime]] | None:
        """The counter's `UPDATE … RETURNING`, then the rows' INSERT with the values built from what
        it returned, both on the driver's cursor with their SQL made once (db/driver.py). SQLite is
        in-process, so there is no round trip to save: what this saves is SQLAlchemy's execute path
        for each statement, most of a one-row insert's CPU here. Never asked to `commit`
        (commits_alone is False here)."""
        bump = statement(counter.table, ("bump", counter), lambda: self.counter_update(counter), conn.dialect)
        got = bump.run(conn, params).rows
        if not got:
            return None
        ((after, stamp),) = got
        created = to_utc(stamp)
        values = number.values(int(after) - len(rows), len(rows))
        given = number.given(rows[0])
        fields = (*given, number.column, number.created)
        full = [
            {**row, number.column: v, number.created: created} for row, v in zip(rows, values, strict=True)
        ]
        execute_rows(conn, self._insert(conn, table, fields), bound_tuples(conn.dialect, table, fields, full))
        return [(v, created) for v in values]

    def bulk_sender(
        self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
    ) -> Send | None:
        """Multi-row INSERTs of `ROWS_PER_INSERT` rows, their parameters laid out now, run by the
        call returned. SQLite releases Python's lock while it runs a statement, so one long statement per
        5,000 rows lets it store them while the import reads its next batch; an executemany would
        take the lock back after every row. The rows never leave the process, so the send says
        they are handed over as it starts. A refusal is raised as SQLAlchemy's DBAPIError, named
        by the one-row INSERT (the statement run is thousands of rows long)."""
        driver = conn.connection.driver_connection
        if not isinstance(driver, sqlite3.Connection):
            return None
        inserts: list[tuple[str, list[Any], str]] = []
        for fields, group in by_fields(rows).items():
            values = flat_rows(bound_columns(conn.dialect, table, fields, group))
            width, one_row = len(fields), self._insert(conn, table, fields)
            per = _rows_per_insert(driver, one_row, width)
            for start in range(0, len(group), per):
                count = min(per, len(group) - start)
                text = (
                    self._insert(conn, table, fields, per)
                    if count == per
                    else _insert_text(conn, table, fields, count)
                )
                part = values[start * width : (start + count) * width]
                inserts.append((text, part, one_row))

        def send(handed: Handed) -> None:
            handed()
            for text, params, named in inserts:
                try:
                    driver.execute(text, params)
                except sqlite3.Error as exc:
                    raise sa.exc.DBAPIError.instance(named, None, exc, sqlite3.Error) from exc

        return send

    @staticmethod
    def _insert(conn: Connection, table: sa.Table, fields: tuple[str, ...], rows: int = 1) -> str:
        """`_insert_text`, made once per set of fields and row count (one row, or a full
        multi-row INSERT: a bulk write's last, shorter INSERT is made each time)."""
        return kept(
            table, ("autonumber.sqlite_insert", fields, rows), lambda: _insert_text(conn, table, fields, rows)
        )

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        return sa.func.strftime("%Y-%m-%d %H:%M:%f", "now")

    def page_size(self, conn: Connection) -> int | None:
        return int(conn.exec_driver_sql("PRAGMA page_size").scalar_one())

    def reservation_conn(self, caller: Connection | None) -> Connection | None:
        """The caller's, when its transaction is open: it may hold the one write lock, and a
        reservation on a second connection would wait for it forever."""
        return caller if caller is not None and caller.in_transaction() else None

    def journal_outcomes(self, engine: Engine, watch: Callable[[Engine], None]) -> None:
        """Nothing: a reservation here is in the caller's transaction and goes with it."""

    def enforced_length(self, declared: int | None) -> int | None:
        """None: SQLite keeps a VARCHAR's length as a name only."""
        return None

    def named_lock(self, engine: Engine, name: str, timeout: float) -> AbstractContextManager[None]:
        return lease_lock(self, engine, name, timeout)

    def is_retryable(self, exc: BaseException) -> bool:
        text = str(getattr(exc, "orig", exc)).lower()
        return "database is locked" in text or "database table is locked" in text

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return "unique constraint failed" in str(getattr(exc, "orig", exc)).lower()


def _rows_per_insert(driver: sqlite3.Connection, one_row: str, width: int) -> int:
    """ROWS_PER_INSERT, or fewer where the connection's limits on bound variables or on the
    length of a statement (`one_row` is the one-row INSERT) would refuse that many."""
    variables = driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    head, values, row = one_row.encode().rpartition(b" VALUES ")
    length = (driver.getlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH) - len(head + values)) // (len(row) + 2)
    return max(1, min(ROWS_PER_INSERT, variables, length))


def _insert_text(conn: Connection, table: sa.Table, fields: tuple[str, ...], rows: int) -> str:
    """The driver's INSERT of `rows` rows of `fields` into `table`."""
    text = insert_text(conn, table, fields, rows)
    if text is None:
        raise RuntimeError(f"no positional parameters in paramstyle {conn.dialect.paramstyle}")
    return text
