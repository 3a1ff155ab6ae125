"""What `field list` and `field show` print: the stored rule and its counters with what each next
number prints as; `field show` adds the column length, a new scope's start and the last gaps."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine

from autonumber.audit import Gap, GapReport
from autonumber.catalog.cache import CatalogSnapshot
from autonumber.catalog.stored import StoredRule
from autonumber.db import dialect_for

from . import session
from .audit import gap_json, gaps_on
from .counters import NewKey, new_key_line
from .fields import CounterView, FieldView, field_views
from .next_number import preview

LAST_GAPS = 5
"""How many of the latest gap runs `field show` lists (`audit gaps` lists them all)."""


class CounterListing(CounterView):
    """A counter scope with what its next number prints as."""

    preview: str = Field(
        "",
        description="the next number as printed, or the format with the counter filled in and the "
        "parts the record decides left as their tokens; empty when the field is quarantined",
    )
    depends_on_record: bool = Field(False, description="true when `preview` names parts of the record")


class FieldListing(FieldView):
    """One autonumber field as `field list` prints it."""

    counters: list[CounterListing]  # type: ignore[assignment]


class NewKeyView(BaseModel):
    """Where a record with a scope key that has no counter row yet starts (per_day, per_prefix)."""

    scope_key: str | None = Field(description="today's key when the clock decides it, else null")
    next_value: int
    preview: str
    depends_on_record: bool


class GapSummary(BaseModel):
    """The gap audit in short: how many values it checked and missed, and the latest runs."""

    checked: int
    missing: int
    last: list[dict[str, Any]]


class FieldDetail(FieldListing):
    """Everything about one autonumber field, as `field show` prints it."""

    length: int | None = Field(None, description="the column's length in characters")
    date_field: str | None = Field(None, description="the record's own date field that dates the numbers")
    new_key: NewKeyView | None = None
    per_prefix_keys: list[str] = Field(default_factory=list, description="per_prefix: every key in use")
    gaps: GapSummary | None = Field(None, description="null when the field is quarantined or with --no-gaps")


def listings(db: Engine, snap: CatalogSnapshot, rows: Sequence[StoredRule]) -> list[FieldListing]:
    """`field_views` of every counter row, each with the preview of its next number."""
    with db.connect() as conn:
        now = dialect_for(conn).utc_now(conn)
    return [_listing(snap, v, now) for v in field_views(db, snap, rows, per_field=None)]


def _listing(snap: CatalogSnapshot, view: FieldView, now: datetime) -> FieldListing:
    rule = snap.rules.get(view.field_id)
    counters = []
    for c in view.counters:
        shown = None if rule is None else preview(rule, c.scope_key, c.next_value, now)
        extra = {} if shown is None else {"preview": shown.text, "depends_on_record": shown.depends_on_record}
        counters.append(CounterListing(**c.model_dump(), **extra))
    return FieldListing(**{**view.model_dump(), "counters": counters})


def list_fields(url: str, object_name: str | None = None) -> list[FieldListing]:
    """Every autonumber field, or one object's, with its counters' next numbers."""
    with session.platform(url) as p:
        snap = p.catalog.current()
        if object_name is not None:
            snap.require_object(object_name)
        names = sorted(snap.fields) if object_name is None else [object_name]
        rows = [r for obj in names for r in snap.fields.get(obj, []) if r.format is not None]
        return listings(p.db, snap, rows)


def show_field(url: str, field: str, *, with_gaps: bool = True) -> FieldDetail:
    """One field (id or `Object.Field`): rule, state, counters, a new scope's start and, `with_gaps`,
    the last gaps (the audit reads every stored value of the field)."""
    with session.platform(url) as p:
        snap = p.catalog.current()
        row = snap.stored(field)
        [listing] = listings(p.db, snap, [row])
        rule = snap.rules.get(row.field_id)
        fresh: NewKey | None = None
        gaps: GapSummary | None = None
        if rule is not None:
            with p.db.connect() as conn:
                now = dialect_for(conn).utc_now(conn)
                fresh = new_key_line(conn, row, rule, {c.scope_key for c in listing.counters}, now)
            gaps = _summary(gaps_on(p, row.field_id)) if with_gaps else None
        return FieldDetail(
            **listing.model_dump(),
            length=row.max_length,
            date_field=row.date_field,
            new_key=None if fresh is None else NewKeyView(**vars(fresh)),
            per_prefix_keys=[c.scope_key for c in listing.counters] if row.scope == "per_prefix" else [],
            gaps=gaps,
        )


def _summary(report: GapReport) -> GapSummary:
    latest = sorted(report.gaps, key=_latest, reverse=True)[:LAST_GAPS]
    return GapSummary(checked=report.checked, missing=report.missing, last=[gap_json(g) for g in latest])


def _latest(gap: Gap) -> tuple[str, str, int]:
    """Newest first: by when the run was reserved, then by value."""
    return (gap.reserved_at.isoformat() if gap.reserved_at else "", gap.scope_key, gap.last)
