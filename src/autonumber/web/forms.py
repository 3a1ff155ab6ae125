"""How the console's pages show records: a form's fields (inputs, pickers, read-only autonumbers),
labels, a record's title and the titles of the records it points at."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from autonumber.catalog.cache import CatalogSnapshot
from autonumber.commands import records
from autonumber.db.objects import key_column
from autonumber.runtime import Platform

PICKER_LIMIT = 200
RECORD_TYPE_FIELD = "RecordTypeId"


@dataclass(frozen=True)
class FormField:
    """One field as a form shows it: an input, a picker, or a read-only autonumber."""

    name: str
    label: str
    kind: Literal["text", "select", "autonumber"]
    max_length: int | None = None
    options: list[tuple[str, str]] = field(default_factory=list)
    target: str | None = None


def label_of(name: str) -> str:
    """A field's label: `BillingCountryCode` → `Billing Country Code`, `AccountId` → `Account`."""
    base = name.removesuffix("__c")
    if base.endswith("Id") and base != "Id" and not base.endswith("_Id"):
        base = base[:-2]
    base = base.replace("_", " ")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", base).strip()


def distinct_labels(fields: list[FormField]) -> list[FormField]:
    """Fields that would share a label get their API name appended, so a form never shows two
    inputs called the same (Contract has `ContractNumber` and `Contract_Number__c`)."""
    seen = Counter(f.label for f in fields)
    return [replace(f, label=f"{f.label} ({f.name})") if seen[f.label] > 1 else f for f in fields]


def form_fields(p: Platform, obj: str) -> list[FormField]:
    """The fields of an object in form order: Name, inputs and pickers, then autonumbers."""
    snap = p.catalog.current()
    autos = set(snap.autonumber_fields(obj))
    out: list[FormField] = []
    for info in snap.fields_of(obj):
        if info.name in autos:
            out.append(FormField(info.name, label_of(info.name), "autonumber"))
        elif info.name == RECORD_TYPE_FIELD:
            options = [(rt.id, rt.name) for rt in records.record_types(p, obj)]
            out.append(FormField(info.name, "Record Type", "select", options=options, target="RecordType"))
        elif info.reference_to:
            options = _picker(p, info.reference_to)
            out.append(
                FormField(info.name, label_of(info.name), "select", options=options, target=info.reference_to)
            )
        else:
            out.append(FormField(info.name, label_of(info.name), "text", info.max_length))
    rank = {"text": 1, "select": 2, "autonumber": 3}
    return distinct_labels(sorted(out, key=lambda f: (f.name != "Name", rank[f.kind])))


def _picker(p: Platform, target: str) -> list[tuple[str, str]]:
    snap = p.catalog.current()
    if target not in snap.objects:
        return []
    rows = p.records.list(target, limit=PICKER_LIMIT)
    return [(str(r["Id"]), title(snap, target, r, detail=True)) for r in rows]


def record_id(snap: CatalogSnapshot, obj: str, record: Mapping[str, Any]) -> str:
    """The record's key: `Id` on the platform's tables, an adopted table's own primary key."""
    return str(record.get(key_column(snap.table(obj)).name, ""))


def title(snap: CatalogSnapshot, obj: str, record: Mapping[str, Any], *, detail: bool = False) -> str:
    """A record's display name: its Name, else its (custom) autonumber, else its Id."""
    autos = snap.autonumber_fields(obj)
    number = next(
        (record.get(a) for a in sorted(autos, key=lambda a: not a.endswith("__c")) if record.get(a)), None
    )
    name = record.get("Name")
    if name and number and detail:
        return f"{name} · {number}"
    return str(name or number or record_id(snap, obj, record))


def lookup_titles(p: Platform, obj: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Display names of every record the given records point at (one query per lookup field)."""
    snap = p.catalog.current()
    out: dict[str, str] = {}
    for f in snap.fields_of(obj):
        if f.name == RECORD_TYPE_FIELD:
            out.update({rt.id: rt.name for rt in records.record_types(p, obj)})
        elif f.reference_to and f.reference_to in snap.objects:
            found = records.by_ids(p, f.reference_to, (str(r.get(f.name) or "") for r in rows))
            out.update({rid: title(snap, f.reference_to, row) for rid, row in found.items()})
    return out
