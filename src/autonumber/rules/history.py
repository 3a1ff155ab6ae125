"""The formats a field has had (`_System_FieldFormatHistory`): old values stay valid after a change.

A stored value is sound when the current format or any earlier one can read it back (verify V1).
Only the current format can collide with future values, so only it feeds the counters; the older
ones are consulted to tell an old value from a corrupt one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.schema import has_table
from autonumber.db.tables import field_format_history
from autonumber.errors import AutonumberError
from autonumber.format import parse_format
from autonumber.format.value_patterns import ScanPattern


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
