"""The metadata cache: objects, fields, record types and parsed autonumber rules.

A snapshot is immutable; `Catalog.current()` re-reads `_System_Field` when the rule columns changed
(checked at most every `poll_interval` seconds) and quarantines a rule that no longer validates
(docs/changing-rules.md) instead of assigning numbers from it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from functools import cached_property
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog import shared
from autonumber.catalog.allocation import SINGLE, block_size, check_allocation
from autonumber.catalog.shared import CounterKeyed, check_name
from autonumber.catalog.stored import StoredRule
from autonumber.db.objects import shared_object_table
from autonumber.db.replies import UNAVAILABLE
from autonumber.db.tables import system_field, system_object, system_record_type
from autonumber.db.unique import Target, index_name, missing_unique_indexes
from autonumber.errors import (
    AutonumberError,
    DatabaseUnavailable,
    RuleQuarantined,
    SchemaDamage,
    UnknownField,
    UnknownObject,
    unique_index_missing,
)
from autonumber.format import (
    FieldInfo,
    Format,
    ObjectInfo,
    TokenRef,
    canonicalize_token_refs,
    parse_format,
    validate_format,
)
from autonumber.format.tokens import DATE_SOURCES, FISCAL_MONTHS, NUMBERING, ON_CHANGE
from autonumber.format.validate import validate_date_source
from autonumber.format.zones import zone_of
from autonumber.identifiers import check_api_name

RECORD_TYPE = "RecordType"
RECORD_TYPE_TABLE = system_record_type.name


@dataclass(frozen=True)
class Rule(CounterKeyed):
    """One autonumber field's configuration, parsed and validated."""

    field_id: str
    object_name: str
    field_name: str
    format: Format
    start: int
    scope: str
    token_refs: tuple[TokenRef, ...]
    numbering: str = "standard"
    time_zone: str = "UTC"
    allocation: str = SINGLE
    fiscal_year_start: int = 1
    date_field: str | None = None
    """The record's own date/datetime field that dates its numbers (None: the database clock)."""
    shared_counter: str | None = None
    """The shared counter it draws from (None: its own counter; autonumber/catalog/shared.py)."""
    pinned_date: datetime | None = None
    """A record's date this copy of the rule keys and renders with instead of the clock
    (`pinned`); set only on the per-reservation copies the engine makes."""
    date_src: str = "assigned_at"
    """`assigned_at` (the clock), `created_date` (the record's CreatedDate: at insert the same clock
    sample; a backfill reads each row's own) or `custom_field` (`date_field`)."""

    @property
    def name(self) -> str:
        """`Object.Field`."""
        return f"{self.object_name}.{self.field_name}"

    def pinned(self, at: datetime) -> Rule:
        """This rule dated by a record's own date `at` instead of the reservation's clock sample."""
        return replace(self, pinned_date=at)

    def date_of(self, clock: datetime) -> datetime:
        """The instant the numbers show and count by: the pinned record date, else the clock."""
        return clock if self.pinned_date is None else self.pinned_date

    @property
    def gapless(self) -> bool:
        """Numbers are taken in the caller's transaction, so a rollback gives them back."""
        return self.numbering == "gapless"

    @cached_property
    def block_size(self) -> int:
        """How many numbers one reservation takes (1: none handed out from a process-local block)."""
        return block_size(self.allocation)

    @cached_property
    def zone(self) -> tzinfo:
        """The zone whose calendar dates this field's numbers (UTC unless the rule says otherwise)."""
        return zone_of(self.time_zone)

    def scope_key(self, at: datetime, cross: Mapping[str, str] | None = None) -> str:
        """The counter scope key for a clock sample, on this field's calendar."""
        return self.format.scope_key(
            self.scope, self.date_of(at), cross, zone=self.zone, fiscal_year_start=self.fiscal_year_start
        )

    def render(
        self, counter: int, at: datetime, cross: Mapping[str, str] | None = None, scope_key: str = ""
    ) -> str:
        """One value of this field: the format on the field's calendar (zone, fiscal year)."""
        return self.format.render(
            counter,
            self.date_of(at),
            cross,
            field_id=self.field_id,
            scope_key=scope_key,
            zone=self.zone,
            fiscal_year_start=self.fiscal_year_start,
        )


@dataclass
class CatalogSnapshot:
    """One consistent read of the metadata; implements the grammar's CatalogView."""

    objects: dict[str, ObjectInfo]
    fields: dict[str, list[StoredRule]]
    record_type_cols: tuple[str, ...]
    rules: dict[str, Rule]
    quarantined: dict[str, str]
    version: str
    adopted: set[str] = field(default_factory=set)
    _field_index: dict[str, str] = field(default_factory=dict)
    _tables: dict[str, sa.Table] = field(default_factory=dict)
    _rules_of: dict[str, tuple[Rule, ...]] = field(default_factory=dict)
    _autonumber_fields: dict[str, frozenset[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for rows in self.fields.values():
            for row in rows:
                self._field_index[row.field_id] = row.field_id
                self._field_index.setdefault(row.name, row.field_id)

    def get_object(self, name: str) -> ObjectInfo | None:
        if name == RECORD_TYPE:
            return ObjectInfo(RECORD_TYPE, RECORD_TYPE_TABLE)
        return self.objects.get(name)

    def get_field(self, object_name: str, field_name: str) -> FieldInfo | None:
        if object_name == RECORD_TYPE:
            if field_name in self.record_type_cols:
                column = system_record_type.c.get(field_name)
                length = getattr(column.type, "length", None) if column is not None else None
                return FieldInfo(RECORD_TYPE, field_name, "text", None, length or 255)
            return None
        for row in self.fields.get(object_name, ()):
            if row.info.name == field_name:
                return row.info
        return None

    def fields_of(self, object_name: str) -> Sequence[FieldInfo]:
        return [row.info for row in self.fields.get(object_name, ())]

    def record_type_columns(self) -> Collection[str]:
        return self.record_type_cols

    def require_object(self, name: str) -> ObjectInfo:
        """The object, or UnknownObject."""
        info = self.objects.get(name)
        if info is None:
            raise UnknownObject(name)
        return info

    def table(self, object_name: str) -> sa.Table:
        """The Core table of an object (RecordType maps to `_System_RecordType`)."""
        if object_name == RECORD_TYPE:
            return system_record_type
        with self._lock:
            cached = self._tables.get(object_name)
            if cached is None and object_name in self.adopted:
                raise AutonumberError(f"object {object_name}: its adopted table is missing from the database")
            if cached is None:
                info = self.require_object(object_name)
                cached = shared_object_table(info.table, tuple(self.fields_of(object_name)))
                self._tables[object_name] = cached
            return cached

    def is_adopted(self, object_name: str) -> bool:
        """True for an adopted application table (its own key, no platform `Id`/`CreatedDate`)."""
        return object_name in self.adopted

    def rules_of(self, object_name: str) -> list[Rule]:
        """The autonumber rules of an object, quarantined ones included (they fail on use)."""
        found = self._rules_of.get(object_name)
        if found is None:  # read on every insert: worked out once per snapshot
            found = self._rules_of[object_name] = tuple(
                r for r in self.rules.values() if r.object_name == object_name
            )
        return list(found)

    def autonumber_fields(self, object_name: str) -> list[str]:
        """Field names that hold autonumbers (configured or quarantined)."""
        return sorted(self.autonumber_field_set(object_name))

    def autonumber_field_set(self, object_name: str) -> frozenset[str]:
        """autonumber_fields as a set, worked out once per snapshot (every insert checks it)."""
        found = self._autonumber_fields.get(object_name)
        if found is None:
            names = {r.field_name for r in self.rules_of(object_name)}
            for row in self.fields.get(object_name, ()):
                if row.format is not None or row.info.type.lower() == "autonumber":
                    names.add(row.info.name)
            found = self._autonumber_fields[object_name] = frozenset(names)
        return found

    def field_id(self, field: str) -> str:
        """Resolve a field given as `_System_Field.Id` or `Object.Field` to its Id."""
        found = self._field_index.get(field)
        if found is None:
            raise UnknownField(field)
        return found

    def rule(self, field: str) -> Rule:
        """The usable rule of a field; RuleQuarantined or UnknownField otherwise."""
        field_id = self.field_id(field)
        if field_id in self.quarantined:
            raise RuleQuarantined(field_id, self.quarantined[field_id])
        rule = self.rules.get(field_id)
        if rule is None:
            raise UnknownField(field, "field has no autonumber rule")
        return rule

    def stored(self, field: str, *, autonumber: bool = True) -> StoredRule:
        """The stored row of a field (by id or `Object.Field`), quarantined or not; UnknownField.

        `autonumber`: only a field with a rule will do ("field has no autonumber rule" otherwise).
        """
        field_id = self.field_id(field)
        for rows in self.fields.values():
            for row in rows:
                if row.field_id == field_id and (row.format is not None or not autonumber):
                    return row
        raise UnknownField(field, "field has no autonumber rule")


def _read_rows(conn: Connection) -> tuple[dict[str, ObjectInfo], dict[str, list[StoredRule]]]:
    ids: dict[str, str] = {}
    objects: dict[str, ObjectInfo] = {}
    for row in conn.execute(sa.select(system_object).order_by(system_object.c.ApiName)):
        objects[row.ApiName] = ObjectInfo(row.ApiName, row.TableName)
        ids[row.Id] = row.ApiName
    fields: dict[str, list[StoredRule]] = {name: [] for name in objects}
    stmt = sa.select(system_field).order_by(system_field.c.ObjectId, system_field.c.ApiName)
    for row in conn.execute(stmt):
        obj = ids.get(row.ObjectId)
        if obj is None:
            continue
        fields[obj].append(StoredRule.from_row(obj, row._mapping))
    return objects, fields


def version_of(objects: Mapping[str, ObjectInfo], fields: Mapping[str, list[StoredRule]]) -> str:
    """A digest of the objects and fields a rule depends on; a change triggers re-validation."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(sorted(objects.items())).encode())
    for obj in sorted(fields):
        for row in fields[obj]:
            digest.update(repr(row.columns).encode())
    return digest.hexdigest()


def build_rule(row: StoredRule, snapshot: CatalogSnapshot) -> Rule:
    """Parse and validate one stored rule; raise a FormatError/AutonumberError when it is broken."""
    assert row.format is not None
    fmt = parse_format(row.format)
    _check_policy(row)
    stored = canonicalize_token_refs(row.token_refs) if row.token_refs else "[]"
    if row.token_refs and stored != row.token_refs:
        raise ValueError("stored auto_number_token_refs is not canonical JSON")
    overrides = _overrides(row.token_refs)
    refs = validate_format(
        fmt,
        source_object=row.info.object,
        catalog=snapshot,
        target_field=row.info.name,
        scope=row.scope,
        overrides=overrides,
    )
    if row.token_refs and canonicalize_token_refs(refs) != stored:
        raise ValueError("stored auto_number_token_refs differ from the refs derived from the format")
    zone_of(row.time_zone)
    validate_date_source(fmt, row.info.object, row.date_src, row.date_field, snapshot)
    return Rule(
        row.field_id,
        row.info.object,
        row.info.name,
        fmt,
        row.start,
        row.scope,
        tuple(refs),
        row.numbering,
        row.time_zone,
        row.allocation,
        row.fiscal_year_start,
        row.date_field if row.date_src == "custom_field" else None,
        row.shared_counter,
        date_src=row.date_src,
    )


def _check_policy(row: StoredRule) -> None:
    """The stored date source, on-change and numbering policies are known values (a raw UPDATE can
    set garbage; the rule is then quarantined like a tampered format)."""
    for value, allowed, column in (
        (row.date_src, DATE_SOURCES, "auto_number_date_src"),
        (row.on_change, ON_CHANGE, "auto_number_on_change"),
        (row.numbering, NUMBERING, "auto_number_numbering"),
    ):
        if value not in allowed:
            raise ValueError(f"stored {column} {value!r} is not one of {', '.join(allowed)}")
    check_allocation(row.allocation, row.numbering)
    if row.shared_counter is not None:
        check_name(row.shared_counter)
        why = shared.mismatch(row, 0, ())
        if why is not None:
            raise ValueError(why)
    if row.fiscal_year_start not in FISCAL_MONTHS:
        raise ValueError(
            f"stored auto_number_fiscal_year_start {row.fiscal_year_start!r} is not a month 1-12"
        )


def _overrides(token_refs: str | None) -> list[Mapping[str, Any]] | None:
    if not token_refs:
        return None
    import json

    value = json.loads(token_refs)
    return value if isinstance(value, list) else None


def load_snapshot(conn: Connection) -> CatalogSnapshot:
    """Read the whole catalog in one transaction and parse every rule."""
    objects, fields = _read_rows(conn)
    for name in objects:
        check_api_name(name, "object name")
    rt_cols = tuple(col["name"] for col in sa.inspect(conn).get_columns(system_record_type.name))
    snapshot = CatalogSnapshot(objects, fields, rt_cols, {}, {}, version_of(objects, fields))
    missing = _reflect_adopted(conn, snapshot)
    unindexed = _lost_unique_indexes(conn, snapshot)
    for rows in fields.values():
        for row in rows:
            if row.format is None:
                continue
            if row.info.object in missing:
                snapshot.quarantined[row.field_id] = missing[row.info.object]
                continue
            if row.field_id in unindexed:
                snapshot.quarantined[row.field_id] = unindexed[row.field_id]
                continue
            try:
                snapshot.rules[row.field_id] = build_rule(row, snapshot)
            except (AutonumberError, ValueError) as exc:
                snapshot.quarantined[row.field_id] = str(exc)
    _quarantine_misfits(snapshot)
    return snapshot


def _quarantine_misfits(snapshot: CatalogSnapshot) -> None:
    """A member of a shared counter that no longer fits the others (a raw UPDATE; every door refuses
    it) assigns nothing: its numbers would not mean what the other members' mean (fail closed)."""
    rules = [r for rows in snapshot.fields.values() for r in rows if r.shared_counter and r.format]
    for row in rules:
        rule = snapshot.rules.get(row.field_id)
        if rule is None:
            continue
        others = [
            (o, snapshot.rules[o.field_id].format.counter_width)
            for o in shared.members(rules, row.shared_counter or "", but=row.field_id)
            if o.field_id in snapshot.rules
        ]
        why = shared.mismatch(row, rule.format.counter_width, others)
        if why is not None:
            snapshot.quarantined[row.field_id] = why
    for field_id in snapshot.quarantined:
        snapshot.rules.pop(field_id, None)


def _reflect_adopted(conn: Connection, snapshot: CatalogSnapshot) -> dict[str, str]:
    """Read each adopted table as it is in the database (its own key and column types); return the
    objects whose table is gone, with why: their rules are quarantined, the rest keep working."""
    o = system_object
    stmt = sa.select(o.c.ApiName, o.c.TableName).where(o.c.KeyColumn.is_not(None))
    missing: dict[str, str] = {}
    for name, table_name in conn.execute(stmt).all():
        check_api_name(table_name, "table name")
        snapshot.adopted.add(name)
        try:
            snapshot._tables[name] = sa.Table(table_name, sa.MetaData(), autoload_with=conn)
        except sa.exc.NoSuchTableError:
            missing[name] = f"adopted table {table_name} of object {name} is missing from the database"
    return missing


def _lost_unique_indexes(conn: Connection, snapshot: CatalogSnapshot) -> dict[str, str]:
    """The rules of adopted tables whose column has no UNIQUE index of its own (another tool dropped
    it), with why: they are quarantined. The tables were just reflected, so this costs no query
    unless a column looks unindexed; then unique.py's own inspection decides."""
    suspects: dict[str, Target] = {}
    for name, table in snapshot._tables.items():
        for row in snapshot.fields.get(name, ()):
            column = row.info.name
            if row.format is not None and column in table.c and not _has_unique(table, column):
                suspects[row.field_id] = Target(f"{name}.{column}", table.name, column)
    if not suspects:
        return {}
    lost = set(missing_unique_indexes(conn, list(suspects.values())))
    return {
        field_id: unique_index_missing(t.table, t.column, index_name(t.table, t.column))
        for field_id, t in suspects.items()
        if t in lost
    }


def _has_unique(table: sa.Table, column: str) -> bool:
    """Whether a reflected table has a one-column UNIQUE index or constraint on `column`."""
    uniques: list[Any] = [i for i in table.indexes if i.unique and not _partial(i)]
    uniques += [c for c in table.constraints if isinstance(c, sa.UniqueConstraint)]
    return any([c.name for c in u.columns] == [column] for u in uniques)


def _partial(index: sa.Index) -> bool:
    """A partial unique index (PostgreSQL's or SQLite's WHERE) does not refuse every second copy."""
    return any(key.endswith("_where") and value is not None for key, value in index.dialect_kwargs.items())


def _damaged(snapshot: CatalogSnapshot) -> bool:
    """Whether a rule is quarantined for the schema (a lost index): re-read until it is repaired."""
    return any(isinstance(why, SchemaDamage) for why in snapshot.quarantined.values())


class Catalog:
    """Caches a snapshot; re-checks the rule columns at most every `poll_interval` seconds."""

    def __init__(self, engine: Engine, poll_interval: float = 1.0) -> None:
        self._engine = engine
        self.poll_interval = poll_interval
        self._snapshot: CatalogSnapshot | None = None
        self._checked = 0.0
        self._lock = threading.Lock()
        self.listeners: list[Callable[[CatalogSnapshot], None]] = []

    def current(self) -> CatalogSnapshot:
        """The snapshot, re-read when the metadata changed since the last poll.

        While one thread polls, the others keep the snapshot in hand instead of queueing.
        """
        snap = self._snapshot
        if snap is not None and time.monotonic() - self._checked < self.poll_interval:
            return snap
        if snap is not None and not self._lock.acquire(blocking=False):
            return snap
        if snap is None:
            self._lock.acquire()
        try:
            snap = self._snapshot
            if snap is not None and time.monotonic() - self._checked < self.poll_interval:
                return snap
            return self._refresh_locked(snap)
        finally:
            self._lock.release()

    def refresh(self) -> CatalogSnapshot:
        """Re-read now (after a change made through the applier)."""
        with self._lock:
            return self._refresh_locked(None)

    def _refresh_locked(self, previous: CatalogSnapshot | None) -> CatalogSnapshot:
        try:
            return self._read_locked(previous)
        except UNAVAILABLE as exc:
            raise DatabaseUnavailable("reading the catalog", exc) from exc

    def _read_locked(self, previous: CatalogSnapshot | None) -> CatalogSnapshot:
        with self._engine.connect() as conn:
            if previous is not None and not _damaged(previous):
                objects, fields = _read_rows(conn)
                if version_of(objects, fields) == previous.version:
                    self._checked = time.monotonic()
                    return previous
            snap = load_snapshot(conn)
        self._snapshot = snap
        self._checked = time.monotonic()
        for listener in self.listeners:
            listener(snap)
        return snap
