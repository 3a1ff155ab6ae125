"""SQLite: the embedded default. Single writer, WAL, every writing transaction BEGIN IMMEDIATE."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine

from .base import Counter, Dialect, Numbered, to_utc
from .bulk import bound_tuples, insert_text
from .driver import execute_rows, kept, statement
from .lease import lease_lock

BUSY_TIMEOUT_MS = 30_000
READONLY = "autonumber_readonly"
"""Execution option: a connection that only reads begins a deferred transaction (no write lock)."""


class SQLiteDialect(Dialect):
    """SQLite: the clock has millisecond resolution (`strftime('%f')`); locks are lease rows."""

    name = "sqlite"
    reserve_on_caller_when_written = True
    transactional_ddl = True

    def insert(self, table: sa.Table) -> Any:
        return sqlite_insert(table)

    def greatest(self, a: Any, b: Any) -> sa.ColumnElement[Any]:
        """SQLite's two-argument max() is GREATEST."""
        return sa.func.max(a, b)

    def engine_options(self, pool_size: int) -> dict[str, Any]:
        return {"pool_size": pool_size, "max_overflow": pool_size * 4, "pool_timeout": 60}

    def configure_engine(self, engine: Engine, *, statement_batches: bool = False) -> None:
        # a shared-cache database (Django's in-memory test database) locks tables, not the file:
        # readers must not wait on the one writer's table locks (it may be the caller's transaction)
        shared_cache = engine.url.query.get("cache") == "shared"

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None
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

    @staticmethod
    def _insert(conn: Connection, table: sa.Table, fields: tuple[str, ...]) -> str:
        """The driver's INSERT of `fields` into `table`, made once per set of fields."""

        def make() -> str:
            text = insert_text(conn, table, fields)
            if text is None:
                raise RuntimeError(f"no positional parameters in paramstyle {conn.dialect.paramstyle}")
            return text

        return kept(table, ("autonumber.sqlite_insert", fields), make)

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        return sa.func.strftime("%Y-%m-%d %H:%M:%f", "now")

    def named_lock(self, engine: Engine, name: str, timeout: float) -> AbstractContextManager[None]:
        return lease_lock(self, engine, name, timeout)

    def is_retryable(self, exc: BaseException) -> bool:
        text = str(getattr(exc, "orig", exc)).lower()
        return "database is locked" in text or "database table is locked" in text

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return "unique constraint failed" in str(getattr(exc, "orig", exc)).lower()
