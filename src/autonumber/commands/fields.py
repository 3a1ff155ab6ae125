"""Adding an autonumber field and changing its rule: the CLI's `field add|set`, the console, the API.

Every change goes through `autonumber.rules` (plan → write → verify in one transaction); these
functions only open the database, find the field and refresh a running platform's catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from autonumber.audit import render_in_scope
from autonumber.catalog import CatalogSnapshot, FieldRow
from autonumber.db.tables import counter_table
from autonumber.errors import UnknownField
from autonumber.format.validate import describe_date_source
from autonumber.rules import FieldChange, RuleEdit, RuleRequest, RuleSpec, commit_requests, set_rule
from autonumber.runtime import Platform

from . import session
from .session import opened


def create_field(url: str, rule: RuleSpec) -> FieldChange:
    """Create the column if missing, store the validated rule and seed its counter."""
    with opened(url) as engine:
        [done] = commit_requests(engine, [RuleRequest("add", rule)])
    return done


def set_field(url: str, edit: RuleEdit) -> FieldChange:
    """Change a field's rule (what the edit does not give stays as stored); what changed."""
    with opened(url) as engine:
        return set_rule(engine, edit)


def field_row(snapshot: CatalogSnapshot, field: str, *, autonumber: bool = True) -> FieldRow:
    """The `_System_Field` row of a field (by id or `Object.Field`), or UnknownField.

    `autonumber`: only a field with a rule will do ("field has no autonumber rule" otherwise).
    """
    fid = snapshot.field_id(field)
    for rows in snapshot.fields.values():
        for row in rows:
            if row.id == fid and (row.format is not None or not autonumber):
                return row
    raise UnknownField(field, "field has no autonumber rule")


def change_field(platform: Platform, edit: RuleEdit) -> FieldChange:
    """Change a rule on a running platform (what is not given stays), then refresh its catalog."""
    done = set_rule(platform.db, edit)
    platform.catalog.refresh()
    return done


@dataclass(frozen=True)
class CounterView:
    """One counter row and the number it hands out next (None when that depends on the record)."""

    scope_key: str
    next_value: int
    next_number: str | None


@dataclass(frozen=True)
class FieldView:
    """What `field list|show` prints: the stored rule, its state and its counters."""

    field_id: str
    object: str
    field: str
    format: str
    scope: str
    start: int
    numbering: str
    time_zone: str
    quarantined: str | None
    counters: list[CounterView]
    fiscal_year_start: int = 1
    date_source: str = "clock"


def describe_fields(url: str, object_name: str | None = None, field: str | None = None) -> list[FieldView]:
    """Every autonumber field (of one object, or one field by id or `Object.Field`) as stored."""
    with session.platform(url) as p:
        snap = p.catalog.current()
        if field is not None:
            rows = [field_row(snap, field)]
        else:
            if object_name is not None:
                snap.require_object(object_name)
            names = sorted(snap.fields) if object_name is None else [object_name]
            rows = [r for obj in names for r in snap.fields.get(obj, []) if r.format is not None]
        t = counter_table
        with p.db.connect() as conn:
            stmt = sa.select(t.c.field_id, t.c.scope_key, t.c.next_value).where(
                t.c.field_id.in_([r.id for r in rows])
            )
            counters: dict[str, list[tuple[str, int]]] = {}
            for fid, key, nxt in conn.execute(stmt.order_by(t.c.field_id, t.c.scope_key)):
                counters.setdefault(fid, []).append((key, int(nxt)))
        return [_view(snap, row, counters.get(row.id, [])) for row in rows]


def _view(snap: CatalogSnapshot, row: FieldRow, counters: list[tuple[str, int]]) -> FieldView:
    rule = snap.rules.get(row.id)
    return FieldView(
        row.id,
        row.info.object,
        row.info.name,
        row.format or "",
        row.scope,
        row.start,
        row.numbering,
        row.time_zone,
        snap.quarantined.get(row.id),
        [CounterView(k, n, None if rule is None else render_in_scope(rule, k, n)) for k, n in counters],
        fiscal_year_start=row.fiscal_year_start,
        date_source=describe_date_source(row.date_src, row.date_field),
    )
