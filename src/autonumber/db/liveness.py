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
