"""Storing validated autonumber rules on `_System_Field` (setup phase `formats`, docs/setup.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.allocation import SINGLE, check_allocation
from autonumber.catalog.shared import check_name
from autonumber.catalog.stored import EDITABLE, POLICY, StoredRule
from autonumber.db.guard import authorized
from autonumber.db.tables import system_field, system_object, system_record_type
from autonumber.errors import FormatError, UnknownField
from autonumber.format import (
    SCOPES,
    FieldInfo,
    Format,
    MemoryCatalog,
    ObjectInfo,
    canonicalize_token_refs,
    parse_format,
    validate_format,
)
from autonumber.format.dates import check_fiscal_year_start
from autonumber.format.tokens import DATE_SOURCES, NUMBERING, ON_CHANGE
from autonumber.format.validate import date_source_of, describe_date_source, validate_date_source
from autonumber.format.zones import UnknownTimeZone, zone_of

TOKEN_REFS = "auto_number_token_refs"
"""The rule column that holds the cross-record token refs as canonical JSON."""


@dataclass(frozen=True)
class RuleSpec:
    """An autonumber rule as a data-spec declares it."""

    object: str
    field: str
    format: str
    scope: str = "global"
    start: int = 1
    date_src: str = "assigned_at"
    on_change: str = "keep_existing"
    overrides: tuple[Mapping[str, Any], ...] = dc_field(default_factory=tuple)
    length: int | None = None
    numbering: str = "standard"
    time_zone: str = "UTC"
    allocation: str = SINGLE
    fiscal_year_start: int = 1
    """The month (1-12) a fiscal year starts on, for {FYYYY}/{FYY} (1: the calendar year)."""
    date_field: str | None = None
    """With date_src `custom_field`: the record's own date/datetime field the dates come from."""
    shared_counter: str | None = None
    """The shared counter the field draws from (None: its own; autonumber/catalog/shared.py)."""

    @property
    def date_source(self) -> str:
        """`clock`, `CreatedDate` or the record's date field (what `--date-source` takes)."""
        return describe_date_source(self.date_src, self.date_field)

    @property
    def name(self) -> str:
        """`Object.Field`."""
        return f"{self.object}.{self.field}"

    def overrides_json(self) -> str:
        """The overrides as canonical JSON ('' when there are none)."""
        return canonicalize_token_refs(list(self.overrides)) if self.overrides else ""

    @property
    def policy(self) -> tuple[Any, ...]:
        """What a model declares (stored.POLICY): the adapters compare a model's declared rule
        with the stored one (StoredRule.policy) by it."""
        return tuple(getattr(self, a) for a in POLICY)

    def edit(self) -> RuleEdit:
        """This rule as an edit that sets what a model declares (the rest is kept as stored)."""
        return RuleEdit(self.object, self.field, **{a: getattr(self, a) for a in POLICY})


def spec_of(stored: StoredRule) -> RuleSpec:
    """The stored rule as a RuleSpec (its token refs as overrides)."""
    return RuleSpec(
        stored.info.object,
        stored.info.name,
        stored.format or "",
        scope=stored.scope,
        start=stored.start,
        date_src=stored.date_src,
        on_change=stored.on_change,
        overrides=tuple(json.loads(stored.token_refs)) if stored.token_refs else (),
        numbering=stored.numbering,
        time_zone=stored.time_zone,
        allocation=stored.allocation,
        fiscal_year_start=stored.fiscal_year_start,
        date_field=stored.date_field,
        shared_counter=stored.shared_counter,
    )


@dataclass(frozen=True)
class RuleEdit:
    """A change to an existing rule, the one edit type of every door (CLI, console, HTTP, spec):
    an attribute left None keeps its stored value (`applied`)."""

    object: str
    field: str
    format: str | None = None
    scope: str | None = None
    start: int | None = None
    numbering: str | None = None
    time_zone: str | None = None
    length: int | None = None
    """The column's length: a custom object's column is resized (never below its longest value);
    an adopted table's is never altered, the field follows it (rules/length.py)."""
    allocation: str | None = None
    fiscal_year_start: int | None = None
    date_source: str | None = None
    """`clock`, `CreatedDate` or one of the record's date/datetime fields (see date_source_of)."""
    shared_counter: str | None = None
    """The shared counter to draw from; `""` leaves it for a counter of the field's own."""

    @property
    def name(self) -> str:
        """`Object.Field`."""
        return f"{self.object}.{self.field}"

    def applied(self, stored: StoredRule) -> RuleSpec:
        """The stored rule with what this edit gives; the cross tokens' stored chains are kept."""
        spec = self._onto(spec_of(stored))
        return replace(spec, overrides=carried_overrides(stored.token_refs, spec.format))

    def added(self) -> RuleSpec:
        """The rule of a field added with what this edit gives (its length too); the rest takes the
        defaults. `field add` and a spec's add build their rule this way, as a set builds on the
        stored one, so every door names the attributes once."""
        return replace(self._onto(RuleSpec(self.object, self.field, "")), length=self.length)

    def _onto(self, spec: RuleSpec) -> RuleSpec:
        given = {a: getattr(self, a) for a in EDITABLE if getattr(self, a) is not None}
        spec = replace(spec, **given)
        if self.date_source is not None:
            date_src, date_field = date_source_of(self.date_source)
            spec = replace(spec, date_src=date_src, date_field=date_field)
        if self.shared_counter == "":
            spec = replace(spec, shared_counter=None)
        return spec


def carried_overrides(token_refs: str | None, new_format: str) -> tuple[Mapping[str, Any], ...]:
    """Keep the stored token refs (chains, directField) of the cross tokens the new format still has."""
    if not token_refs:
        return ()
    try:
        literals = {ref.literal for ref in parse_format(new_format).cross_refs}
    except FormatError:
        return ()  # the new format is refused with its own rule number by rule_values
    refs = json.loads(token_refs)
    return tuple(r for r in refs if isinstance(r, dict) and r.get("tokenLiteral") in literals)


def read_stored(conn: Connection, where: Any = None) -> dict[str, StoredRule]:
    """Every field's stored rule by `Object.Field` (only the rows `where` selects, if given)."""
    f, o = system_field, system_object
    stmt = sa.select(o.c.ApiName.label("object_name"), f).join(o, o.c.Id == f.c.ObjectId)
    if where is not None:
        stmt = stmt.where(where)
    out = {}
    for row in conn.execute(stmt):
        stored = StoredRule.from_row(row.object_name, row._mapping)
        out[stored.name] = stored
    return out


def stored_rule(conn: Connection, object_name: str, field_name: str) -> StoredRule | None:
    """The field's row by `Object.Field`, or None when the field is not registered."""
    where = sa.and_(system_object.c.ApiName == object_name, system_field.c.ApiName == field_name)
    return read_stored(conn, where).get(f"{object_name}.{field_name}")


def check_enums(spec: RuleSpec) -> None:
    """Enforce the enum values of the rule columns (docs/formats.md; scope includes per_prefix)."""
    for value, allowed, what in (
        (spec.scope, SCOPES, "auto_number_scope"),
        (spec.date_src, DATE_SOURCES, "auto_number_date_src"),
        (spec.on_change, ON_CHANGE, "auto_number_on_change"),
        (spec.numbering, NUMBERING, "auto_number_numbering"),
    ):
        if value not in allowed:
            raise FormatError(
                9 if what == "auto_number_scope" else 0,
                f"{spec.name}: {what} {value!r} is not one of {', '.join(allowed)}",
                format=spec.format,
            )
    try:
        check_allocation(spec.allocation, spec.numbering)
    except ValueError as exc:
        raise FormatError(0, f"{spec.name}: {exc}", format=spec.format) from None
    if spec.start < 0:
        raise FormatError(2, f"{spec.name}: start {spec.start} must be ≥ 0", format=spec.format)
    check_fiscal_year_start(spec.fiscal_year_start, spec.name)
    if spec.shared_counter is not None:
        check_name(spec.shared_counter)
    try:
        zone_of(spec.time_zone)
    except UnknownTimeZone as exc:
        raise UnknownTimeZone(f"{spec.name}: {exc}") from None
    try:
        fmt = parse_format(spec.format)
    except FormatError:
        return  # reported by rule_values with its own rule number
    check_start_fits(spec, fmt)


def check_start_fits(spec: RuleSpec, fmt: Format) -> None:
    """Rule 2: the start value fits the counter, else every insert would fail with CounterOverflow."""
    largest = 10**fmt.counter_width - 1
    if spec.start > largest:
        raise FormatError(
            2,
            f"{spec.name}: start {spec.start} does not fit the counter of {fmt.source!r} (width "
            f"{fmt.counter_width}, largest {largest}); widen the counter or lower the start",
            format=spec.format,
        )


def metadata_view(conn: Connection) -> tuple[MemoryCatalog, dict[str, str]]:
    """Objects and fields as they are in `conn` (one read, no rule parsing) and field ids by name."""
    names = {row.Id: row.ApiName for row in conn.execute(sa.select(system_object))}
    objects = [
        ObjectInfo(row.ApiName, row.TableName)
        for row in conn.execute(sa.select(system_object.c.ApiName, system_object.c.TableName))
    ]
    fields: list[FieldInfo] = []
    ids: dict[str, str] = {}
    for row in conn.execute(sa.select(system_field)):
        obj = names.get(row.ObjectId)
        if obj is None:
            continue
        fields.append(FieldInfo(obj, row.ApiName, row.Type, row.ReferenceTo, row.MaxLength))
        ids[f"{obj}.{row.ApiName}"] = row.Id
    rt_cols = [c["name"] for c in sa.inspect(conn).get_columns(system_record_type.name)]
    return MemoryCatalog(objects, fields, rt_cols), ids


def rule_values(spec: RuleSpec, catalog: MemoryCatalog) -> dict[str, Any]:
    """Validate a rule against the catalog; the `_System_Field` column values to store.

    Raises FormatError (rule N) when the rule is invalid; nothing is written then.
    """
    check_enums(spec)
    if catalog.get_field(spec.object, spec.field) is None:
        raise UnknownField(spec.name)
    fmt = parse_format(spec.format)
    check_start_fits(spec, fmt)
    refs = validate_format(
        fmt,
        source_object=spec.object,
        catalog=catalog,
        target_field=spec.field,
        scope=spec.scope,
        overrides=list(spec.overrides) or None,
    )
    validate_date_source(fmt, spec.object, spec.date_src, spec.date_field, catalog)
    return {
        "auto_number_format": spec.format,
        "auto_number_start": spec.start,
        "auto_number_scope": spec.scope,
        "auto_number_date_src": spec.date_src,
        "auto_number_on_change": spec.on_change,
        TOKEN_REFS: canonicalize_token_refs(refs) if refs else None,
        "auto_number_numbering": spec.numbering,
        "auto_number_time_zone": spec.time_zone,
        "auto_number_allocation": spec.allocation,
        "auto_number_fiscal_year_start": spec.fiscal_year_start,
        "auto_number_date_field": spec.date_field,
        "auto_number_shared_counter": spec.shared_counter,
    }


def apply_rules(conn: Connection, specs: Sequence[RuleSpec]) -> list[str]:
    """Validate every rule first (all or nothing), then write the ones that differ; return changes."""
    catalog, ids = metadata_view(conn)
    planned = [(spec, ids[spec.name], rule_values(spec, catalog)) for spec in _known(specs, ids)]
    stored = {s.field_id: s.values for s in read_stored(conn).values()}
    changes: list[str] = []
    for spec, fid, values in planned:
        if same_values(stored.get(fid, {}), values):
            continue
        write_rule(conn, fid, values)
        changes.append(f"rule {spec.name} = {spec.format} ({_describe(spec)})")
    return changes


def same_values(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether the stored rule columns already hold `wanted` (token refs compared as canonical JSON)."""
    return all(_same(k, stored.get(k), v) for k, v in wanted.items())


def write_rule(conn: Connection, field_id: str, values: Mapping[str, Any]) -> None:
    """Write validated rule columns (the only legitimate writer: the guard trigger allows it)."""
    with authorized(conn):
        conn.execute(sa.update(system_field).where(system_field.c.Id == field_id).values(dict(values)))


def _describe(spec: RuleSpec) -> str:
    """`per_day`, plus the numbering policy and time zone when they are not the defaults."""
    extra = [spec.numbering] if spec.numbering != "standard" else []
    extra += [spec.time_zone] if spec.time_zone != "UTC" else []
    extra += [spec.allocation] if spec.allocation != SINGLE else []
    extra += [f"fiscal year from month {spec.fiscal_year_start}"] if spec.fiscal_year_start != 1 else []
    extra += [f"dated by {spec.date_source}"] if spec.date_src != "assigned_at" else []
    extra += [f"shared counter {spec.shared_counter}"] if spec.shared_counter else []
    return ", ".join([spec.scope, *extra])


def _known(specs: Sequence[RuleSpec], ids: Mapping[str, str]) -> Sequence[RuleSpec]:
    for spec in specs:
        if spec.name not in ids:
            raise UnknownField(spec.name, "autonumber rule names a field the standard pack did not create")
    return specs


def _same(column: str, stored: Any, wanted: Any) -> bool:
    """Whether one rule column already holds `wanted`. The token refs are JSON: equal as documents
    and as text (any other column is text that may look like JSON: a format `[{0000}]`)."""
    if column == TOKEN_REFS and isinstance(wanted, str) and isinstance(stored, str):
        return bool(json.loads(stored) == json.loads(wanted)) and stored == wanted
    return bool(stored == wanted)


def store_rule(conn: Connection, spec: RuleSpec) -> str:
    """Validate and store one rule (see apply_rules for many); return its field id."""
    apply_rules(conn, [spec])
    return metadata_view(conn)[1][spec.name]
