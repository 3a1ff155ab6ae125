"""One connection kept out of its pool and lent to one writer at a time (the group writer's).

A short transaction on it skips the pool's checkout and return and the building of a new
`Connection` — on SQLite about 18 µs a transaction, more than an INSERT costs there. Waiters queue
first come, first served and give up after the pool's wait, as they would on the pool itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.errors import ConnectionBudgetExhausted

from .budget import FairGate


class HeldConnection:
    """The single connection of `engine`'s pool, held between transactions. One the database
    dropped is invalidated by SQLAlchemy when its error is raised, and SQLAlchemy connects it anew
    at the next transaction's first statement."""

    def __init__(self, engine: sa.Engine, *, timeout: float, name: str) -> None:
        self.engine = engine
        self._timeout = timeout
        self._name = name
        self._gate = FairGate(1)
        self._conn: Connection | None = None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction on the held connection: committed when the block ends, rolled back when it
        raises — `Engine.begin()` without the pool."""
        if not self._gate.acquire(self._timeout):
            raise ConnectionBudgetExhausted(1, self._timeout, self._name)
        try:
            if self._conn is None:
                self._conn = self.engine.connect()
            with self._conn.begin():
                yield self._conn
        finally:
            self._gate.release()

    def close(self) -> None:
        """Give the connection back to its pool, before the pool is disposed of (a writer still
        in flight after the wait keeps it: the pool's disposal never closed a connection in use)."""
        if self._gate.acquire(self._timeout):
            try:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
            finally:
                self._gate.release()
