"""The console's one facade over a Platform: what the routes call (they never touch SQL)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Literal

from autonumber.bulk.imports import ImportOptions, ImportSummary, run_import
from autonumber.bulk.jsonl import Line, read_lines
from autonumber.catalog.cache import CatalogSnapshot
from autonumber.catalog.stored import StoredRule
from autonumber.commands.audit import gaps_on
from autonumber.commands.counters import counters_on
from autonumber.commands.fields import change_field, drop_rule, field_views, rename_rule
from autonumber.db.objects import key_column
from autonumber.errors import RecordError
from autonumber.rules import RuleEdit, set_next
from autonumber.runtime import Platform

from .auth import AdminAuth
from .models import (
    MAX_REJECTED,
    CounterLineOut,
    CounterMoveOut,
    CountersOut,
    FieldOut,
    FieldRemovedOut,
    GapOut,
    GapsOut,
    ImportOut,
    PreviewIn,
    PreviewOut,
    RejectedLine,
)
from .preview import preview
from .state import record_types, rows_by_id

PICKER_LIMIT = 200
RECORD_TYPE_FIELD = "RecordTypeId"


class AutonumberFieldLocked(RecordError):
    """A change to an autonumber field: numbers are locked after create."""

    def __init__(self, object_name: str, field_name: str) -> None:
        self.field = field_name
        super().__init__(
            f"{object_name}.{field_name} is an autonumber field: it is assigned on insert and "
            "read-only afterwards"
        )


@dataclass(frozen=True)
class ObjectSummary:
    """An object on the home page."""

    name: str
    count: int
    autonumber_fields: list[str]
    match: bool = True
    """Whether the search matched it: the page lists every object and hides the others, so a
    search typed after a submitted one still finds them."""


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


@dataclass(frozen=True)
class FieldFilter:
    """Which autonumber fields the rules page shows: object and field by substring (any case),
    scope and status exactly; empty means any."""

    object: str = ""
    field: str = ""
    scope: str = ""
    status: str = ""

    def keeps(self, row: StoredRule, quarantined: bool) -> bool:
        """Whether the field passes every criterion that is set."""
        status = "quarantined" if quarantined else "ok"
        return (
            matches(self.object, row.info.object)
            and matches(self.field, row.info.name)
            and self.scope in ("", row.scope)
            and self.status in ("", status)
        )


def distinct_labels(fields: list[FormField]) -> list[FormField]:
    """Fields that would share a label get their API name appended, so a form never shows two
    inputs called the same (Contract has `ContractNumber` and `Contract_Number__c`)."""
    seen = Counter(f.label for f in fields)
    return [replace(f, label=f"{f.label} ({f.name})") if seen[f.label] > 1 else f for f in fields]


def matches(query: str, *texts: str) -> bool:
    """Whether any text contains `query`, ignoring case (an empty query matches everything)."""
    q = query.strip().casefold()
    return not q or any(q in t.casefold() for t in texts)


class Console:
    """Objects, records, forms and autonumber rules for the HTTP layer."""

    def __init__(self, platform: Platform, admin: AdminAuth) -> None:
        self.platform = platform
        self.admin = admin

    @property
    def snapshot(self) -> CatalogSnapshot:
        """The current catalog snapshot."""
        return self.platform.catalog.current()

    # --- records ---------------------------------------------------------------------------------
    def require_object(self, name: str) -> str:
        """The object name, or UnknownObject (404)."""
        return self.snapshot.require_object(name).name

    def objects(self, query: str = "") -> list[ObjectSummary]:
        """Every object with its record count: the ones holding records first, then the rest.

        `query` marks the objects whose name or autonumber field names contain it (any case) as
        matching, so the home page's search works without JavaScript too."""
        snap = self.snapshot
        out = [
            ObjectSummary(
                name,
                self.platform.records.count(name),
                snap.autonumber_fields(name),
                matches(query, name, *snap.autonumber_fields(name)),
            )
            for name in sorted(snap.objects)
        ]
        return sorted(out, key=lambda s: s.count == 0)

    def insert(self, obj: str, data: Mapping[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """Insert one record, numbers assigned (once per idempotency key)."""
        return self.platform.records.insert(self.require_object(obj), data, idempotency_key=idempotency_key)

    def insert_many(
        self, obj: str, rows: Sequence[Mapping[str, Any]], idempotency_key: str | None = None
    ) -> list[dict[str, Any]]:
        """Insert records in one transaction (once per idempotency key)."""
        return self.platform.records.insert_many(
            self.require_object(obj), rows, idempotency_key=idempotency_key
        )

    def import_ndjson(self, obj: str, stream: BinaryIO, options: ImportOptions) -> ImportOut:
        """Stream an NDJSON body into an object (all or nothing, or committed batch by batch). A
        failure under `commit_every` says which lines are stored, so the client can send the rest."""
        name = self.require_object(obj)
        rejected: list[RejectedLine] = []
        summary = ImportSummary(name)

        def refuse(line: Line, exc: RecordError) -> None:
            if len(rejected) < MAX_REJECTED:
                rejected.append(RejectedLine(line=line.number, error=str(exc)))

        def lines(after: int) -> Iterable[Line]:
            return read_lines(stream, "body", after=after)

        try:
            run_import(self.platform.records, name, lines, options, rejected=refuse, summary=summary)
        except RecordError as exc:
            if options.commit_every is None or not summary.last_line:
                raise
            raise RecordError(f"{exc} (lines 1-{summary.last_line} are stored)") from exc
        return ImportOut(
            object=name,
            count=summary.inserted,
            last_line=summary.last_line,
            rejected_count=summary.rejected,
            rejected=rejected,
        )

    def get(self, obj: str, record_id: str) -> dict[str, Any]:
        """One record, or RecordNotFound."""
        return self.platform.records.get(self.require_object(obj), record_id)

    def page(self, obj: str, limit: int, offset: int) -> tuple[int, list[dict[str, Any]]]:
        """The total and one page of records, newest first."""
        name = self.require_object(obj)
        records = self.platform.records
        return records.count(name), records.list(name, limit=limit, offset=offset)

    def update(self, obj: str, record_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change ordinary fields; an autonumber field in `changes` is refused, naming it."""
        name = self.require_object(obj)
        for key in self.snapshot.autonumber_fields(name):
            if key in changes:
                raise AutonumberFieldLocked(name, key)
        return self.platform.records.update(name, record_id, changes)

    # --- forms -----------------------------------------------------------------------------------
    def form_fields(self, obj: str) -> list[FormField]:
        """The fields of an object in form order: Name, inputs and pickers, then autonumbers."""
        snap = self.snapshot
        autos = set(snap.autonumber_fields(obj))
        out: list[FormField] = []
        for info in snap.fields_of(obj):
            if info.name in autos:
                out.append(FormField(info.name, label_of(info.name), "autonumber"))
            elif info.name == RECORD_TYPE_FIELD:
                options = [(rt.id, rt.name) for rt in record_types(self.platform.db, obj)]
                out.append(
                    FormField(info.name, "Record Type", "select", options=options, target="RecordType")
                )
            elif info.reference_to:
                options = self._picker(info.reference_to)
                out.append(
                    FormField(
                        info.name, label_of(info.name), "select", options=options, target=info.reference_to
                    )
                )
            else:
                out.append(FormField(info.name, label_of(info.name), "text", info.max_length))
        rank = {"text": 1, "select": 2, "autonumber": 3}
        return distinct_labels(sorted(out, key=lambda f: (f.name != "Name", rank[f.kind])))

    def _picker(self, target: str) -> list[tuple[str, str]]:
        if target not in self.snapshot.objects:
            return []
        rows = self.platform.records.list(target, limit=PICKER_LIMIT)
        return [(str(r["Id"]), self.title(target, r, detail=True)) for r in rows]

    def record_id(self, obj: str, record: Mapping[str, Any]) -> str:
        """The record's key: `Id` on the platform's tables, an adopted table's own primary key."""
        return str(record.get(key_column(self.snapshot.table(obj)).name, ""))

    def title(self, obj: str, record: Mapping[str, Any], *, detail: bool = False) -> str:
        """A record's display name: its Name, else its (custom) autonumber, else its Id."""
        autos = self.snapshot.autonumber_fields(obj)
        number = next(
            (record.get(a) for a in sorted(autos, key=lambda a: not a.endswith("__c")) if record.get(a)), None
        )
        name = record.get("Name")
        if name and number and detail:
            return f"{name} · {number}"
        return str(name or number or self.record_id(obj, record))

    def lookup_titles(self, obj: str, records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """Display names of every record the given records point at (one query per lookup field)."""
        out: dict[str, str] = {}
        for f in self.snapshot.fields_of(obj):
            if f.name == RECORD_TYPE_FIELD:
                out.update({rt.id: rt.name for rt in record_types(self.platform.db, obj)})
            elif f.reference_to and f.reference_to in self.snapshot.objects:
                table = self.snapshot.table(f.reference_to)
                found = rows_by_id(self.platform.db, table, (str(r.get(f.name) or "") for r in records))
                out.update({rid: self.title(f.reference_to, row) for rid, row in found.items()})
        return out

    # --- autonumber rules ------------------------------------------------------------------------
    def fields(self, where: FieldFilter | None = None) -> list[FieldOut]:
        """Every autonumber field (or those `where` keeps) with its rule, counters and status."""
        snap = self.snapshot
        keep = where or FieldFilter()
        rows = [
            r
            for obj in sorted(snap.fields)
            for r in snap.fields[obj]
            if r.format is not None and keep.keeps(r, r.field_id in snap.quarantined)
        ]
        return self._described(snap, rows)

    def _described(self, snap: CatalogSnapshot, rows: list[StoredRule]) -> list[FieldOut]:
        return field_views(self.platform.db, snap, rows)

    def field(self, field_id: str) -> FieldOut:
        """One autonumber field (by id or Object.Field)."""
        snap = self.snapshot
        [out] = self._described(snap, [snap.stored(field_id)])
        return out

    def preview(self, req: PreviewIn) -> PreviewOut:
        """Render a sample value; never reads or consumes a counter."""
        return preview(self.snapshot, req)

    def edit_rule(self, field_id: str, changes: Mapping[str, Any], base: str | None = None) -> FieldOut:
        """Change a rule through `autonumber.rules`: `changes` are RuleEdit's attributes by name (None:
        what is stored stays); refusals raise. `base`: the token of the rule as the admin saw it
        (FieldOut.token), compared on write."""
        row = self.platform.catalog.current().stored(field_id)
        edit = RuleEdit(row.info.object, row.info.name, **changes)
        done = change_field(self.platform, edit, base)
        return self.field(done.field_id)

    def remove_rule(self, field_id: str) -> FieldRemovedOut:
        """Remove a field's rule (`autonumber field remove`); its values stay."""
        name = self.snapshot.stored(field_id).name
        done = drop_rule(self.platform, field_id)
        return FieldRemovedOut(field_id=done.field_id, field=name, changes=done.changes)

    def rename_rule(self, field_id: str, new_name: str) -> FieldOut:
        """Rename a field (`autonumber field rename`); it keeps its id."""
        done = rename_rule(self.platform, field_id, new_name)
        return self.field(done.field_id)

    def counters(self, field_id: str) -> CountersOut:
        """A field's counters with their floors (`autonumber counter show`)."""
        row = self.snapshot.stored(field_id)
        report = counters_on(self.platform, row.info.object, row.info.name)
        lines = [CounterLineOut(**vars(c)) for c in report.counters]
        return CountersOut(field_id=report.field_id, field=report.field, scope=report.scope, counters=lines)

    def set_counter(self, field_id: str, next_value: int, scope_key: str | None) -> CounterMoveOut:
        """Set a counter's next number (`autonumber counter set`); refusals raise RuleChangeRefused."""
        row = self.snapshot.stored(field_id)
        move = set_next(self.platform.db, row.info.object, row.info.name, next_value, scope_key)
        return CounterMoveOut(
            field_id=move.field_id,
            field=move.field,
            scope_key=move.scope_key,
            was=move.was,
            now=move.now,
            message=move.line,
        )

    def gaps(
        self, field_id: str, scope_key: str | None = None, lo: int | None = None, hi: int | None = None
    ) -> GapsOut:
        """The gap audit of one field."""
        report = gaps_on(self.platform, field_id, scope_key=scope_key, lo=lo, hi=hi)
        return GapsOut(
            field_id=report.field_id,
            field=report.field,
            numbering=report.numbering,
            checked=report.checked,
            missing=report.missing,
            gaps=[
                GapOut(
                    scope_key=g.scope_key,
                    first=g.first,
                    last=g.last,
                    count=g.count,
                    reason=g.reason,
                    numbers=g.numbers,
                    reserved_at=g.reserved_at,
                    released_at=g.released_at,
                    caller=g.caller,
                )
                for g in report.gaps
            ],
        )
