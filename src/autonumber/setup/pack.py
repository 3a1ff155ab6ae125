"""The standard pack: CRM objects, their fields and the Contract record types (DESIGN.md §5b)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.objects import object_table
from autonumber.db.schema import reconcile_tables
from autonumber.db.tables import system_field, system_object, system_record_type
from autonumber.format import FieldInfo
from autonumber.identifiers import check_api_name


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
    """A record type and its code (§4.5)."""

    object: str
    developer_name: str
    code: str


def ref(name: str, target: str) -> FieldSpec:
    """A lookup field."""
    return FieldSpec(name, "reference", target, 64)


def auto(name: str, length: int = 30) -> FieldSpec:
    """An autonumber column."""
    return FieldSpec(name, "autonumber", None, length)


CORE_OBJECTS: tuple[ObjectSpec, ...] = (
    ObjectSpec(
        "Account",
        (
            FieldSpec("Name", max_length=255),
            FieldSpec("BillingCountryCode", max_length=8),
            auto("Account_ID__c", 40),
        ),
    ),
    ObjectSpec("Opportunity", (FieldSpec("Name", max_length=255), ref("AccountId", "Account"))),
    ObjectSpec(
        "Contract",
        (
            ref("AccountId", "Account"),
            ref("RecordTypeId", "RecordType"),
            FieldSpec("Account_Country_Code__c", max_length=8),
            auto("ContractNumber"),
            auto("Contract_Number__c", 40),
        ),
    ),
    ObjectSpec(
        "Quote",
        (
            FieldSpec("Name", max_length=255),
            ref("OpportunityId", "Opportunity"),
            ref("AccountId", "Account"),
            auto("QuoteNumber"),
            auto("Quote_No__c", 40),
        ),
    ),
    ObjectSpec(
        "Order",
        (ref("AccountId", "Account"), auto("OrderNumber"), auto("Order_Number__c", 40)),
    ),
    ObjectSpec("Case", (FieldSpec("Subject", max_length=255), auto("CaseNumber"))),
)

CONTRACT_RECORD_TYPES: tuple[RecordTypeSpec, ...] = tuple(
    RecordTypeSpec("Contract", name, code)
    for name, code in (
        ("Services Agreement", "CSA"),
        ("Services Agreement Online", "TCSA"),
        ("Customer Reference Agreement", "CRA"),
        ("Non-Disclosure Agreement", "NDA"),
        ("Partner Network Agreement", "PNA"),
        ("Payment Agreement", "PA"),
        ("Cloud POC Agreement", "TCPA"),
        ("Enterprise POC Agreement", "TEPA"),
        ("Master Agreement", "MA"),
    )
)


def object_id(name: str) -> str:
    """Deterministic `_System_Object.Id` (identical on every node and every run)."""
    return f"obj_{name}"


def field_id(object_name: str, field_name: str) -> str:
    """Deterministic `_System_Field.Id`: `Object.Field`."""
    return f"{object_name}.{field_name}"


def record_type_id(spec: RecordTypeSpec) -> str:
    """Deterministic `_System_RecordType.Id`."""
    return f"rt_{spec.object}_{re.sub(r'[^A-Za-z0-9]+', '_', spec.developer_name).strip('_')}"


def _upsert(conn: Connection, table: sa.Table, row: dict[str, object]) -> bool:
    """Insert a metadata row when its Id is new; return whether it was inserted."""
    exists = conn.execute(sa.select(table.c.Id).where(table.c.Id == row["Id"])).first()
    if exists is not None:
        return False
    conn.execute(sa.insert(table).values(row))
    return True


def install_objects(conn: Connection, objects: Sequence[ObjectSpec]) -> list[str]:
    """Register objects and fields (new rows only) and create or reconcile their tables."""
    changes: list[str] = []
    metadata = sa.MetaData()
    tables = []
    for spec in objects:
        check_api_name(spec.name, "object name")
        if _upsert(conn, system_object, {
            "Id": object_id(spec.name), "ApiName": spec.name, "TableName": spec.table_name,
            "Label": spec.name,
        }):
            changes.append(f"object {spec.name}")
        for f in spec.fields:
            check_api_name(f.name, "field name")
            if _upsert(conn, system_field, {
                "Id": field_id(spec.name, f.name), "ObjectId": object_id(spec.name),
                "ApiName": f.name, "Label": f.name, "Type": f.type, "ReferenceTo": f.reference_to,
                "MaxLength": f.max_length,
            }):
                changes.append(f"field {spec.name}.{f.name}")
        infos = [FieldInfo(spec.name, f.name, f.type, f.reference_to, f.max_length) for f in spec.fields]
        tables.append(object_table(spec.table_name, infos, metadata))
    changes.extend(reconcile_tables(conn, tables))
    return changes


def install_record_types(conn: Connection, record_types: Iterable[RecordTypeSpec]) -> list[str]:
    """Register record types (new rows only; codes are seeded separately, §7.2 b.5)."""
    changes = []
    for spec in record_types:
        if _upsert(conn, system_record_type, {
            "Id": record_type_id(spec), "ObjectId": object_id(spec.object),
            "DeveloperName": spec.developer_name, "Name": spec.developer_name,
        }):
            changes.append(f"record type {spec.object}.{spec.developer_name}")
    return changes


def seed_record_type_codes(conn: Connection, record_types: Iterable[RecordTypeSpec]) -> int:
    """Set RecordTypeCode where it is still NULL (idempotent, §8.5); return rows changed."""
    changed = 0
    t = system_record_type
    for spec in record_types:
        result = conn.execute(
            sa.update(t)
            .where(t.c.DeveloperName == spec.developer_name, t.c.RecordTypeCode.is_(None))
            .values(RecordTypeCode=spec.code)
        )
        changed += result.rowcount
    return changed
