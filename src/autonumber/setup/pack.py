"""The standard pack: CRM objects, their fields and the Contract record types (docs/setup.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.objects import object_table
from autonumber.db.schema import reconcile_tables
from autonumber.db.tables import system_field, system_object, system_record_type
from autonumber.db.unique import Target, ensure_unique_indexes
from autonumber.format import FieldInfo
from autonumber.identifiers import ID_LENGTH as ID_LENGTH
from autonumber.identifiers import check_api_name, fit_id
from autonumber.identifiers import field_id as field_id
from autonumber.identifiers import object_id as object_id


@dataclass(frozen=True)
class FieldSpec:
    """One field of an object."""

    name: str
    type: str = "text"
    reference_to: str | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class ObjectSpec:
    """One object: its API name, table and fields."""

    name: str
    fields: tuple[FieldSpec, ...]
    table: str | None = None

    @property
    def table_name(self) -> str:
        """The object's table (its API name unless given)."""
        return self.table or self.name


@dataclass(frozen=True)
class RecordTypeSpec:
    """A record type and its code."""

    object: str
    developer_name: str
    code: str


CORE_OBJECT_NAMES = ("Account", "Opportunity", "Contract", "Quote", "Order", "Case")
"""The standard CRM objects; the data-spec adds one object per Salesforce catalog row."""


def objects_from_data(
    rows: Iterable[tuple[str, str, tuple[tuple[str, str, str | None, int | None], ...]]],
) -> tuple[ObjectSpec, ...]:
    """ObjectSpecs from the generated seed module's plain rows."""
    return tuple(
        ObjectSpec(name, tuple(FieldSpec(*f) for f in fields), None if table == name else table)
        for name, table, fields in rows
    )


def record_type_id(spec: RecordTypeSpec) -> str:
    """Deterministic `_System_RecordType.Id`."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", spec.developer_name).strip("_")
    return fit_id(f"rt_{spec.object}_{name}")


def _new_rows(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, object]], key: Sequence[str]
) -> list[dict[str, object]]:
    """Insert the rows whose natural `key` is new (one read, one bulk insert); return them.

    Keyed by name, not by Id, so metadata created by another tool (other Ids) is recognised.
    """
    cols = [table.c[k] for k in key]
    known = {tuple(row) for row in conn.execute(sa.select(*cols))}
    fresh = [row for row in rows if tuple(row[k] for k in key) not in known]
    if fresh:
        conn.execute(sa.insert(table), fresh)
    return fresh


def tables_needing_change(conn: Connection, tables: Sequence[sa.Table]) -> list[sa.Table]:
    """The tables that are missing or lack a column (one multi-table inspection, not one per table)."""
    inspector = sa.inspect(conn)
    existing = set(inspector.get_table_names())
    present = [t.name for t in tables if t.name in existing]
    columns = inspector.get_multi_columns(filter_names=present) if present else {}
    have = {name: {c["name"] for c in cols} for (_, name), cols in columns.items()}
    return [t for t in tables if t.name not in have or set(t.columns.keys()) - have[t.name]]


def install_objects(conn: Connection, objects: Sequence[ObjectSpec], *, unique: bool = True) -> list[str]:
    """Register objects and fields (new rows only) and create or reconcile their tables; with
    `unique`, a UNIQUE index on each autonumber column (refused when it already holds a duplicate)."""
    metadata = sa.MetaData()
    object_rows: list[dict[str, object]] = []
    field_rows: list[dict[str, object]] = []
    tables = []
    for spec in objects:
        check_api_name(spec.name, "object name")
        object_rows.append(
            {
                "Id": object_id(spec.name),
                "ApiName": spec.name,
                "TableName": spec.table_name,
                "Label": spec.name,
            }
        )
        for f in spec.fields:
            check_api_name(f.name, "field name")
            field_rows.append(
                {
                    "Id": field_id(spec.name, f.name),
                    "ObjectId": object_id(spec.name),
                    "_object": spec.name,
                    "ApiName": f.name,
                    "Label": f.name,
                    "Type": f.type,
                    "ReferenceTo": f.reference_to,
                    "MaxLength": f.max_length,
                }
            )
        infos = [FieldInfo(spec.name, f.name, f.type, f.reference_to, f.max_length) for f in spec.fields]
        tables.append(object_table(spec.table_name, infos, metadata))
    changes = [
        f"object {row['ApiName']}" for row in _new_rows(conn, system_object, object_rows, ("ApiName",))
    ]
    ids = dict(conn.execute(sa.select(system_object.c.ApiName, system_object.c.Id)).tuples().all())
    for row in field_rows:  # an object registered by someone else keeps its Id
        row["ObjectId"] = ids.get(str(row.pop("_object")), row["ObjectId"])
    changes += [
        f"field {row['Id']}" for row in _new_rows(conn, system_field, field_rows, ("ObjectId", "ApiName"))
    ]
    changes.extend(reconcile_tables(conn, tables_needing_change(conn, tables)))
    if unique:
        changes.extend(ensure_unique_indexes(conn, autonumber_targets(objects)))
    return changes


def autonumber_targets(objects: Iterable[ObjectSpec]) -> list[Target]:
    """The autonumber columns of some objects (each gets a UNIQUE index)."""
    return [
        Target(f"{spec.name}.{f.name}", spec.table_name, f.name)
        for spec in objects
        for f in spec.fields
        if f.type == "autonumber"
    ]


def install_record_types(conn: Connection, record_types: Sequence[RecordTypeSpec]) -> list[str]:
    """Register record types (new rows only; codes are seeded separately)."""
    rows: list[dict[str, object]] = [
        {
            "Id": record_type_id(spec),
            "ObjectId": object_id(spec.object),
            "DeveloperName": spec.developer_name,
            "Name": spec.developer_name,
        }
        for spec in record_types
    ]
    ids = dict(conn.execute(sa.select(system_object.c.ApiName, system_object.c.Id)).tuples().all())
    for row, spec in zip(rows, record_types, strict=True):
        row["ObjectId"] = ids.get(spec.object, row["ObjectId"])
    new = _new_rows(conn, system_record_type, rows, ("ObjectId", "DeveloperName"))
    return [f"record type {row['Id']}" for row in new]


def seed_record_type_codes(conn: Connection, record_types: Iterable[RecordTypeSpec]) -> int:
    """Set RecordTypeCode where it is still NULL (idempotent); return rows changed."""
    changed = 0
    t = system_record_type
    for spec in record_types:
        result = conn.execute(
            sa.update(t)
            .where(
                t.c.ObjectId.in_(sa.select(system_object.c.Id).where(system_object.c.ApiName == spec.object)),
                t.c.DeveloperName == spec.developer_name,
                t.c.RecordTypeCode.is_(None),
            )
            .values(RecordTypeCode=spec.code)
        )
        changed += result.rowcount
    return changed
