"""The legacy tables (docs/setup.md): read as counter floors, backed up, then dropped.

A backup is `<name>__bak_<YYYYMMDD>` (UTC day of the database clock), a column-for-column copy made
with INSERT … SELECT. A legacy table is dropped only when its backup holds the same number of rows.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db import dialect_for
from autonumber.db.schema import table_names
from autonumber.db.tables import (
    LEGACY_TABLES,
    legacy_autonumber,
    legacy_compound,
    legacy_identifier_rule,
    legacy_identifier_seq,
)
from autonumber.errors import SetupError
from autonumber.identifiers import check_api_name

LEGACY_NAMES = tuple(t.name for t in LEGACY_TABLES)


@dataclass
class LegacyState:
    """Counter state kept by the legacy tables that still exist."""

    present: tuple[str, ...] = ()
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)
    """_System_AutoNumber.CurrentNumber by (ObjectApiName, FieldApiName), the largest if repeated."""
    compound: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """_System_CompoundAutoNumber (Prefix, CurrentNumber) rows by ObjectApiName."""
    identifier: dict[tuple[str, str], int] = field(default_factory=dict)
    """Largest _System_IdentifierSeq.CurrentValue of the rule for (ObjectApiName, FieldApiName)."""
    backups: tuple[str, ...] = ()
    """The backup tables read as well (after the legacy drop)."""
    recorded: dict[str, int] = field(default_factory=dict)
    """Next values a seed recorded for global fields (`_System_SetupState` floor:<field id>)."""

    def compound_max(self, obj: str) -> int | None:
        """The largest compound CurrentNumber of an object (None when it has no rows)."""
        rows = self.compound.get(obj)
        return max(n for _, n in rows) if rows else None


def read_legacy(conn: Connection) -> LegacyState:
    """Read every legacy table that exists (small tables: one query each)."""
    present = table_names(conn)
    state = LegacyState(present=tuple(n for n in LEGACY_NAMES if n in present))
    _read_into(conn, state, {t.name: t for t in LEGACY_TABLES if t.name in present})
    return state


def _read_into(conn: Connection, state: LegacyState, tables: dict[str, sa.Table]) -> None:
    """Merge what one set of legacy-shaped tables says into `state` (the largest value wins)."""
    if (t := tables.get(legacy_autonumber.name)) is not None:
        stmt = sa.select(t.c.ObjectApiName, t.c.FieldApiName, sa.func.max(t.c.CurrentNumber)).group_by(
            t.c.ObjectApiName, t.c.FieldApiName
        )
        for o, f, n in conn.execute(stmt):
            if n is not None:
                state.numbers[(o, f)] = max(state.numbers.get((o, f), int(n)), int(n))
    if (t := tables.get(legacy_compound.name)) is not None:
        compound: dict[str, list[tuple[str, int]]] = defaultdict(list, state.compound)
        for obj, prefix, n in conn.execute(sa.select(t.c.ObjectApiName, t.c.Prefix, t.c.CurrentNumber)):
            if n is not None:
                compound[obj].append((prefix, int(n)))
        state.compound = dict(compound)
    r, s = tables.get(legacy_identifier_rule.name), tables.get(legacy_identifier_seq.name)
    if r is not None and s is not None:
        stmt = (
            sa.select(r.c.ObjectApiName, r.c.FieldApiName, sa.func.max(s.c.CurrentValue))
            .join(s, s.c.RuleId == r.c.Id)
            .group_by(r.c.ObjectApiName, r.c.FieldApiName)
        )
        for o, f, n in conn.execute(stmt):
            if n is not None:
                state.identifier[(o, f)] = max(state.identifier.get((o, f), int(n)), int(n))


_BACKUP = re.compile(r"(?P<name>.+)__bak_(?P<day>[0-9]{8})")


def read_backups(conn: Connection, state: LegacyState | None = None) -> LegacyState:
    """Add the counter floors kept in the backup tables (`<name>__bak_<YYYYMMDD>`, every day
    found) to `state`: after the legacy drop they are what still knows the legacy counters."""
    out = state or LegacyState()
    by_day: dict[str, dict[str, sa.Table]] = defaultdict(dict)
    for table in sorted(table_names(conn)):
        m = _BACKUP.fullmatch(table)
        if m is None or m["name"] not in LEGACY_NAMES:
            continue
        source = next(t for t in LEGACY_TABLES if t.name == m["name"])
        copy = source.to_metadata(sa.MetaData(), name=backup_name(source.name, m["day"]))
        by_day[m["day"]][source.name] = copy
    for day in sorted(by_day):
        _read_into(conn, out, by_day[day])
        out.backups += tuple(t.name for t in by_day[day].values())
    return out


def backup_name(table: str, day: str) -> str:
    """`_System_AutoNumber__bak_20260418`."""
    name = f"{table}__bak_{day}"
    check_api_name(name.lstrip("_"), "backup table name")
    return name


def _count(conn: Connection, table: sa.Table) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _reflect(conn: Connection, name: str) -> sa.Table:
    return sa.Table(name, sa.MetaData(), autoload_with=conn)


def backup_table(conn: Connection, name: str, day: str) -> tuple[str, str]:
    """Copy a legacy table to its backup for `day`; return (backup name, what happened).

    An existing backup with the same row count is kept (re-running on the same day is a no-op); one
    with a different count is rebuilt from the table, which is still the source of truth.
    """
    source = _reflect(conn, name)
    target = backup_name(name, day)
    dialect = dialect_for(conn)
    rows = _count(conn, source)
    if target in table_names(conn):
        if _count(conn, _reflect(conn, target)) == rows:
            return target, f"backup {target} already holds {rows} row(s)"
        dialect.drop_table_if_exists(conn, target)
    columns = (sa.Column(c.name, c.type, nullable=True) for c in source.columns)
    copy = sa.Table(target, sa.MetaData(), *columns)
    copy.create(conn)
    cols = [c.name for c in source.columns]
    conn.execute(sa.insert(copy).from_select(cols, sa.select(*source.columns)))
    copied = _count(conn, copy)
    if copied != rows:
        raise SetupError(f"backup {target} holds {copied} row(s) but {name} holds {rows}; not dropping")
    return target, f"backed up {name} to {target} ({rows} row(s))"


def drop_legacy(conn: Connection, backups: dict[str, str], names: Sequence[str]) -> list[str]:
    """Drop each legacy table whose backup exists with the same row count."""
    present = table_names(conn)
    changes: list[str] = []
    for name in names:
        if name not in present:
            continue
        target = backups.get(name)
        if target is None or target not in present:
            raise SetupError(f"refusing to drop {name}: no backup was made in this run")
        rows, kept = _count(conn, _reflect(conn, name)), _count(conn, _reflect(conn, target))
        if rows != kept:
            raise SetupError(f"refusing to drop {name}: it holds {rows} row(s), its backup {target} {kept}")
        dialect_for(conn).drop_table_if_exists(conn, name)
        changes.append(f"dropped {name} (backup {target}, {rows} row(s))")
    return changes
