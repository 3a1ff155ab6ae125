"""Pooled connections are pinged at checkout only once they sat idle (db/liveness.py): one used a
moment ago is lent without a round trip; one idle longer, whose session the server ended, is
replaced before the caller's first statement."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from rel_support import kill_and_wait, server_id

from autonumber.db import create_engine, liveness


@pytest.fixture
def db(server_db_url: str) -> Iterator[sa.Engine]:
    engine = create_engine(server_db_url, pool_size=1, max_overflow=0)
    yield engine
    engine.dispose()


def session(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return server_id(conn.connection.dbapi_connection, conn.dialect.name)


def pings(engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        seen.append(dbapi_connection)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return seen


def test_a_connection_used_a_moment_ago_is_lent_without_a_ping(
    db: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = pings(db, monkeypatch)
    first = session(db)
    for _ in range(5):
        assert session(db) == first
    assert seen == []


def test_an_idle_connection_whose_session_ended_is_replaced_before_the_callers_statement(
    db: sa.Engine, server_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = pings(db, monkeypatch)
    monkeypatch.setattr(liveness, "_now", _ticking())
    first = session(db)
    admin = sa.create_engine(server_db_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as a:
            kill_and_wait(a, first)
    finally:
        admin.dispose()
    with db.connect() as conn:  # idle "past the window": pinged, found dead, replaced
        assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
        assert server_id(conn.connection.dbapi_connection, conn.dialect.name) != first
    assert len(seen) >= 1


def _ticking() -> Callable[[], float]:
    """A clock that moves a second forward at every reading: every checkout finds its connection
    idle past the window."""
    ticks = [0.0]

    def now() -> float:
        ticks[0] += 1.0
        return ticks[0]

    return now
