"""The formats a field has had (`_System_FieldFormatHistory`): old values stay valid after a change.

A stored value is sound when the current format or any earlier one can read it back (verify V1).
Only the current format can collide with future values, so only it feeds the counters; the older
ones are consulted to tell an old value from a corrupt one.

The format history keeps one row per format, so it forgets a scope or time zone changed under the
same format and when a format came back. Each rule change also appends the rule as changed to
`_System_SetupState` (`rule:<field id>|<UTC time>`, never pruned): the gap audit reads a gap in the
format, scope and time zone in force when it was reserved (audit.py).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.schema import has_table
from autonumber.db.tables import field_format_history
from autonumber.errors import AutonumberError
from autonumber.format import parse_format
from autonumber.format.value_patterns import ScanPattern

from . import state

RULE = "rule:"
LOGGED = ("format", "scope", "time_zone", "fiscal_year_start", "shared_counter")
"""What a logged rule keeps: what decides how a value renders, its scope key and its counter."""


def formats_of(conn: Connection, field_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """The recorded formats per field id, oldest first ({} before the table exists)."""
    t = field_format_history
    if not has_table(conn, t.name):
        return {}
    stmt = sa.select(t.c.field_id, t.c.format).order_by(t.c.field_id, t.c.effective_from, t.c.format)
    if field_ids is not None:
        stmt = stmt.where(t.c.field_id.in_(sorted(field_ids)))
    out: dict[str, list[str]] = {}
    for fid, fmt in conn.execute(stmt):
        out.setdefault(fid, []).append(fmt)
    return out


def older_patterns(current: str, formats: Sequence[str]) -> tuple[ScanPattern, ...]:
    """Scan patterns of the formats other than `current` (an unparseable old one is skipped: it can
    vouch for no value)."""
    out = []
    for fmt in dict.fromkeys(formats):
        if fmt == current:
            continue
        try:
            out.append(parse_format(fmt).scan_pattern())
        except AutonumberError:  # a broken historical format vouches for no value
            continue
    return tuple(out)


def older_by_field(conn: Connection, current: Mapping[str, str]) -> dict[str, tuple[ScanPattern, ...]]:
    """For each field id → its current format, the scan patterns of its earlier formats."""
    history = formats_of(conn, current.keys())
    return {fid: older_patterns(fmt, history.get(fid, [])) for fid, fmt in current.items()}


def record(conn: Connection, field_id: str, fmt: str, scope: str, when: datetime | None) -> None:
    """Remember `fmt` as (again) current from `when`; an older entry of the same format moves."""
    t = field_format_history
    key = (t.c.field_id == field_id) & (t.c.format == fmt)
    if conn.execute(sa.update(t).where(key).values(scope=scope, effective_from=when)).rowcount:
        return
    conn.execute(sa.insert(t).values(field_id=field_id, format=fmt, scope=scope, effective_from=when))


def remember_current(conn: Connection, field_id: str, fmt: str, scope: str) -> None:
    """Record the format in force before history was kept (effective_from NULL), once."""
    t = field_format_history
    key = (t.c.field_id == field_id) & (t.c.format == fmt)
    if conn.execute(sa.select(sa.func.count()).select_from(t).where(key)).scalar_one():
        return
    conn.execute(sa.insert(t).values(field_id=field_id, format=fmt, scope=scope, effective_from=None))


def format_rows(conn: Connection) -> dict[str, list[tuple[str, str, datetime | None]]]:
    """(format, scope, effective_from) of every field's history rows, by field id."""
    t = field_format_history
    if not has_table(conn, t.name):
        return {}
    out: dict[str, list[tuple[str, str, datetime | None]]] = {}
    rows = conn.execute(sa.select(t.c.field_id, t.c.format, t.c.scope, t.c.effective_from))
    for fid, fmt, scope, since in rows:
        out.setdefault(fid, []).append((fmt, scope, utc(since)))
    return out


def utc(at: datetime | None) -> datetime | None:
    """An instant as an aware UTC datetime (the backends hand naive UTC back)."""
    if at is None:
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _stamp(at: datetime) -> str:
    """A time as text that sorts as it counts (naive UTC, microseconds)."""
    moment = utc(at)
    assert moment is not None
    return moment.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S.%f")


def _kept(values: Mapping[str, Any]) -> str:
    return json.dumps({k: values.get(f"auto_number_{k}") for k in LOGGED}, sort_keys=True)


def log_rule(
    conn: Connection,
    field_id: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    when: datetime,
) -> None:
    """Append the rule in force from `when` (rule column values); the first time, also the rule
    it replaces, in force since its format's history row says (or since ever). Nothing where setup
    never made `_System_SetupState` (a Django migration before `db init`): the audit then reads the
    format history instead, as for a field changed before the log was kept."""
    if not has_table(conn, state.setup_state.name):
        return
    prefix = f"{RULE}{field_id}|"
    if before is not None and not state.read(conn, prefix):
        fmt = before.get("auto_number_format")
        since = next((s for f, _, s in format_rows(conn).get(field_id, []) if f == fmt), None)
        state.put(conn, prefix + ("" if since is None else _stamp(since)), _kept(before))
    state.put(conn, prefix + _stamp(when), _kept(after))


def rule_log(conn: Connection) -> dict[str, list[tuple[datetime | None, dict[str, Any]]]]:
    """Every field's logged rules, oldest first (None: in force before the log was kept)."""
    out: dict[str, list[tuple[datetime | None, dict[str, Any]]]] = {}
    for name, text in sorted(state.read(conn, RULE).items()):
        fid, _, stamp = name.partition("|")
        try:
            kept = json.loads(text)
            since = utc(datetime.fromisoformat(stamp)) if stamp else None
        except ValueError:  # an entry written by hand: it vouches for nothing
            continue
        out.setdefault(fid, []).append((since, kept))
    return out
