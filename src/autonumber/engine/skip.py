"""A number already stored costs one skip, never a jam (docs/engine.md, "Values stored behind the
counter's back").

A row written outside the product — a restore, an import script, a replica catching up — may hold
the very number a counter hands out next. The INSERT that carries it then fails on the column's
UNIQUE index. The writer calls `skip_stored`: it finds which of its numbers are stored, moves each
such counter past the largest value stored in its scope (over every member of a shared counter),
journals the values it jumped as `skipped` ("already stored"), and the writer tries again with new
numbers. The fast path pays nothing for this: it runs only after a duplicate-key error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.db.tables import counter_table, reservation_journal

from .journal import MAX_DETAIL, MAX_JOURNAL_COUNT, SKIPPED
from .livemax import stored_max
from .reservation import Reserver

IN_CHUNK = 500
"""Values per `IN (…)` when looking for the numbers already stored."""


@dataclass(frozen=True)
class Skip:
    """One counter moved past stored values: `was` → `now`, because `value` was stored."""

    rule: Rule
    scope_key: str
    value: str
    was: int
    now: int


def skip_stored(
    reserver: Reserver,
    snapshot: CatalogSnapshot,
    object_name: str,
    records: Sequence[Mapping[str, Any]],
    reader: Connection | None,
    on: Connection | None = None,
) -> tuple[list[tuple[Rule, str, str]], list[Skip]]:
    """After a duplicate-key error writing `records`: (rule, value, scope key) of each number of
    theirs already stored (read on `reader`, or a fresh connection), and every counter moved past
    what its scope stores. Nothing found and nothing moved means the duplicate was not a number of
    ours (the caller re-raises).
    `on`: the connection that must move the counters (SQLite's caller holding the write lock)."""
    with reserver.db.connect() if reader is None else nullcontext(reader) as conn:
        taken = list(_taken(conn, snapshot, object_name, records))
    keys = {(rule.field_id, key): (rule, value) for rule, value, key in taken}
    for rule in snapshot.rules_of(object_name):
        # a number built by the INSERT itself (a global rule) is not on the record: check its counter
        if rule.scope == "global" and any(r.get(rule.field_name) is None for r in records):
            keys.setdefault((rule.field_id, ""), (rule, ""))
    moved = [
        skip
        for rule, value in keys.values()
        if (skip := _skip_past(reserver, snapshot, rule, _key_of(rule, value), value, on)) is not None
    ]
    return taken, moved


def _key_of(rule: Rule, value: str) -> str:
    match = rule.format.scan_pattern().match(value) if value else None
    return "" if match is None else match.scope_key(rule.scope)


def _taken(
    conn: Connection, snapshot: CatalogSnapshot, object_name: str, records: Sequence[Mapping[str, Any]]
) -> Iterable[tuple[Rule, str, str]]:
    """(rule, value, scope key) for each number of `records` already stored in its column."""
    table = snapshot.table(object_name)
    for rule in snapshot.rules_of(object_name):
        column = table.c[rule.field_name]
        values = sorted({str(v) for r in records if (v := r.get(rule.field_name)) is not None})
        for i in range(0, len(values), IN_CHUNK):
            stmt = sa.select(column).where(column.in_(values[i : i + IN_CHUNK]))
            for (value,) in conn.execute(stmt):
                yield rule, str(value), _key_of(rule, str(value))


def _skip_past(
    reserver: Reserver, snapshot: CatalogSnapshot, rule: Rule, key: str, value: str, on: Connection | None
) -> Skip | None:
    """Move the counter of (rule, key) to one past the largest value its scope stores, under the
    row lock a reservation takes, and journal the jump; None when it is already past them."""
    t = counter_table
    where = sa.and_(t.c.field_id == rule.counter_id, t.c.scope_key == key)
    with reserver.transaction(on) as c:
        current = c.execute(reserver.dialect.for_update(sa.select(t.c.next_value).where(where))).scalar()
        if current is None:
            return None  # a lazy scope's row is created above the stored values when first used
        was = int(current)
        now = stored_max(c, snapshot, rule, key) + 1
        if now <= was:
            return None
        at = reserver.dialect.utc_now(c)
        c.execute(sa.update(t).where(where).values(next_value=now, last_modified_date=at))
        detail = f"already stored: {value}" if value else f"already stored: values up to {now - 1}"
        c.execute(
            sa.insert(reservation_journal).values(
                field_id=rule.counter_id,
                scope_key=key,
                first_value=was,
                count=min(now - was, MAX_JOURNAL_COUNT),
                state=SKIPPED,
                owner=reserver.journal.owner,
                logged_at=at,
                detail=detail[:MAX_DETAIL],
                caller=reserver.journal.caller,
            )
        )
    return Skip(rule, key, value, was, now)
