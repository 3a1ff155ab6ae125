"""What every backend's copy needs: the worker's database names, pool-less engines, the day stamp."""

from __future__ import annotations

import contextlib
import os
import re
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

_NAME = re.compile(r"^[A-Za-z0-9_]+$")

managed: set[str] = set()
"""The server test databases this session owns (copies may replace their contents)."""


def worker_id() -> str:
    """The pytest-xdist worker id (`gw0`, …), or `main` outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def worker_url(base: str) -> str:
    """`base` with its database name suffixed by the xdist worker id (unchanged outside xdist)."""
    url = make_url(base)
    worker = worker_id()
    if worker == "main":
        return base
    return url.set(database=f"{url.database}_{worker}").render_as_string(hide_password=False)


def checked(name: str | None) -> str:
    """`name` when it is a plain database name (it is put into SQL text); ValueError otherwise."""
    if not name or not _NAME.match(name):
        raise ValueError(f"test database name {name!r}: only letters, digits and _ are allowed")
    return name


def engine(url: str, database: str | None = None, **kw: Any) -> sa.Engine:
    """A pool-less engine on `database` of `url`'s server (MariaDB: no default database when None)."""
    t = make_url(url)
    if database is not None or t.get_backend_name() == "mysql":
        t = sa.URL.create(t.drivername, t.username, t.password, t.host, t.port, database, t.query)
    return sa.create_engine(t, poolclass=NullPool, **kw)


def ensure_database(url: str) -> None:
    """Create the server database of `url` when it does not exist yet."""
    name = checked(make_url(url).database)
    if make_url(url).get_backend_name() == "postgresql":
        admin = engine(url, "postgres", isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                found = conn.execute(
                    sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
                ).first()
                if found is None:
                    conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
                _pg_fast_commits(conn, name)
        finally:
            admin.dispose()
    else:
        admin = engine(url)
        try:
            with admin.begin() as conn:
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{name}`"))
        finally:
            admin.dispose()


def _pg_fast_commits(conn: sa.Connection, name: str) -> None:
    """COMMIT without waiting for the WAL flush in this test database (new sessions): what another
    session sees is unchanged, only a crash of the server could lose the last commits, and no test
    crashes it. Skipped when the test user may not alter the database."""
    with contextlib.suppress(sa.exc.ProgrammingError):
        conn.execute(sa.text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))


def today() -> str:
    return datetime.now(UTC).date().isoformat()
