"""The connection budget: one process holds at most N database connections, all pools together.

Each pool gets a fixed share of the budget and never overflows it; a caller waiting for a
connection queues behind earlier callers (first come, first served) and gives up after a bounded
wait with `ConnectionBudgetExhausted`.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from sqlalchemy.pool import ConnectionPoolEntry, QueuePool

from autonumber.defaults import MAX_CONNECTIONS_ENV as ENV
from autonumber.errors import ConfigError, ConnectionBudgetExhausted

DEFAULT_MAX_CONNECTIONS = 10
MIN_CONNECTIONS = 3
"""One connection for each pool: records, reservations and fresh reads."""
DEFAULT_WAIT = 30.0


@dataclass(frozen=True)
class Budget:
    """How a process's connections are shared between its three pools."""

    total: int
    records: int
    reservations: int
    fresh: int
    group: int = 0
    """The group-commit writer's own connection: it holds one while it may wait for a
    reservation connection (a lazy counter row) or for a row lock held by a caller that itself
    waits for one, so it must never take its connection from the reservation pool."""

    @classmethod
    def split(cls, total: int, *, group_commit: bool = False) -> Budget:
        """Give records (caller transactions) the most; reservations are short, fresh reads rare.

        With group commit, one connection of the records' share is the group writer's (none when
        the budget is the minimum: group commit is then off)."""
        if total < MIN_CONNECTIONS:
            raise ConfigError(
                f"max_connections must be at least {MIN_CONNECTIONS} (one per pool), got {total}"
            )
        fresh = max(1, total // 5)
        reservations = max(1, total // 4)
        group = 1 if group_commit and total > MIN_CONNECTIONS else 0
        return cls(total, total - fresh - reservations - group, reservations, fresh, group)


def max_connections_from(value: int | str | None) -> int:
    """The budget: `value` when given, else AUTONUMBER_MAX_CONNECTIONS, else 10."""
    raw: int | str | None = value if value is not None else os.environ.get(ENV) or None
    if raw is None:
        return DEFAULT_MAX_CONNECTIONS
    try:
        total = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{ENV} must be a whole number of connections, got {raw!r}") from None
    if total < MIN_CONNECTIONS:
        raise ConfigError(f"max connections must be at least {MIN_CONNECTIONS} (one per pool), got {total}")
    return total


class FairGate:
    """A counting semaphore that serves waiters strictly in arrival order, with a timeout."""

    def __init__(self, permits: int) -> None:
        self._lock = threading.Lock()
        self._free = permits
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self, timeout: float) -> bool:
        """Take a permit, waiting at most `timeout` seconds behind earlier callers.

        A waiter's turn is a lock it holds and waits to take again; `release` hands it over by
        releasing it. A bare lock, not an Event: an Event's wait builds a Condition and a lock of
        its own on every call, and with more callers than connections most checkouts wait."""
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return True
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        if turn.acquire(timeout=max(timeout, 0.0)):
            return True
        with self._lock:
            if turn.acquire(blocking=False):  # handed a permit just as the wait ran out
                return True
            self._waiters.remove(turn)
            return False

    def release(self) -> None:
        """Hand the permit to the longest waiter, or put it back."""
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


class BudgetPool(QueuePool):
    """A QueuePool that never overflows and hands out its connections first come, first served."""

    budget_name = "database"

    def __init__(self, creator: Any, **kw: Any) -> None:
        kw["max_overflow"] = 0
        super().__init__(creator, **kw)
        self._gate = FairGate(self.size())

    def _do_get(self) -> ConnectionPoolEntry:
        if not self._gate.acquire(self._timeout):
            raise ConnectionBudgetExhausted(self.size(), self._timeout, self.budget_name)
        try:
            return super()._do_get()
        except BaseException:
            self._gate.release()
            raise

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        try:
            super()._do_return_conn(record)
        finally:
            self._gate.release()


def pool_class(name: str) -> type[BudgetPool]:
    """A BudgetPool subclass whose timeout error names the pool (records, reservations, fresh)."""
    return type(f"BudgetPool_{name}", (BudgetPool,), {"budget_name": name})
