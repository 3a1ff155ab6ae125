"""Adding an autonumber field, changing, removing and renaming it: the CLI's `field add|set|remove|
rename`, the console, the API.

Every change goes through `autonumber.rules` (plan → write → verify in one transaction); these
functions only open the database, find the field and refresh a running platform's catalog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine

from autonumber import rules
from autonumber.audit import render_in_scope
from autonumber.backfill import BackfillResult, Progress, backfill
from autonumber.catalog.cache import CatalogSnapshot
from autonumber.catalog.stored import StoredRule
from autonumber.db.tables import counter_table
from autonumber.errors import FormatError, RuleChangedMeanwhile
from autonumber.format import parse_format
from autonumber.format.validate import describe_date_source
from autonumber.rules import FieldChange, RuleEdit, RuleRequest, RuleSpec, commit_requests, set_rule
from autonumber.runtime import Platform

from . import session
from .objects import matches
from .session import opened


def create_field(url: str, rule: RuleSpec) -> FieldChange:
    """Create the column if missing, store the validated rule and seed its counter."""
    with opened(url) as engine:
        [done] = commit_requests(engine, [RuleRequest("add", rule)])
    return done


def backfill_field(
    url: str, object_name: str, field_name: str, batch_size: int, progress: Progress | None = None
) -> BackfillResult:
    """Number the field's rows that have none, in CreatedDate then Id order (autonumber.backfill)."""
    with session.platform(url) as p:
        return backfill(p, f"{object_name}.{field_name}", batch_size=batch_size, progress=progress)


def set_field(url: str, edit: RuleEdit) -> FieldChange:
    """Change a field's rule (what the edit does not give stays as stored); what changed."""
    with opened(url) as engine:
        return set_rule(engine, edit)


def change_field(platform: Platform, edit: RuleEdit, base: str | None = None) -> FieldChange:
    """Change a rule on a running platform (what is not given stays), then refresh its catalog.
    `base`: the token of the rule the admin saw (FieldView.token), compared on write."""
    try:
        done = set_rule(platform.db, edit, base)
    except RuleChangedMeanwhile:
        platform.catalog.refresh()  # so that the re-read shows the rule that won
        raise
    platform.catalog.refresh()
    return done


def edit_rule(
    platform: Platform, field: str, changes: Mapping[str, Any], base: str | None = None
) -> FieldChange:
    """change_field for the field by id or `Object.Field`; `changes` are RuleEdit's attributes by
    name (None: what is stored stays)."""
    row = platform.catalog.current().stored(field)
    return change_field(platform, RuleEdit(row.info.object, row.info.name, **changes), base)


def remove_field(url: str, object_name: str, field_name: str) -> FieldChange:
    """Remove a field's rule: its values stay, and are never issued again if it is added back."""
    with opened(url) as engine:
        return rules.remove_field(engine, object_name, field_name)


def rename_field(url: str, object_name: str, field_name: str, new_name: str) -> FieldChange:
    """Rename a field (a custom object's column too; an adopted table's column the application
    renamed is followed); it keeps its id."""
    with opened(url) as engine:
        return rules.rename_field(engine, object_name, field_name, new_name)


def drop_rule(platform: Platform, field: str) -> FieldChange:
    """remove_field on a running platform (the field by id or `Object.Field`), then refresh it."""
    row = platform.catalog.current().stored(field)
    done = rules.remove_field(platform.db, row.info.object, row.info.name)
    platform.catalog.refresh()
    return done


def rename_rule(platform: Platform, field: str, new_name: str) -> FieldChange:
    """rename_field on a running platform (the field by id or `Object.Field`), then refresh it."""
    row = platform.catalog.current().stored(field)
    done = rules.rename_field(platform.db, row.info.object, row.info.name, new_name)
    platform.catalog.refresh()
    return done


MAX_SCOPES_SHOWN = 20
"""The console shows a field's global row and its most recently used scopes, up to this many."""


class CounterView(BaseModel):
    """One counter scope ('' is the global scope): the value and number it hands out next."""

    scope_key: str
    next_value: int
    next_number: str | None = Field(None, description="as printed; None when it depends on the record")


class FieldView(BaseModel):
    """One autonumber field as every door shows it (`field list|show`, the console, the HTTP API):
    its stored rule, whether it can assign numbers, and its counters."""

    field_id: str
    object: str
    field: str
    format: str
    scope: str
    start: int
    counter_width: int | None
    status: Literal["ok", "quarantined"]
    reason: str | None = None
    counters: list[CounterView]
    numbering: Literal["standard", "gapless"] = Field(
        "standard",
        description="standard: reserved off the caller's transaction (a rollback leaves a "
        "gap); gapless: taken inside it, the counter row locked until it ends",
    )
    time_zone: str = Field("UTC", description="IANA zone whose calendar dates the numbers")
    token: str = Field(
        "",
        description="digest of the stored rule: send it back as `base` so that an edit made meanwhile "
        "by someone else is refused (409) instead of overwritten",
    )
    allocation: str = Field(
        "single",
        description="single, or blocks:N (a process reserves N numbers at a time: unique, not in "
        "creation order across processes, a process's unused rest is a gap)",
    )
    fiscal_year_start: int = Field(1, description="month (1-12) a fiscal year starts on, for {FYYYY}/{FYY}")
    date_source: str = Field(
        "clock", description="what dates the numbers: clock, CreatedDate or a date field of the record"
    )
    shared_counter: str | None = Field(
        None,
        description="the shared counter the field draws from with its other members (None: a counter "
        "of its own); its counters are that counter's",
    )


@dataclass(frozen=True)
class FieldFilter:
    """Which autonumber fields to list: object and field by substring (any case), scope and status
    exactly; empty means any."""

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


def find_fields(platform: Platform, where: FieldFilter | None = None) -> list[FieldView]:
    """Every autonumber field (or those `where` keeps) on a running platform, with its most recently
    used counters."""
    snap = platform.catalog.current()
    keep = where or FieldFilter()
    rows = [
        r
        for obj in sorted(snap.fields)
        for r in snap.fields[obj]
        if r.format is not None and keep.keeps(r, r.field_id in snap.quarantined)
    ]
    return field_views(platform.db, snap, rows)


def field_view(platform: Platform, field: str) -> FieldView:
    """One autonumber field (by id or `Object.Field`) on a running platform."""
    snap = platform.catalog.current()
    [out] = field_views(platform.db, snap, [snap.stored(field)])
    return out


def field_views(
    db: Engine, snap: CatalogSnapshot, rows: Sequence[StoredRule], *, per_field: int | None = MAX_SCOPES_SHOWN
) -> list[FieldView]:
    """The views of stored rows: the global counter first, then the most recently used scopes
    (at most `per_field`, None: all)."""
    counters = _counters(db, sorted({r.counter_id for r in rows}), per_field)
    return [_view(snap, row, counters[row.counter_id]) for row in rows]


def _counters(db: Engine, field_ids: list[str], per_field: int | None) -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {fid: [] for fid in field_ids}
    if not field_ids:
        return out
    t = counter_table
    stmt = (
        sa.select(t.c.field_id, t.c.scope_key, t.c.next_value)
        .where(t.c.field_id.in_(field_ids))
        .order_by(t.c.field_id, t.c.last_modified_date.desc(), t.c.scope_key)
    )
    with db.connect() as conn:
        for fid, key, nxt in conn.execute(stmt):
            rows = out[fid]
            if per_field is None or len(rows) < per_field or key == "":
                rows.append((key, int(nxt)))
    for rows in out.values():
        rows.sort(key=lambda r: r[0] != "")
    return out


def _view(snap: CatalogSnapshot, row: StoredRule, counters: list[tuple[str, int]]) -> FieldView:
    rule = snap.rules.get(row.field_id)
    return FieldView(
        field_id=row.field_id,
        object=row.info.object,
        field=row.info.name,
        format=row.format or "",
        scope=row.scope,
        start=row.start,
        counter_width=rule.format.counter_width if rule else _width(row.format),
        status="quarantined" if row.field_id in snap.quarantined else "ok",
        reason=snap.quarantined.get(row.field_id),
        counters=[
            CounterView(
                scope_key=k, next_value=n, next_number=None if rule is None else render_in_scope(rule, k, n)
            )
            for k, n in counters
        ],
        numbering="gapless" if row.numbering == "gapless" else "standard",
        time_zone=row.time_zone,
        token=row.token,
        allocation=row.allocation,
        fiscal_year_start=row.fiscal_year_start,
        date_source=describe_date_source(row.date_src, row.date_field),
        shared_counter=row.shared_counter,
    )


def _width(fmt: str | None) -> int | None:
    """The counter width of a stored format that does not parse as a rule (None if unreadable)."""
    try:
        return parse_format(fmt).counter_width if fmt else None
    except FormatError:
        return None
