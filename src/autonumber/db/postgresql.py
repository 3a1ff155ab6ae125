"""PostgreSQL (and CockroachDB where the primitives exist): advisory locks, UPDATE … RETURNING."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection, Engine

from autonumber.errors import LockTimeout

from .base import Dialect, driver_code, lock_key, server_flag
from .lease import lease_lock

RETRYABLE = {"40001", "40P01", "55P03"}
"""Serialization failure, deadlock, lock not available."""


class PostgreSQLDialect(Dialect):
    """PostgreSQL: session advisory locks keyed by a stable hash of the lock name."""

    name = "postgresql"
    transactional_ddl = True

    def configure_engine(self, engine: Engine) -> None:
        @event.listens_for(engine, "connect")
        def _utc_session(dbapi_connection: Any, _record: Any) -> None:
            # CURRENT_TIMESTAMP defaults and aware datetimes bound to TIMESTAMP columns are converted
            # with the session TimeZone: pin it to UTC (committed, as SET is transactional).
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SET TIME ZONE 'UTC'")
            dbapi_connection.commit()

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        return sa.func.timezone("UTC", sa.func.clock_timestamp())

    def named_lock(
        self, engine: Engine, name: str, timeout: float
    ) -> AbstractContextManager[None]:
        if is_cockroach(engine):
            return lease_lock(self, engine, name, timeout)
        return self._advisory_lock(engine, name, timeout)

    @contextmanager
    def _advisory_lock(self, engine: Engine, name: str, timeout: float) -> Iterator[None]:
        key = lock_key(name)
        deadline = time.monotonic() + timeout
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            while not conn.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar():
                if time.monotonic() >= deadline:
                    raise LockTimeout(name, timeout)
                time.sleep(0.05)
            try:
                yield
            finally:
                conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))

    def upsert_greatest(
        self,
        conn: Connection,
        table: sa.Table,
        key: Mapping[str, Any],
        column: str,
        value: int,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        extra = dict(extra or {})
        stmt = pg_insert(table).values({**key, column: value, **extra})
        on_update: dict[str, Any] = {column: sa.func.greatest(table.c[column], stmt.excluded[column])}
        on_update.update({k: stmt.excluded[k] for k in extra if k != "created_date"})
        conn.execute(stmt.on_conflict_do_update(index_elements=list(key), set_=on_update))

    def atomic_increment(
        self,
        conn: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: int,
        extra: Mapping[str, Any] | None = None,
    ) -> int | None:
        stmt = (
            sa.update(table)
            .where(where)
            .values({column: table.c[column] + n, **(extra or {})})
            .returning(table.c[column])
        )
        value = conn.execute(stmt).scalar_one_or_none()
        return None if value is None else int(value)

    def is_retryable(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) in RETRYABLE)

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) == "23505")


def is_cockroach(engine: Engine) -> bool:
    """Whether the server is CockroachDB (no advisory locks there: a lease row instead)."""

    def probe(conn: Connection) -> bool:
        return "cockroachdb" in str(conn.execute(sa.select(sa.func.version())).scalar()).lower()

    return server_flag(engine, "cockroach", probe)
