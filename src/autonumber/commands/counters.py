"""`autonumber counter show|set`, the console's counter form and the admin API: the next number of
a field's counters, read and moved through `autonumber.rules.counters`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from autonumber.audit import render_in_scope
from autonumber.catalog.cache import Rule
from autonumber.catalog.stored import StoredRule
from autonumber.db import dialect_for
from autonumber.rules import CounterMove, counter_states, reserved_floor, set_next
from autonumber.runtime import Platform

from . import session
from .next_number import new_key, preview


@dataclass(frozen=True)
class CounterLine:
    """One counter row as shown: next value, the number it prints as (None when that depends on the
    record) and the floor (the lowest next value `counter set` accepts)."""

    scope_key: str
    next_value: int
    next_number: str | None
    floor: int
    preview: str = ""
    """The next number as printed, or the format with the counter filled in and the parts the record
    decides left as their tokens (`{Account.Code}-QT-261205-01`); "" when the field is quarantined."""
    depends_on_record: bool = False
    """True when `preview` names parts the record decides."""


@dataclass(frozen=True)
class CounterReport:
    """What `counter show` prints for one field."""

    field_id: str
    field: str
    scope: str
    counters: list[CounterLine]
    shared_counter: str | None = None
    """The shared counter the field draws from: its rows are the members' one counter."""
    new_key: NewKey | None = None
    """per_day and per_prefix: the next number of a record whose key has no counter row yet."""


@dataclass(frozen=True)
class NewKey:
    """The number a record gets in a scope that has no counter row yet: the key when the clock
    decides it (per_day: today's), else None, and the value and preview it starts at."""

    scope_key: str | None
    next_value: int
    preview: str
    depends_on_record: bool


def counters_on(platform: Platform, field: str) -> CounterReport:
    """The counter rows of a field (by id or `Object.Field`) with their floors, on a running platform."""
    snap = platform.catalog.current()
    row = snap.stored(field)
    rule = snap.rules.get(row.field_id)
    with platform.db.connect() as conn:
        states = counter_states(conn, row.counter_id)
        now = dialect_for(conn).utc_now(conn)
        lines = [_line(rule, s.scope_key, s.next_value, s.floor, now) for s in states]
        fresh = None if rule is None else new_key_line(conn, row, rule, {s.scope_key for s in states}, now)
    name = f"{row.info.object}.{row.info.name}"
    return CounterReport(row.field_id, name, row.scope, lines, row.shared_counter, fresh)


def _line(rule: Rule | None, key: str, value: int, floor: int, now: datetime) -> CounterLine:
    """One counter row with what its next number prints as."""
    if rule is None:
        return CounterLine(key, value, None, floor)
    shown = preview(rule, key, value, now)
    exact = render_in_scope(rule, key, value)
    return CounterLine(key, value, exact, floor, shown.text, shown.depends_on_record)


def new_key_line(
    conn: Connection, row: StoredRule, rule: Rule, keys: set[str], now: datetime
) -> NewKey | None:
    """The start of a scope with no row yet; None for a global field or when today's key has one."""
    if rule.scope == "global":
        return None
    key = new_key(rule, now)
    if key in keys:
        return None
    floor = 0 if key is None else reserved_floor(conn, row.counter_id, key)
    value = max(rule.start, floor)
    shown = preview(rule, key or "", value, now)
    return NewKey(key, value, shown.text, shown.depends_on_record)


def show_counters(url: str, object_name: str, field_name: str) -> CounterReport:
    """counters_on for the CLI: opens the database and closes it again."""
    with session.platform(url) as p:
        return counters_on(p, f"{object_name}.{field_name}")


def set_counter(
    url: str, object_name: str, field_name: str, next_value: int, scope_key: str | None
) -> CounterMove:
    """Set the next value of one counter (rules.counters.set_next) for the CLI."""
    with session.opened(url) as engine:
        return set_next(engine, object_name, field_name, next_value, scope_key)


def set_counter_on(platform: Platform, field: str, next_value: int, scope_key: str | None) -> CounterMove:
    """Set the next value of one counter of a field (by id or `Object.Field`) on a running platform."""
    row = platform.catalog.current().stored(field)
    return set_next(platform.db, row.info.object, row.info.name, next_value, scope_key)
