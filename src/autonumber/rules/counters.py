"""Setting a field's next number (`autonumber counter show|set`, docs/changing-rules.md).

A counter only ever moves up: the next number may be set to any value at or above the counter's
current next value and the counter floor (one past every value the field ever reserved in that scope:
rules/floor.py), never below, because the counter row is the only record of values reserved before
the reservation journal existed. The set runs under the edit lock every rule change takes, locks the
counter row the reservations take (FOR UPDATE; SQLite's write lock) and moves it with a
compare-and-set, so a reservation racing with it either commits before it (and the set sees its
value) or after it (and starts at the new number): no number is ever handed out twice. The values
skipped are journaled as one `moved` line, which raises the floor and which the gap audit reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.stored import StoredRule
from autonumber.db import dialect_for
from autonumber.db.tables import counter_table, reservation_journal
from autonumber.engine.journal import MAX_JOURNAL_COUNT, MOVED, owner_token
from autonumber.errors import RuleChangeRefused, UnknownField
from autonumber.format import parse_format

from . import floor
from .change import EDIT_LOCK, ensure_history_table
from .fields import EDIT_TIMEOUT
from .store import stored_rule


@dataclass(frozen=True)
class CounterState:
    """One counter row of a field: its next value and its floor, one past the greatest value the
    scope ever reserved (the row itself, the journal, retired rows; for `global` every scope and the
    seed's recorded floor): the lowest next value `counter set` accepts."""

    scope_key: str
    next_value: int
    floor: int


@dataclass(frozen=True)
class CounterMove:
    """What one `counter set` did: the field, the scope key and the next value before and after."""

    field_id: str
    field: str
    scope_key: str
    was: int
    now: int
    shared_counter: str | None = None
    """The shared counter moved (every member's next number moves with it)."""

    @property
    def line(self) -> str:
        """One line for the CLI and the console."""
        key = self.scope_key or "global"
        who = f"{self.field} ({self.field_id}"
        who += f", shared counter {self.shared_counter})" if self.shared_counter else ")"
        if self.was == self.now:
            return f"{who} scope {key}: next value already {self.now}; nothing changed"
        return (
            f"{who} scope {key}: next value {self.was} → {self.now} "
            f"({self.now - self.was} value(s) skipped, journaled)"
        )


def counter_states(conn: Connection, field_id: str) -> list[CounterState]:
    """Every counter row of the field with its floor, by scope key; `field_id` is the counter id
    (StoredRule.counter_id: a shared counter's rows and floors are its members')."""
    t = counter_table
    rows = conn.execute(
        sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == field_id).order_by(t.c.scope_key)
    ).all()
    floors = floor.floors(conn, field_id)
    whole = floor.field_floor(conn, field_id) if any(k == "" for k, _ in rows) else 0
    return [
        CounterState(str(k), int(n), max(int(n), floors.get(str(k), 0), whole if k == "" else 0))
        for k, n in rows
    ]


def reserved_floor(conn: Connection, field_id: str, scope_key: str) -> int:
    """One past the greatest value the scope ever reserved by the journal and retired rows (for the
    global scope: every scope and the seed's recorded floor); the counter row is not included."""
    if scope_key == "":
        return floor.field_floor(conn, field_id)
    return max(
        floor.journal_ends(conn, field_id, scope_key).get(scope_key, 0),
        floor.retired(conn, field_id).get(scope_key, 0),
    )


def _rule_of(conn: Connection, object_name: str, field_name: str) -> StoredRule:
    stored = stored_rule(conn, object_name, field_name)
    if stored is None or stored.format is None:
        raise UnknownField(f"{object_name}.{field_name}", "field has no autonumber rule")
    return stored


def _scope_key(conn: Connection, name: str, stored: StoredRule, scope_key: str | None) -> str:
    """The counter row the set moves: the global row, or the named key of a lazy scope."""
    if scope_key is None:
        if stored.scope == "global":
            return ""
        keys = [s.scope_key for s in counter_states(conn, stored.counter_id)]
        shown = ", ".join(repr(k) for k in keys[:5]) or "none yet"
        raise RuleChangeRefused(
            name, f"scope {stored.scope}: name the counter with --scope-key (one of {shown})"
        )
    if stored.scope == "global" and scope_key != "":
        raise RuleChangeRefused(name, f"scope global has one counter; scope key {scope_key!r} is not it")
    return scope_key


def set_next(
    engine: Engine, object_name: str, field_name: str, next_value: int, scope_key: str | None = None
) -> CounterMove:
    """Set the next value of one counter of the field; RuleChangeRefused (nothing changed) when it
    is below the current next value or the floor, or does not fit the counter's width."""
    with engine.connect() as conn, conn.begin():
        ensure_history_table(conn)
    with dialect_for(engine).named_lock(engine, EDIT_LOCK, EDIT_TIMEOUT), engine.begin() as conn:
        return move_counter(conn, object_name, field_name, next_value, scope_key)


def move_counter(
    conn: Connection,
    object_name: str,
    field_name: str,
    next_value: int,
    scope_key: str | None = None,
    *,
    dry_run: bool = False,
) -> CounterMove:
    """set_next in the caller's transaction, which holds the edit lock (a data-spec's
    `set_next_number`); `dry_run`: every check, nothing written (a spec's plan)."""
    name = f"{object_name}.{field_name}"
    stored = _rule_of(conn, object_name, field_name)
    key = _scope_key(conn, name, stored, scope_key)
    return _move(conn, name, stored, key, next_value, dry_run)


def already_moved(
    conn: Connection, object_name: str, field_name: str, next_value: int, scope_key: str | None
) -> bool:
    """Whether a `counter set` to `next_value` of that counter is journaled (a spec run again)."""
    stored = _rule_of(conn, object_name, field_name)
    j = reservation_journal
    stmt = sa.select(j.c.detail).where(
        j.c.field_id == stored.counter_id, j.c.scope_key == (scope_key or ""), j.c.state == MOVED
    )
    return any(str(d or "").endswith(f" to {next_value}") for d in conn.execute(stmt).scalars())


def _move(
    conn: Connection, name: str, stored: StoredRule, key: str, next_value: int, dry_run: bool = False
) -> CounterMove:
    """Lock the row as a reservation does, check, move it (compare-and-set) and journal the skip."""
    t = counter_table
    fid, cid = stored.field_id, stored.counter_id  # a member of a shared counter moves that counter
    where = sa.and_(t.c.field_id == cid, t.c.scope_key == key)
    dialect = dialect_for(conn)
    current = conn.execute(dialect.for_update(sa.select(t.c.next_value).where(where))).scalar()
    if current is None:
        raise RuleChangeRefused(
            name, f"no counter row for scope key {key!r} (a lazy scope's row exists once used)"
        )
    was = int(current)
    lowest = max(was, reserved_floor(conn, cid, key))
    if next_value < lowest:
        raise RuleChangeRefused(
            name,
            f"next value {next_value} is not above every number scope {key or 'global'!r} ever "
            f"reserved; the lowest allowed is {lowest} (a counter never moves down)",
        )
    width = parse_format(stored.format or "").counter_width
    if next_value > 10**width - 1:
        raise RuleChangeRefused(
            name, f"next value {next_value} does not fit the counter width {width} (largest {10**width - 1})"
        )
    if next_value == was or dry_run:
        return CounterMove(fid, name, key, was, next_value if dry_run else was, stored.shared_counter)
    now = dialect.utc_now(conn)
    moved = conn.execute(
        sa.update(t).where(where, t.c.next_value == was).values(next_value=next_value, last_modified_date=now)
    ).rowcount
    if moved != 1:  # the row is locked: only a bug gets here; nothing is committed
        raise RuleChangeRefused(name, "the counter moved while it was being set; try again")
    conn.execute(
        sa.insert(reservation_journal).values(
            field_id=cid,
            scope_key=key,
            first_value=was,
            count=min(next_value - was, MAX_JOURNAL_COUNT),
            state=MOVED,
            owner=owner_token(),
            logged_at=now,
            detail=f"counter set from {was} to {next_value}",
        )
    )
    return CounterMove(fid, name, key, was, next_value, stored.shared_counter)
