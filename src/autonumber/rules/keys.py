"""Moving per_prefix counter rows from token-value keys to rendered-text keys.

Before, a per_prefix key joined the token values with `|` (`SG|CSA|20260417`); two values that
render the same text could then count on two rows. Now the key is the text around the counter
(`SG-CSA-260417-`, see `format.scope.prefix_key`). A row whose key is not a key the format can
produce now, but reads as the old value list, is merged into its new row with GREATEST and deleted,
in one transaction per field. A key in the new form is left alone, so a re-run changes nothing and a
row the engine created meanwhile is raised, never lowered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import Rule
from autonumber.db import dialect_for
from autonumber.db.tables import counter_table
from autonumber.errors import AutonumberError
from autonumber.format.model import Format
from autonumber.format.scope import COUNTER_MARK, DATE_PART, DIGEST_AT, MAX_KEY, prefix_key

_SPLIT = re.compile(r"(?<!\\)((?:\\\\)*)\|")


@dataclass(frozen=True)
class KeyMove:
    """One old row merged into its rendered-text key."""

    old: str
    new: str
    next_value: int


def is_current_key(fmt: Format, key: str) -> bool:
    """Whether `key` is a per_prefix key this format produces (a value with that text exists)."""
    if len(key) == MAX_KEY and key[DIGEST_AT] == "#":
        return True
    zeros = "0" * fmt.counter_width
    pattern = fmt.scan_pattern()
    if not pattern.has_suffix:
        candidates = [key + zeros]
    else:
        candidates = [
            key[:i] + zeros + key[i + len(COUNTER_MARK) :]
            for i in range(len(key))
            if key.startswith(COUNTER_MARK, i)
        ]
    for value in candidates:
        m = pattern.regex.fullmatch(value)
        if m is None:
            continue
        start, end = m.span("counter")
        if prefix_key(value[:start], value[end:] if pattern.has_suffix else None) == key:
            return True
    return False


def _split_old(key: str) -> list[str]:
    parts, start = [], 0
    for m in _SPLIT.finditer(key):
        parts.append(key[start : m.end() - 1])
        start = m.end()
    parts.append(key[start:])
    return [p.replace("\\|", "|").replace("\\\\", "\\") for p in parts]


def _old_date(fmt: Format, text: str) -> datetime | None:
    plan = fmt.key_plan
    widths = [(plan.year, 4), (plan.month, 2), (plan.day, 2)]
    if len(text) != sum(w for shown, w in widths if shown) or not text.isdigit():
        return None
    year, month, day, pos = 2000, 1, 1, 0
    if plan.year:
        year, pos = int(text[:4]), 4
    if plan.month:
        month, pos = int(text[pos : pos + 2]), pos + 2
    if plan.day:
        day = int(text[pos : pos + 2])
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def new_key_of_old(fmt: Format, key: str) -> str | None:
    """The rendered-text key of an old token-value key, or None when `key` is not one."""
    plan = fmt.key_plan
    parts = _split_old(key) if plan.parts else ([] if key == "" else [key])
    if len(parts) != len(plan.parts):
        return None
    cross: dict[str, str] = {}
    at = datetime(2000, 1, 1, tzinfo=UTC)
    for name, value in zip(plan.parts, parts, strict=True):
        if name == DATE_PART:
            day = _old_date(fmt, value)
            if day is None:
                return None
            at = day
        elif not value:
            return None
        else:
            cross[name] = value
    try:
        return fmt.scope_key("per_prefix", at, cross)
    except AutonumberError:
        return None


def plan_moves(fmt: Format, rows: dict[str, int]) -> list[KeyMove]:
    """The old rows of one field and where each goes (rows already in the new form stay)."""
    moves = []
    for key, next_value in sorted(rows.items()):
        if is_current_key(fmt, key):
            continue
        new = new_key_of_old(fmt, key)
        if new is not None and new != key:
            moves.append(KeyMove(key, new, next_value))
    return moves


def migrate_prefix_keys(conn: Connection, rule: Rule) -> list[KeyMove]:
    """Merge the field's old-form rows into rendered-text rows (GREATEST) and delete them.

    Runs in the caller's transaction, so a field is moved completely or not at all.
    """
    if rule.scope != "per_prefix":
        return []
    return migrate_field_keys(conn, rule.field_id, rule.format)


def migrate_field_keys(conn: Connection, field_id: str, fmt: Format) -> list[KeyMove]:
    """migrate_prefix_keys for a per_prefix field known by id and format (a rule being written)."""
    t = counter_table
    rows = {
        k: int(n)
        for k, n in conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == field_id))
    }
    moves = plan_moves(fmt, rows)
    if not moves:
        return []
    dialect = dialect_for(conn)
    now = dialect.utc_now(conn)
    for move in moves:
        dialect.upsert_greatest(
            conn,
            t,
            {"field_id": field_id, "scope_key": move.new},
            "next_value",
            move.next_value,
            {"created_date": now, "last_modified_date": now},
        )
        conn.execute(sa.delete(t).where(t.c.field_id == field_id, t.c.scope_key == move.old))
    return moves
