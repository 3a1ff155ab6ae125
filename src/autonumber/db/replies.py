"""What drivers and servers answer, read one way for every dialect: timestamps as aware UTC,
the errors of a lost connection, the backend's error code, and facts about a server probed once."""

from __future__ import annotations

import weakref
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


_SERVER_FLAGS: dict[str, dict[str, bool]] = {}
"""Per server URL, so a new engine on the same server asks nothing again."""
_URLS: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()
"""Each engine's URL, rendered once: some flags are asked on every transaction, and the engine is
a key found in a fraction of a microsecond where rendering or hashing its URL takes about 4."""


def _flags(engine: Engine) -> dict[str, bool]:
    url = _URLS.get(engine)
    if url is None:
        url = _URLS.setdefault(engine, engine.url.render_as_string(hide_password=False))
    return _SERVER_FLAGS.setdefault(url, {})


def forget_server_flag(engine: Engine, key: str, value: bool) -> None:
    """Correct a probed fact the server has since contradicted (a variable turned off)."""
    _flags(engine)[key] = value


def server_flag(
    engine: Engine, key: str, probe: Callable[[Connection], bool], conn: Connection | None = None
) -> bool:
    """A fact about the server behind `engine` (e.g. "is Galera"), probed once per URL; on `conn`
    when given (a caller inside a transaction need not wait for a second pooled connection)."""
    flags = _flags(engine)
    if key not in flags:
        if conn is not None:
            flags[key] = probe(conn)
        else:
            with engine.connect() as own:
                flags[key] = probe(own)
    return flags[key]
