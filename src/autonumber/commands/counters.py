"""`autonumber counter show|set`, the console's counter form and the admin API: the next number of
a field's counters, read and moved through `autonumber.rules.counters`."""

from __future__ import annotations

from dataclasses import dataclass

from autonumber.audit import render_in_scope
from autonumber.rules import CounterMove, counter_states, set_next
from autonumber.runtime import Platform

from . import session


@dataclass(frozen=True)
class CounterLine:
    """One counter row as shown: next value, the number it prints as (None when that depends on the
    record) and the floor (the lowest next value `counter set` accepts)."""

    scope_key: str
    next_value: int
    next_number: str | None
    floor: int


@dataclass(frozen=True)
class CounterReport:
    """What `counter show` prints for one field."""

    field_id: str
    field: str
    scope: str
    counters: list[CounterLine]
    shared_counter: str | None = None
    """The shared counter the field draws from: its rows are the members' one counter."""


def counters_on(platform: Platform, field: str) -> CounterReport:
    """The counter rows of a field (by id or `Object.Field`) with their floors, on a running platform."""
    snap = platform.catalog.current()
    row = snap.stored(field)
    rule = snap.rules.get(row.field_id)
    with platform.db.connect() as conn:
        states = counter_states(conn, row.counter_id)
    lines = [
        CounterLine(
            s.scope_key,
            s.next_value,
            None if rule is None else render_in_scope(rule, s.scope_key, s.next_value),
            s.floor,
        )
        for s in states
    ]
    name = f"{row.info.object}.{row.info.name}"
    return CounterReport(row.field_id, name, row.scope, lines, row.shared_counter)


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
