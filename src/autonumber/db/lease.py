"""A named lock kept as a lease row in `_System_Lock`.

Used where the server has no usable session lock: SQLite (no such primitive) and MariaDB Galera,
where GET_LOCK is local to one node while a row written in a transaction is certified cluster-wide.
"""

from __future__ import annotations

import os
import random
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.errors import LockTimeout

from .replies import to_utc
from .tables import lock_table

if TYPE_CHECKING:
    from .base import Dialect

LEASE_SECONDS = 600.0


def holder_id() -> str:
    """Who holds a lease: host, process and a random part, so a dead local holder can be detected."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _holder_is_dead(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _try_take(dialect: Dialect, engine: Engine, name: str, holder: str, lease: float) -> bool:
    table = lock_table
    with engine.begin() as conn:
        now = dialect.utc_now(conn)
        row = conn.execute(
            dialect.for_update(sa.select(table.c.holder, table.c.expires_at).where(table.c.name == name))
        ).first()
        expires = now + timedelta(seconds=lease)
        if row is None:
            conn.execute(
                sa.insert(table).values(name=name, holder=holder, acquired_at=now, expires_at=expires)
            )
            return True
        stale = to_utc(row.expires_at) <= now or _holder_is_dead(row.holder)
        if not stale:
            return False
        conn.execute(
            sa.update(table)
            .where(table.c.name == name, table.c.holder == row.holder)
            .values(holder=holder, acquired_at=now, expires_at=expires)
        )
        return True


@contextmanager
def lease_lock(
    dialect: Dialect, engine: Engine, name: str, timeout: float, lease: float = LEASE_SECONDS
) -> Iterator[None]:
    """Take the lease named `name`, waiting up to `timeout` seconds; release it on exit."""
    lock_table.create(engine, checkfirst=True)
    holder = holder_id()
    deadline = time.monotonic() + timeout
    while True:
        try:
            if _try_take(dialect, engine, name, holder, lease):
                break
        except sa.exc.DBAPIError as exc:
            if not (dialect.is_retryable(exc) or dialect.is_duplicate_key(exc)):
                raise
        if time.monotonic() >= deadline:
            raise LockTimeout(name, timeout)
        time.sleep(random.uniform(0.02, 0.1))
    try:
        yield
    finally:
        _release(dialect, engine, name, holder)


def _release(dialect: Dialect, engine: Engine, name: str, holder: str) -> None:
    for _ in range(20):
        try:
            with engine.begin() as conn:
                conn.execute(
                    sa.delete(lock_table).where(lock_table.c.name == name, lock_table.c.holder == holder)
                )
            return
        except sa.exc.DBAPIError as exc:
            if not dialect.is_retryable(exc):
                raise
            time.sleep(0.05)
