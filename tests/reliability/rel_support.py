"""Helpers of the reliability suite (not a test module): platforms, counters, server sessions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from autonumber.db.tables import counter_table
from autonumber.runtime import Platform
from support import CASE as CASE
from support import make_platform as make_platform
from support import number as number


def next_value(p: Platform, field: str = CASE, scope_key: str = "") -> int:
    """The counter row's next_value."""
    fid = p.catalog.current().field_id(field)
    with p.db.connect() as conn:
        value = conn.execute(
            sa.select(counter_table.c.next_value).where(
                counter_table.c.field_id == fid, counter_table.c.scope_key == scope_key
            )
        ).scalar_one()
    return int(value)


def stored_numbers(p: Platform, object_name: str = "Case", column: str = "CaseNumber") -> list[str]:
    """Every stored value of an autonumber column."""
    table = p.catalog.current().table(object_name)
    with p.db.connect() as conn:
        return [str(v) for (v,) in conn.execute(sa.select(table.c[column]))]


def track_server_ids(engine: sa.Engine) -> set[int]:
    """Record the server-side id (MariaDB connection id / PostgreSQL backend pid) of every new
    connection `engine` opens; the returned set fills as the pool connects."""
    ids: set[int] = set()
    query = "SELECT pg_backend_pid()" if engine.dialect.name == "postgresql" else "SELECT CONNECTION_ID()"

    @event.listens_for(engine, "connect")
    def _remember(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(query)
        ids.add(int(cursor.fetchone()[0]))
        cursor.close()
        if engine.dialect.name == "postgresql":
            dbapi_connection.commit()

    return ids


def live_sessions(admin: sa.Connection, ids: Iterable[int]) -> list[int]:
    """Which of `ids` the server still has (information_schema.processlist / pg_stat_activity)."""
    wanted = sorted(ids)
    if not wanted:
        return []
    if admin.dialect.name == "postgresql":
        stmt = sa.text("SELECT pid FROM pg_stat_activity WHERE pid IN :ids")
    else:
        stmt = sa.text("SELECT ID FROM information_schema.processlist WHERE ID IN :ids")
    stmt = stmt.bindparams(sa.bindparam("ids", expanding=True))
    return [int(r[0]) for r in admin.execute(stmt, {"ids": wanted})]


def kill_session(admin: sa.Connection, server_id: int) -> None:
    """End one server session (MariaDB `KILL`, PostgreSQL `pg_terminate_backend`)."""
    if admin.dialect.name == "postgresql":
        admin.execute(sa.select(sa.func.pg_terminate_backend(server_id)))
        return
    try:
        admin.execute(sa.text("KILL :id"), {"id": int(server_id)})
    except sa.exc.DBAPIError as exc:  # 1094: unknown thread id (it ended on its own meanwhile)
        if "1094" not in str(exc.orig):
            raise


def server_id(dbapi_connection: Any, dialect_name: str) -> int:
    """The server-side id of one open DBAPI connection."""
    cursor = dbapi_connection.cursor()
    cursor.execute("SELECT pg_backend_pid()" if dialect_name == "postgresql" else "SELECT CONNECTION_ID()")
    found = int(cursor.fetchone()[0])
    cursor.close()
    return found


def kill_and_wait(admin: sa.Connection, target: int) -> None:
    """End a session and return once the server has ended it (PostgreSQL waits up to 10 s)."""
    if admin.dialect.name == "postgresql":
        admin.execute(sa.select(sa.func.pg_terminate_backend(target, 10_000)))
    else:
        kill_session(admin, target)  # MariaDB's KILL returns once the session is marked killed


@contextmanager
def killed_before(
    admin_url: str, matches: Callable[[str], bool], *engines: sa.Engine, times: int = 1
) -> Iterator[list[str]]:
    """Kill the session of one of `engines` that is about to run a statement `matches` accepts (the
    first `times` such statements), so that statement meets a dead connection; yields the hits."""
    admin_engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    hit: list[str] = []
    lock = threading.Lock()

    def before(conn: sa.Connection, cursor: Any, statement: str, *_: Any) -> None:
        with lock:
            if len(hit) >= times or not matches(statement):
                return
            hit.append(statement)
        target = server_id(conn.connection.dbapi_connection, conn.dialect.name)
        with admin_engine.connect() as admin:
            kill_and_wait(admin, target)

    for engine in engines:
        event.listen(engine, "before_cursor_execute", before)
    try:
        yield hit
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", before)
        admin_engine.dispose()


def other_sessions(admin: sa.Connection) -> list[int]:
    """The server ids of every other session on `admin`'s database (the tests' own database)."""
    if admin.dialect.name == "postgresql":
        stmt = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    else:
        stmt = "SELECT ID FROM information_schema.processlist WHERE DB = DATABASE() AND ID <> CONNECTION_ID()"
    return sorted(int(r[0]) for r in admin.execute(sa.text(stmt)))
