"""Adding an autonumber field and changing a rule without code (§1.1 goal 3, §7.2 k, §5.6).

Both run on the caller's connection inside its transaction: store the validated rule (through
`rules.store.apply_rules`, which marks the session for the guard trigger), raise the field's counter
rows to cover every value already in its column (never lowering one; a `global` field always gets
its row, so V5 holds at once), then run the binding verify for that field. Existing rows keep NULL.

On MariaDB/MySQL, adding the column is DDL and commits implicitly: the field's metadata row and its
column survive a later failure, and re-running the same command completes the job.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import Rule, load_snapshot
from autonumber.db import dialect_for
from autonumber.db.tables import counter_table, system_field, system_object
from autonumber.errors import AutonumberError, SeedParseError, UnknownField, UnknownObject, VerifyError
from autonumber.format import FieldInfo, MemoryCatalog, ObjectInfo
from autonumber.identifiers import check_api_name
from autonumber.objects.adopt import adopt_column, ensure_unique_index, is_adopted
from autonumber.rules.legacy import LegacyState
from autonumber.rules.scan import scan_rule
from autonumber.rules.seed import plan_rows
from autonumber.rules.store import RuleSpec, apply_rules, metadata_view, rule_values
from autonumber.rules.verify import check
from autonumber.setup.pack import FieldSpec, ObjectSpec, install_objects

DEFAULT_LENGTH = 30


class RuleChangeRefused(AutonumberError):
    """A valid rule the applier refuses because it would break a counter invariant."""

    exit_code = 2


@dataclass(frozen=True)
class StoredRule:
    """The rule columns of one `_System_Field` row (format None: not an autonumber field yet)."""

    field_id: str
    format: str | None
    scope: str
    start: int
    max_length: int | None
    numbering: str = "standard"
    time_zone: str = "UTC"


def stored_rule(conn: Connection, object_name: str, field_name: str) -> StoredRule | None:
    """The field's row by `Object.Field`, or None when the field is not registered."""
    f, o = system_field, system_object
    row = conn.execute(
        sa.select(f.c.Id, f.c.auto_number_format, f.c.auto_number_scope, f.c.auto_number_start, f.c.MaxLength,
                  f.c.auto_number_numbering, f.c.auto_number_time_zone)
        .join(o, o.c.Id == f.c.ObjectId)
        .where(o.c.ApiName == object_name, f.c.ApiName == field_name)
    ).first()
    if row is None:
        return None
    return StoredRule(row[0], row[1], row[2], int(row[3]), row[4], row[5], row[6])


def _table_of(conn: Connection, object_name: str) -> str:
    table = conn.execute(
        sa.select(system_object.c.TableName).where(system_object.c.ApiName == object_name)
    ).scalar_one_or_none()
    if table is None:
        raise UnknownObject(object_name)
    return str(table)


def add_field(conn: Connection, rule: RuleSpec, length: int | None = None) -> tuple[str, list[str]]:
    """Create the column if missing, store the rule, seed its counters; return (field id, changes)."""
    table = _table_of(conn, rule.object)
    existing = stored_rule(conn, rule.object, rule.field)
    if existing is not None and existing.format is not None and not _same_rule(conn, rule, existing):
        raise RuleChangeRefused(f"{rule.name} already has an autonumber rule ({existing.format!r}); change "
                                "it with `autonumber field set` or a set_rule operation")
    if is_adopted(conn, rule.object):  # an application's table: its column must exist, nothing altered
        changes = adopt_column(conn, rule, table)
        fid, more = _store_and_seed(conn, rule)
        return fid, changes + more + ensure_unique_index(conn, table, rule.field)
    width = length or (existing.max_length if existing else None) or rule.length or DEFAULT_LENGTH
    if existing is None:  # validate before the DDL, which MariaDB commits at once
        catalog, _ = metadata_view(conn)
        check_api_name(rule.field, "field name")
        rule_values(rule, _WithField(catalog, FieldInfo(rule.object, rule.field, "autonumber", None, width)))
    column = FieldSpec(rule.field, "autonumber", None, width)
    changes = install_objects(conn, [ObjectSpec(rule.object, (column,), table)])
    fid, more = _store_and_seed(conn, rule)
    return fid, changes + more


class _WithField(MemoryCatalog):
    """A catalog view with one field added (the one about to be created)."""

    def __init__(self, base: MemoryCatalog, extra: FieldInfo) -> None:
        super().__init__([], [])
        self._base = base
        self._extra = extra

    def get_object(self, name: str) -> ObjectInfo | None:
        return self._base.get_object(name)

    def get_field(self, object_name: str, field_name: str) -> FieldInfo | None:
        if (object_name, field_name) == (self._extra.object, self._extra.name):
            return self._extra
        return self._base.get_field(object_name, field_name)

    def fields_of(self, object_name: str) -> Sequence[FieldInfo]:
        extra = [self._extra] if object_name == self._extra.object else []
        return (*self._base.fields_of(object_name), *extra)

    def record_type_columns(self) -> Collection[str]:
        return self._base.record_type_columns()


def change_rule(conn: Connection, rule: RuleSpec) -> tuple[str, list[str]]:
    """Store a new rule for an existing autonumber field (a quarantined one included)."""
    existing = stored_rule(conn, rule.object, rule.field)
    if existing is None or existing.format is None:
        raise UnknownField(rule.name, "field has no autonumber rule (add it with `autonumber field add`)")
    return _store_and_seed(conn, rule)


def _same_rule(conn: Connection, rule: RuleSpec, existing: StoredRule) -> bool:
    catalog, _ = metadata_view(conn)
    wanted = rule_values(rule, catalog)
    return (existing.format, existing.scope, existing.start, existing.numbering, existing.time_zone) == (
        wanted["auto_number_format"], wanted["auto_number_scope"], wanted["auto_number_start"],
        wanted["auto_number_numbering"], wanted["auto_number_time_zone"])


def _store_and_seed(conn: Connection, spec: RuleSpec) -> tuple[str, list[str]]:
    changes = apply_rules(conn, [spec])
    snapshot = load_snapshot(conn)
    fid = snapshot.field_id(spec.name)
    rule = snapshot.rule(fid)
    _check_overflow(conn, rule)
    try:
        scan = scan_rule(conn, rule, snapshot.table(rule.object_name))
    except SeedParseError as exc:
        raise RuleChangeRefused(
            f"{spec.name}: format {spec.format!r} cannot read the stored value {exc.value!r} of row "
            f"{exc.row_id}; every stored value must still parse (verify V1): keep a format that reads "
            "them") from None
    rows, _ = plan_rows(rule, scan.buckets, LegacyState())
    dialect = dialect_for(conn)
    now = dialect.utc_now(conn)
    for row in rows:
        key = {"field_id": fid, "scope_key": row.scope_key}
        stamps = {"created_date": now, "last_modified_date": now}
        dialect.upsert_greatest(conn, counter_table, key, "next_value", row.next_value, stamps)
    changes.append(f"counter(s) of {fid}: {len(rows)} row(s) at or above "
                   f"{', '.join(str(r.next_value) for r in rows[:5]) or '-'} ({scan.rows} live value(s))")
    violations = [v for v in check(conn) if fid in v]
    if violations:
        raise VerifyError(violations)
    return fid, changes


def _check_overflow(conn: Connection, rule: Rule) -> None:
    largest = 10 ** rule.format.counter_width - 1
    t = counter_table
    rows: Any = conn.execute(sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id == rule.field_id))
    for key, next_value in rows:
        if int(next_value) > largest:
            raise RuleChangeRefused(
                f"{rule.name}: counter width {rule.format.counter_width} cannot hold the next value "
                f"{next_value} of scope {key or 'global'!r}; keep at least {len(str(next_value))} digit(s)")
