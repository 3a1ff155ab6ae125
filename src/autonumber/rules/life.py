"""The end of a field's rule and its column's name: `field remove` and `field rename`
(docs/changing-rules.md), one transaction each under the edit lock every door takes.

Remove: the rule goes, the stored values stay (the column, its values and its UNIQUE index). The
field's counter rows are kept as floors (rules/floor.py) under its id, with everything its counter
ever reserved, so adding the field back continues above every value ever issued, under any scope.
`setup apply` does not put back a rule removed on purpose (state.REMOVED).

Rename: a custom object's column is renamed; an adopted table is never altered, so the field
follows a column the application renamed itself. The field keeps its id (its counters, history and
floors stay its own); a field a format of another rule refers to is refused.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.stored import StoredRule
from autonumber.db import dialect_for
from autonumber.db.guard import authorized
from autonumber.db.tables import counter_table, system_field, system_object
from autonumber.errors import RuleChangeRefused, UnknownField
from autonumber.identifiers import check_api_name

from . import floor, state
from .change import EDIT_LOCK, FieldChange, ensure_history_table
from .store import read_stored

TIMEOUT = 30.0
CLEARED = {
    "auto_number_format": None,
    "auto_number_token_refs": None,
    "auto_number_date_field": None,
    "auto_number_shared_counter": None,
}
"""The rule columns a removal clears (the others are NOT NULL and mean nothing without a format)."""


def remove_field(engine: Engine, object_name: str, field_name: str) -> FieldChange:
    """Remove the field's rule; its values stay and are never issued again (see the module)."""
    with engine.begin() as conn:
        ensure_history_table(conn)
    with dialect_for(engine).named_lock(engine, EDIT_LOCK, TIMEOUT), engine.begin() as conn:
        return _remove(conn, _rule_of(conn, object_name, field_name))


def rename_field(engine: Engine, object_name: str, field_name: str, new_name: str) -> FieldChange:
    """Rename the field (custom object: its column too; adopted table: follow the application's).

    Where DDL commits at once (MariaDB/MySQL), a failure after the column was renamed renames it
    back, so the database ends as it was."""
    check_api_name(new_name, "field name")
    with dialect_for(engine).named_lock(engine, EDIT_LOCK, TIMEOUT), engine.begin() as conn:
        stored = _rule_of(conn, object_name, field_name)
        table, adopted = _table_of(conn, object_name)
        _check_rename(conn, stored, table, adopted, new_name)
        if not adopted:
            _rename_column(conn, table, field_name, new_name)

        def undo() -> None:
            if not adopted:
                _rename_column(conn, table, new_name, field_name)

        with dialect_for(conn).undoing_ddl(undo, f"the rename of column {table}.{field_name}"):
            f = system_field
            with authorized(conn):
                conn.execute(sa.update(f).where(f.c.Id == stored.field_id).values(ApiName=new_name))
                conn.execute(
                    sa.update(f)
                    .where(f.c.Id == stored.field_id, f.c.Label == field_name)
                    .values(Label=new_name)
                )
    what = (
        f"column {table}.{field_name} renamed"
        if not adopted
        else f"follows the application's column {table}.{new_name}"
    )
    return FieldChange(
        stored.field_id, [f"{stored.name} → {object_name}.{new_name} ({what}); id {stored.field_id} kept"]
    )


def _rule_of(conn: Connection, object_name: str, field_name: str) -> StoredRule:
    found = read_stored(
        conn, sa.and_(system_object.c.ApiName == object_name, system_field.c.ApiName == field_name)
    )
    stored = found.get(f"{object_name}.{field_name}")
    if stored is None or stored.format is None:
        raise UnknownField(f"{object_name}.{field_name}", "field has no autonumber rule")
    return stored


def _table_of(conn: Connection, object_name: str) -> tuple[str, bool]:
    o = system_object
    row = conn.execute(sa.select(o.c.TableName, o.c.KeyColumn).where(o.c.ApiName == object_name)).one()
    return str(row.TableName), row.KeyColumn is not None


def _remove(conn: Connection, stored: StoredRule) -> FieldChange:
    dialect = dialect_for(conn)
    fid, cid = stored.field_id, stored.counter_id
    f, t = system_field, counter_table
    conn.execute(dialect.for_update(sa.select(f.c.Id).where(f.c.Id == fid)))
    rows = {
        str(key): int(nxt)
        for key, nxt in conn.execute(
            dialect.for_update(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == cid))
        )
    }
    reached = dict(rows)
    for key, value in floor.floors(conn, cid).items():
        reached[key] = max(reached.get(key, 0), value)
    floor.remember_retired(conn, fid, reached)  # the field's own floors: re-added, it starts above
    others = [r for r in read_stored(conn).values() if r.format and r.counter_id == cid and r.field_id != fid]
    lines = [f"rule {stored.name} removed ({stored.format!r}); its stored values stay"]
    if rows and not others:
        floor.remember_retired(conn, cid, rows)
        conn.execute(sa.delete(t).where(t.c.field_id == cid))
        lines.append(f"retired {len(rows)} counter row(s) of {cid}, kept as floors")
    values: dict[str, object] = dict(CLEARED)
    if stored.info.type.lower() == "autonumber":
        values["Type"] = "text"  # an ordinary text field now, its values as they are
    with authorized(conn):
        conn.execute(sa.update(f).where(f.c.Id == fid).values(**values))
    state.put(conn, f"{state.REMOVED}{fid}", "1")
    return FieldChange(fid, lines)


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def _check_rename(conn: Connection, stored: StoredRule, table: str, adopted: bool, new_name: str) -> None:
    name, old = stored.name, stored.info.name
    everyone = read_stored(conn)
    if f"{stored.info.object}.{new_name}" in everyone:
        raise RuleChangeRefused(name, f"rename to {new_name}: the object already has a field {new_name}")
    uses = re.compile(_WORD.format(re.escape(old)))
    for other in everyone.values():
        if other.field_id == stored.field_id or other.format is None:
            continue
        text = " ".join(str(v) for v in (other.format, other.token_refs, other.date_field) if v)
        if uses.search(text):
            raise RuleChangeRefused(
                name,
                f"rename to {new_name}: the rule of {other.name} refers to {old}; change that rule first",
            )
    columns = {c["name"] for c in sa.inspect(conn).get_columns(table)}
    if not adopted:
        if new_name in columns:
            raise RuleChangeRefused(
                name, f"rename to {new_name}: table {table} already has a column {new_name}"
            )
        return
    if old in columns or new_name not in columns:
        raise RuleChangeRefused(
            name,
            f"rename to {new_name}: {table} is the application's own table and autonumber never alters "
            f"it; rename {table}.{old} to {new_name} in the application's schema first, then run this again",
        )


def _rename_column(conn: Connection, table: str, old: str, new: str) -> None:
    """ALTER TABLE … RENAME COLUMN (names validated; Core has no construct for it)."""
    check_api_name(table.lstrip("_"), "table name")
    check_api_name(old, "field name")
    check_api_name(new, "field name")
    quote = dialect_for(conn).quote
    conn.execute(
        sa.text(f"ALTER TABLE {quote(conn, table)} RENAME COLUMN {quote(conn, old)} TO {quote(conn, new)}")
    )
