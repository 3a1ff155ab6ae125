"""A connection going back to the pool (MariaDB): no ROLLBACK round trip after the COMMIT that ended
its transaction, and a transaction still open is rolled back all the same (db/mysql.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymysql.connections
import pytest
import sqlalchemy as sa

from autonumber.db import create_engine
from support import make_platform

MARIADB = [pytest.param("mysql", id="mysql", marks=pytest.mark.mysql)]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement PyMySQL sends, as text, from the moment the test asks for it."""
    texts: list[str] = []
    original = pymysql.connections.Connection._execute_command

    def spy(self: Any, command: int, sql: str | bytes) -> Any:
        texts.append(sql if isinstance(sql, str) else sql.decode(errors="replace"))
        return original(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", spy)
    yield texts


@pytest.mark.parametrize("db_url", MARIADB, indirect=True)
def test_an_insert_sends_no_rollback_after_its_commit(db_url: str, sent: list[str]) -> None:
    # no catalog poll inside the counted window: on a loaded machine the default 1 s can pass, and
    # the poll's reads end with the ROLLBACK of a read-only transaction (not the insert's)
    p = make_platform(db_url, poll_interval=3600.0)
    try:
        for warm in (True, False):  # a pool's first connect rolls back once (SQLAlchemy's initialize)
            if not warm:
                sent.clear()
            p.records.insert("Case", {"Subject": "grouped"})
            with p.begin() as conn:
                p.records.insert("Case", {"Subject": "in a caller's transaction"}, conn)
    finally:
        p.close()
    # the group writer's; the reservation's, the last statement of its one text; the caller's
    commits = [s for s in sent if s == "COMMIT" or s.endswith("; COMMIT")]
    assert len(commits) == 3, sent
    assert "ROLLBACK" not in sent, "\n".join(s[:60] for s in sent)


@pytest.mark.parametrize("db_url", MARIADB, indirect=True)
def test_a_connection_returned_inside_a_transaction_is_rolled_back(db_url: str, sent: list[str]) -> None:
    db = create_engine(db_url, pool_size=1)
    try:
        with db.begin() as conn:
            conn.execute(sa.text("CREATE TABLE reset_probe (k INT PRIMARY KEY)"))
        raw = db.raw_connection()  # the driver's connection, no SQLAlchemy transaction around it
        cursor = raw.cursor()
        cursor.execute("INSERT INTO reset_probe VALUES (1)")
        cursor.close()
        raw.close()  # back to the pool with the INSERT uncommitted
        assert sent[-1] == "ROLLBACK", sent
        with db.connect() as conn:  # the same pooled connection: a new transaction, nothing stored
            assert conn.execute(sa.text("SELECT COUNT(*) FROM reset_probe")).scalar_one() == 0
        other = create_engine(db_url, pool_size=1)
        try:  # and no lock left behind: another session writes the same key at once
            with other.begin() as conn:
                conn.execute(sa.text("SET SESSION innodb_lock_wait_timeout = 1"))
                conn.execute(sa.text("INSERT INTO reset_probe VALUES (1)"))
        finally:
            other.dispose()
    finally:
        db.dispose()
