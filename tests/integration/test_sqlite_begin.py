"""SQLite's BEGIN IMMEDIATE goes on the driver's connection (db/sqlite.py): a writer still
takes the write lock at BEGIN, a read-only connection still begins deferred, and a refused BEGIN
("database is locked") still reaches callers as SQLAlchemy's OperationalError, which the retry
policy recognises as a lost race."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine, dialect_for
from autonumber.db.sqlite import READONLY


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = create_engine(f"sqlite:///{tmp_path / 'begin.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (k INTEGER PRIMARY KEY)"))
    yield engine
    engine.dispose()


def driver(conn: sa.Connection) -> Any:
    return conn.connection.driver_connection


def traced(conn: sa.Connection) -> list[str]:
    seen: list[str] = []
    driver(conn).set_trace_callback(seen.append)
    return seen


def test_a_writer_begins_immediate_and_a_reader_deferred(lite: sa.Engine) -> None:
    with lite.connect() as conn:
        seen = traced(conn)
        with conn.begin():
            assert driver(conn).in_transaction  # the write lock is held from BEGIN
            conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        reader = conn.execution_options(**{READONLY: True})
        with reader.begin():
            reader.execute(sa.text("SELECT COUNT(*) FROM t"))
        driver(conn).set_trace_callback(None)
    assert seen == [
        "BEGIN IMMEDIATE",
        "INSERT INTO t VALUES (1)",
        "COMMIT",
        "BEGIN",
        "SELECT COUNT(*) FROM t",
        "COMMIT",
    ]


def test_a_refused_begin_is_sqlalchemys_operational_error_and_a_lost_race(lite: sa.Engine) -> None:
    with lite.connect() as holder, lite.connect() as other:
        driver(other).execute("PRAGMA busy_timeout=0")  # refuse at once instead of waiting 30 s
        with holder.begin():
            holder.execute(sa.text("INSERT INTO t VALUES (1)"))
            with pytest.raises(sa.exc.OperationalError) as refused:
                other.begin()
            assert "database is locked" in str(refused.value.orig)
            assert dialect_for(lite).is_retryable(refused.value)
            assert not other.in_transaction()
        with other.begin():  # the lock is free again: the same connection writes
            other.execute(sa.text("INSERT INTO t VALUES (2)"))
        assert other.execute(sa.text("SELECT COUNT(*) FROM t")).scalar_one() == 2
