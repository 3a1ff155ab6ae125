"""The `gapless` numbering policy: the number is taken inside the caller's transaction.

The counter row is incremented on the caller's connection (UPDATE … RETURNING, or
LAST_INSERT_ID(expr) on the MySQL family), so the row stays locked until that transaction ends:
a commit keeps the number, a rollback gives it back, and the next caller gets it. Concurrent
writers of the same counter wait for one another — the cost of having no gaps. On SQLite the
caller already holds the database write lock, so this is what a reservation in its savepoint
does anyway.

A lazy scope's counter row (per_day / per_prefix) is created off the caller's transaction, at the
start value or past the live maximum, exactly as for `standard` fields: creating it consumes no
number, and a row that exists before the lock is taken keeps every waiter on the same row.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import Rule
from autonumber.db.tables import counter_table
from autonumber.errors import GaplessNeedsTransaction, ReservationFailed

from .reservation import MAX_LAZY_CREATES, Reservation, Reserver, _Missing

T = counter_table


def _where(rule: Rule, key: str) -> sa.ColumnElement[bool]:
    return sa.and_(T.c.field_id == rule.counter_id, T.c.scope_key == key)


def _exists(conn: Connection, rule: Rule, key: str) -> bool:
    """Whether the counter row exists, by a plain read (it takes no lock, not even a gap lock)."""
    return conn.execute(sa.select(T.c.next_value).where(_where(rule, key))).first() is not None


def reserve_gapless(
    reserver: Reserver,
    rule: Rule,
    n: int,
    cross: Mapping[str, str],
    conn: Connection | None,
    at: datetime | None = None,
) -> Reservation:
    """Take `n` consecutive values in the caller's transaction on `conn`; the row stays locked."""
    if conn is None:
        raise GaplessNeedsTransaction(rule.field_id)
    dialect = reserver.dialect
    lazy = 0
    while True:
        if rule.scope == "global" and at is None and reserver.hooks.clock is None:
            # the key does not depend on the clock: the sample rides on the UPDATE (one round trip)
            clocked = dialect.atomic_increment_clocked(
                conn, T, _where(rule, ""), "next_value", n, "last_modified_date"
            )
            now, key = (clocked[1], "") if clocked is not None else (dialect.utc_now(conn), "")
            after = None if clocked is None else clocked[0]
        else:
            now = (
                at
                if at is not None
                else (
                    reserver.hooks.clock(conn) if reserver.hooks.clock is not None else dialect.utc_now(conn)
                )
            )
            key = rule.scope_key(now, cross)
            if lazy == 0 and dialect.reservation_conn(conn) is None and not _exists(conn, rule, key):
                # created before the caller's UPDATE looks for it: an UPDATE that finds no row takes a
                # gap lock under REPEATABLE READ (an application's own MariaDB session), which would
                # block the creation below on our own transaction
                lazy = reserver._after_missing(rule, _Missing(now, key), cross, None, lazy)
            after = dialect.atomic_increment(
                conn, T, _where(rule, key), "next_value", n, {"last_modified_date": now}
            )
        if after is not None:
            res = Reservation(now, key, after - n, n)
            if reserver.hooks.reserved is not None:
                reserver.hooks.reserved(res)
            return res
        if lazy >= MAX_LAZY_CREATES:
            raise ReservationFailed(rule.field_id, key, lazy, "the counter row kept disappearing")
        # SQLite: the caller holds the write lock, so the row is created in its savepoint.
        own = dialect.reservation_conn(conn)
        lazy = reserver._after_missing(rule, _Missing(now, key), cross, own, lazy)
