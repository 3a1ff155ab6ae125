"""Ping a pooled connection at checkout only when it sat idle: the pre-ping of a connection given
back a moment ago costs a round trip per transaction and almost never finds it dead.

The rule of HikariCP's `aliveBypassWindowMs`: a connection used within the last `IDLE_PING_AFTER`
seconds is lent without a ping; one idle longer is pinged, and one found dead is replaced by the
pool before the caller sees it (SQLAlchemy's `DisconnectionError` protocol). A server that ended a
session within that window fails the caller's first statement instead, which raises
`DatabaseUnavailable` ("safe to retry") and invalidates the pool's older connections.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

IDLE_PING_AFTER = 0.5
"""Seconds a connection may sit in the pool and still be lent without a ping."""

_IDLE_SINCE = "autonumber_idle_since"


def _now() -> float:
    return time.monotonic()


def ping_when_idle(engine: sa.Engine, after: float = IDLE_PING_AFTER) -> None:
    """Ping `engine`'s connections at checkout once they sat idle `after` seconds or more."""
    dialect = engine.dialect

    @event.listens_for(engine.pool, "checkin")
    def _idle(dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_IDLE_SINCE] = _now()

    @event.listens_for(engine.pool, "checkout")
    def _check(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.pop(_IDLE_SINCE, None)
        if since is None or _now() - since < after:
            return  # just connected, or used a moment ago
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise sa.exc.DisconnectionError(str(exc)) from exc
            raise


def drop_after_failed_end(engine: sa.Engine, retryable: Callable[[BaseException], bool]) -> None:
    """Invalidate a connection whose BEGIN, COMMIT or ROLLBACK failed with anything but a lost race.

    SQLAlchemy keeps such a connection checked out when the ROLLBACK of `Connection.close()` raises
    (a Galera node answering 1047 while it rejoins): it is lost to the pool until garbage
    collection, and callers starve for connections. Marked as a disconnect, it goes back to the
    pool invalidated, at once. A lost race (SQLite busy, a deadlock) is left alone: it is retried."""

    @event.listens_for(engine, "handle_error")
    def _failed_end(ctx: sa.engine.ExceptionContext) -> None:
        ending = ctx.statement is None and ctx.connection is not None and not ctx.is_pre_ping
        if ending and not retryable(ctx.sqlalchemy_exception or ctx.original_exception):
            ctx.is_disconnect = True
