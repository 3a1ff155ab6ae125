"""PostgreSQL (and CockroachDB where the primitives exist): advisory locks, UPDATE … RETURNING."""

from __future__ import annotations

import time
from collections.abc import Iterator
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

    def insert(self, table: sa.Table) -> Any:
        return pg_insert(table)

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

    def is_retryable(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) in RETRYABLE)

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) == "23505")


def is_cockroach(engine: Engine) -> bool:
    """Whether the server is CockroachDB (no advisory locks there: a lease row instead)."""

    def probe(conn: Connection) -> bool:
        return "cockroachdb" in str(conn.execute(sa.select(sa.func.version())).scalar()).lower()

    return server_flag(engine, "cockroach", probe)
