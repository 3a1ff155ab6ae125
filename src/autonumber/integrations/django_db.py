"""The Django adapter's view of a database alias: its URL, its Platform, and its own connection.

`borrowed(alias)` lends Django's open DB-API connection of the current thread to SQLAlchemy, so
the rules package and the engine can work inside Django's transaction (a migration's, or the
caller's `atomic()` block on SQLite, where a second connection could never take the write lock).
The lent connection's commit, rollback and close do nothing: Django owns its transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from django.db import connections
from sqlalchemy.dialects.sqlite import DATETIME
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from autonumber.errors import AutonumberError
from autonumber.runtime import Platform, connect

DRIVERS = {"sqlite": "sqlite", "mysql": "mysql+pymysql", "postgresql": "postgresql+psycopg"}

_lock = threading.Lock()
_platforms: dict[str, Platform] = {}
_borrowing: dict[str, Engine] = {}
registered: dict[tuple[str, Any], str] = {}
"""Field ids of the rules this process registered, by (database URL, rule); cleared with the platforms."""
_watched: set[int] = set()


def database_settings(url: str) -> dict[str, Any]:
    """A Django `DATABASES` entry for a SQLAlchemy URL (the one in AUTONUMBER_DATABASE_URL, say),
    so a project and the autonumber CLI read the same setting."""
    u = make_url(url)
    backend = u.get_backend_name()
    if backend == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": u.database or ":memory:"}
    engines = {"mysql": "mysql", "mariadb": "mysql", "postgresql": "postgresql"}
    if backend not in engines:
        raise AutonumberError(
            f"database URL {u.render_as_string()!r}: use sqlite, mysql/mariadb or postgresql"
        )
    return {
        "ENGINE": f"django.db.backends.{engines[backend]}",
        "NAME": u.database or "",
        "USER": u.username or "",
        "PASSWORD": u.password or "",
        "HOST": u.host or "",
        "PORT": str(u.port or ""),
    }


def database_url(alias: str = "default") -> str:
    """The SQLAlchemy URL of a Django database alias (sqlite3, mysql or postgresql backend).

    Django's in-memory SQLite test database (`file:memorydb_…?mode=memory&cache=shared`) is
    opened as the same shared-cache URI, so the platform sees the tables the test runner made.
    """
    wrapper = connections[alias]
    settings, vendor = wrapper.settings_dict, wrapper.vendor
    driver = DRIVERS.get(vendor)
    if driver is None:
        raise AutonumberError(
            f"database {alias!r}: Django backend {vendor!r} is not supported "
            f"(use one of {', '.join(DRIVERS)})"
        )
    name = str(settings["NAME"])
    if vendor == "sqlite":
        if name.startswith("file:"):
            path, _, query = name.partition("?")
            pairs = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            return URL.create(driver, database=path, query={**pairs, "uri": "true"}).render_as_string()
        return URL.create(driver, database=name).render_as_string()
    if vendor == "postgresql" and getattr(getattr(wrapper, "Database", None), "__name__", "") == "psycopg2":
        driver = "postgresql+psycopg2"
    port = settings.get("PORT")
    url = URL.create(
        driver,
        username=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        host=settings.get("HOST") or "127.0.0.1",
        port=int(port) if port else None,
        database=name,
    )
    return url.render_as_string(hide_password=False)


def platform_for(alias: str = "default") -> Platform:
    """The Platform over a Django database alias, opened once per process and database."""
    url = database_url(alias)
    with _lock:
        platform = _platforms.get(url)
        if platform is None:
            platform = _platforms[url] = connect(url)
            _close_before_test_database_drop(alias)
        return platform


def open_platform(alias: str) -> Platform | None:
    """The alias's Platform if one is open in this process (its catalog is refreshed after a migration)."""
    with _lock:
        return _platforms.get(database_url(alias))


def close_platforms() -> None:
    """Close every Platform opened for Django (tests; a process keeps them for its lifetime)."""
    with _lock:
        for platform in _platforms.values():
            platform.close()
        _platforms.clear()
        registered.clear()
        for engine in _borrowing.values():
            engine.dispose()
        _borrowing.clear()


def _close_before_test_database_drop(alias: str) -> None:
    """Close the platforms before Django's test runner drops a test database (PostgreSQL refuses
    to drop a database another connection still holds)."""
    creation = connections[alias].creation
    if id(creation) in _watched:
        return
    _watched.add(id(creation))
    destroy = creation.destroy_test_db

    def destroy_test_db(*args: Any, **kwargs: Any) -> Any:
        close_platforms()
        return destroy(*args, **kwargs)

    creation.destroy_test_db = destroy_test_db


class _ConvertedDateTime(DATETIME):
    """Django's sqlite3 connections convert DATETIME columns to datetime objects already."""

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        parse = super().result_processor(dialect, coltype)

        def process(value: Any) -> Any:
            return parse(value) if isinstance(value, str) and parse is not None else value

        return process


def _do_nothing(*_args: Any) -> None:
    """Django owns the lent connection: it commits, rolls back and closes it."""


def _borrowing_engine(alias: str) -> Engine:
    url = database_url(alias)
    with _lock:
        engine = _borrowing.get(url)
        if engine is None:

            def lend() -> Any:
                wrapper = connections[alias]  # the calling thread's connection
                wrapper.ensure_connection()
                return wrapper.connection

            engine = sa.create_engine(url, creator=lend, poolclass=NullPool, pool_reset_on_return=None)
            if engine.dialect.name == "sqlite":
                engine.dialect.colspecs = {**engine.dialect.colspecs, sa.DateTime: _ConvertedDateTime}
            for name in ("do_commit", "do_rollback", "do_close", "do_terminate"):
                setattr(engine.dialect, name, _do_nothing)
            _borrowing[url] = engine
        return engine


def borrowed_engine(alias: str) -> Engine:
    """An Engine whose every connection is Django's connection of `alias` in the calling thread."""
    return _borrowing_engine(alias)


@contextmanager
def borrowed(alias: str) -> Iterator[Connection]:
    """Django's connection of `alias` as a SQLAlchemy Connection inside Django's transaction."""
    with _borrowing_engine(alias).connect() as conn, conn.begin():
        yield conn
