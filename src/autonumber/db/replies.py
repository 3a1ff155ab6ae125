"""What drivers and servers answer, read one way for every dialect: timestamps as aware UTC,
the errors of a lost connection, the backend's error code, and facts about a server probed once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine


def to_utc(value: Any) -> datetime:
    """Turn what a driver returns for a UTC timestamp (naive datetime or text) into an aware UTC one."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise TypeError(f"expected a timestamp from the database clock, got {value!r}")
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UNAVAILABLE = (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.PendingRollbackError)
"""What a lost, killed or refused connection raises, also on the next statement run on it."""


def _orig(exc: BaseException) -> BaseException:
    return getattr(exc, "orig", None) or exc


def driver_code(exc: BaseException) -> Any:
    """The backend's error code from a DBAPI error (MySQL errno, PostgreSQL SQLSTATE)."""
    orig = _orig(exc)
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate:
        return sqlstate
    args = getattr(orig, "args", ())
    return args[0] if args else None


_SERVER_FLAGS: dict[tuple[str, str], bool] = {}


def forget_server_flag(engine: Engine, key: str, value: bool) -> None:
    """Correct a probed fact the server has since contradicted (a variable turned off)."""
    _SERVER_FLAGS[(engine.url.render_as_string(hide_password=False), key)] = value


def server_flag(
    engine: Engine, key: str, probe: Callable[[Connection], bool], conn: Connection | None = None
) -> bool:
    """A fact about the server behind `engine` (e.g. "is Galera"), probed once per URL; on `conn`
    when given (a caller inside a transaction need not wait for a second pooled connection)."""
    cache_key = (engine.url.render_as_string(hide_password=False), key)
    if cache_key not in _SERVER_FLAGS:
        if conn is not None:
            _SERVER_FLAGS[cache_key] = probe(conn)
        else:
            with engine.connect() as own:
                _SERVER_FLAGS[cache_key] = probe(own)
    return _SERVER_FLAGS[cache_key]
