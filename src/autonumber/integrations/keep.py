"""Saving objects with the numbers they already have (legacy data moved in through the ORM).

Both ORM adapters refuse a number supplied on a new object, except inside `keep_numbers()`:
there each supplied number is checked against the field's format, refused when a row already
holds it (or another object of the same save does), and its counter is moved past it before
the row is written, so the next number handed out follows the kept ones instead of colliding
with them. Objects saved without a number inside the block are numbered as usual.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.db.fence import declare
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.engine.journal import MAX_DETAIL, MAX_JOURNAL_COUNT, SKIPPED
from autonumber.engine.livemax import stored_max
from autonumber.engine.reservation import Reserver
from autonumber.errors import AutonumberError
from autonumber.runtime import Platform

_keeping: ContextVar[bool] = ContextVar("autonumber_keep_numbers", default=False)


class NumberRefused(AutonumberError):
    """A number kept from elsewhere does not fit the field's format or is already taken."""

    exit_code = 2


@contextmanager
def keep_numbers() -> Iterator[None]:
    """Inside the block, new objects that carry a number are saved with it (checked, counter moved)."""
    token = _keeping.set(True)
    try:
        yield
    finally:
        _keeping.reset(token)


def keeping() -> bool:
    """Whether the calling context is inside `keep_numbers()`."""
    return _keeping.get()


def keep(
    platform: Platform,
    field_id: str,
    values: Sequence[str],
    reader: Connection | None,
    on: Connection | None,
) -> None:
    """Check `values` for the field and move their counters past them; NumberRefused, nothing
    moved, when one does not match the format or is taken. `reader` sees the rows the caller
    has written (its own transaction; None: the rows are written already, as `loaddata` does);
    `on`: the connection that moves the counters (None: the platform's own, committed at once,
    as a reservation is)."""
    rule = platform.engine.rule(field_id)
    pattern = rule.format.scan_pattern()
    keys: dict[str, tuple[int, str]] = {}
    seen: set[str] = set()
    for value in values:
        match = pattern.match(value)
        if match is None:
            raise NumberRefused(
                f"{rule.field_id}: {value!r} does not match the format {rule.format.source!r}"
            )
        if value in seen:
            raise NumberRefused(f"{rule.field_id}: {value!r} is given to two objects")
        seen.add(value)
        key = match.scope_key(rule.scope)
        if match.counter >= keys.get(key, (0, ""))[0]:
            keys[key] = (match.counter, value)
    if reader is not None:
        _check_free(platform, rule, sorted(seen), reader)
    for key, (counter, value) in sorted(keys.items()):
        _move_past(platform, rule, key, counter, value, on)


def _check_free(platform: Platform, rule: Rule, ordered: list[str], reader: Connection) -> None:
    """NumberRefused naming the first of `ordered` a row of the field's table already holds."""
    column = platform.catalog.current().table(rule.object_name).c[rule.field_name]
    for i in range(0, len(ordered), 500):
        taken = reader.execute(sa.select(column).where(column.in_(ordered[i : i + 500]))).scalars().first()
        if taken is not None:
            raise NumberRefused(f"{rule.field_id}: {taken!r} is already taken by another row")


def _move_past(
    platform: Platform, rule: Rule, key: str, counter: int, value: str, on: Connection | None
) -> None:
    """Move the counter of (rule, key) to `counter + 1` unless it is already there, and journal
    the jump as skipped ("kept: value"). A lazy scope without a counter row yet gets one, above
    the kept value and every committed one, as its first reservation would create it."""
    reserver = platform.engine.reserver
    t = counter_table
    where = sa.and_(t.c.field_id == rule.counter_id, t.c.scope_key == key)
    with reserver.transaction(on) as c:
        declare(c)  # a Django or caller connection from another pool: the writer fence's declaration
        current = c.execute(reserver.dialect.for_update(sa.select(t.c.next_value).where(where))).scalar()
        if current is None and rule.scope != "global":
            _create_above(reserver, platform.catalog.current(), c, rule, key, counter)
            return
        if current is None or int(current) > counter:
            return
        was, now = int(current), counter + 1
        at = reserver.dialect.utc_now(c)
        c.execute(sa.update(t).where(where).values(next_value=now, last_modified_date=at))
        c.execute(
            sa.insert(reservation_journal).values(
                field_id=rule.counter_id,
                scope_key=key,
                first_value=was,
                count=min(now - was, MAX_JOURNAL_COUNT),
                state=SKIPPED,
                owner=reserver.journal.owner,
                logged_at=at,
                detail=f"kept: {value}"[:MAX_DETAIL],
                caller=reserver.journal.caller,
            )
        )


def _create_above(
    reserver: Reserver, snapshot: CatalogSnapshot, c: Connection, rule: Rule, key: str, counter: int
) -> None:
    """Create a lazy scope's counter row above `counter` (kept, maybe not yet committed) and above
    the values the scope already stores (read as a reservation creating the row reads them)."""
    at = reserver.dialect.utc_now(c)
    start = max(rule.start, counter + 1, stored_max(c, snapshot, rule, key) + 1)
    reserver.check_counter_of(c, rule, key)
    reserver.dialect.upsert_greatest(
        c,
        counter_table,
        {"field_id": rule.counter_id, "scope_key": key},
        "next_value",
        start,
        {"created_date": at, "last_modified_date": at},
    )
