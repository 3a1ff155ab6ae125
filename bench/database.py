"""A fresh, bootstrapped database per backend for one bench run, and what the server is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from autonumber.db import create_engine, mask, parse_url
from autonumber.db.sqlite import make_file
from autonumber.errors import ConfigError
from autonumber.identifiers import check_api_name
from autonumber.setup.bootstrap import bootstrap

GUARD = "bench"
"""The bench drops and recreates its server database: only one whose name contains this word."""


@contextmanager
def engine_for(url: str) -> Iterator[sa.Engine]:
    """An engine for a short piece of set-up or checking, disposed afterwards."""
    engine = create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def warm(db: sa.Engine, n: int) -> None:
    """Open `n` connections of `db`'s pool now and return them to it, so a cell measures inserts,
    not connects (PyMySQL builds a TLS context per connect, ~70 ms of CPU under the GIL)."""
    held = [db.connect() for _ in range(n)]
    for conn in held:
        conn.close()


def stored_numbers(db: sa.Engine, column: sa.Column[Any]) -> dict[str, int]:
    """Rows stored in `column`'s table and the duplicate numbers among them."""
    with db.connect() as conn:
        total, distinct = conn.execute(
            sa.select(sa.func.count(), sa.func.count(sa.distinct(column))).select_from(column.table)
        ).one()
    return {"stored_rows": int(total), "stored_duplicates": int(total) - int(distinct)}


def backend_of(url: str) -> str:
    """`sqlite`, `mysql` or `postgresql`."""
    name = parse_url(url).get_backend_name()
    return "mysql" if name == "mariadb" else name


def recreate(url: str, *, page_size: int | None = None) -> None:
    """Drop and create the database `url` names (a file for SQLite, with `page_size`-byte pages
    when given), then bootstrap the core pack."""
    parsed = parse_url(url)
    backend = backend_of(url)
    if backend == "sqlite":
        path = Path(parsed.database or "")
        if not parsed.database or parsed.database == ":memory:":
            raise ConfigError("the SQLite bench needs a file database, e.g. sqlite:///bench.db")
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if page_size is not None:
            make_file(parsed, page_size)
    else:
        name = check_api_name(parsed.database, "database name")
        if GUARD not in name.lower():
            raise ConfigError(
                f"refusing to drop {mask(parsed)}: the bench recreates its database, so its name "
                f"must contain {GUARD!r} (e.g. autonumber_bench)"
            )
        admin = parsed._replace(database="postgres" if backend == "postgresql" else None)
        admin_engine = create_engine(admin)
        try:
            with admin_engine.connect() as raw:
                conn = raw.execution_options(isolation_level="AUTOCOMMIT")
                quoted = conn.dialect.identifier_preparer.quote(name)
                force = " WITH (FORCE)" if backend == "postgresql" else ""
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {quoted}{force}"))
                conn.execute(sa.text(f"CREATE DATABASE {quoted}"))
        finally:
            admin_engine.dispose()
    with engine_for(url) as engine:
        bootstrap(engine)


SETTINGS = {
    "mysql": ("innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "max_connections"),
    "postgresql": ("synchronous_commit", "fsync", "max_connections", "shared_buffers"),
}


def describe_server(url: str) -> dict[str, Any]:
    """Server version and the durability settings that decide what a commit costs."""
    backend = backend_of(url)
    with engine_for(url) as engine, engine.connect() as conn:
        if backend == "sqlite":
            version = conn.execute(sa.select(sa.func.sqlite_version())).scalar_one()
            return {
                "version": f"SQLite {version}",
                "settings": {"journal_mode": "wal", "synchronous": "normal"},
            }
        version = str(conn.execute(sa.select(sa.func.version())).scalar_one())
        settings: dict[str, str] = {}
        for name in SETTINGS[backend]:
            if backend == "postgresql":
                settings[name] = str(conn.execute(sa.text(f"SHOW {name}")).scalar_one())
            else:
                row = conn.execute(sa.text("SHOW VARIABLES LIKE :n"), {"n": name}).first()
                settings[name] = str(row[1]) if row else "?"
        label = (
            "MariaDB"
            if "mariadb" in version.lower()
            else ("PostgreSQL" if backend == "postgresql" else "MySQL")
        )
        short = version.split(" on ")[0].split("-")[0] if backend == "mysql" else version.split(" on ")[0]
        return {"version": short if short.startswith(label) else f"{label} {short}", "settings": settings}
