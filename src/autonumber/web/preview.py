"""Live preview of a format: the grammar's check + render with sample values, never a counter read."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from autonumber.catalog.cache import CatalogSnapshot
from autonumber.format import FormatReport, check_format
from autonumber.format.dates import check_fiscal_year_start
from autonumber.format.zones import check_instant, local_time, zone_of
from autonumber.rules import carried_overrides
from autonumber.write.values import check_text

from .models import PreviewIn, PreviewOut


def preview(snapshot: CatalogSnapshot, req: PreviewIn) -> PreviewOut:
    """Check `req.format` (metadata rules too when an object is named) and render one sample value."""
    obj, target, scope, token_refs, zone = req.object, None, req.scope, None, req.time_zone
    fiscal = req.fiscal_year_start
    if req.field:
        name = req.field if "." in req.field or not obj else f"{obj}.{req.field}"
        row = snapshot.stored(name, autonumber=False)
        obj, target, token_refs = row.info.object, row.info.name, row.token_refs
        scope = scope or row.scope
        zone = zone or row.time_zone
        fiscal = fiscal or row.fiscal_year_start
    scope = scope or "global"
    if obj is not None:
        snapshot.require_object(obj)
        report = check_format(
            req.format,
            scope=scope,
            catalog=snapshot,
            source_object=obj,
            target_field=target,
            overrides=list(carried_overrides(token_refs, req.format)) or None,
        )
    else:
        report = check_format(req.format, scope=scope)
    return _render(
        report, req, obj, zone_of(zone or "UTC"), check_fiscal_year_start(fiscal or 1, "fiscal_year_start")
    )


def _render(report: FormatReport, req: PreviewIn, obj: str | None, zone: tzinfo, fiscal: int) -> PreviewOut:
    fmt = report.format
    if req.at is not None:
        at = req.at if req.at.tzinfo is not None else req.at.replace(tzinfo=UTC)
    else:
        day = req.date or local_time(datetime.now(UTC), zone).date()
        at = datetime(day.year, day.month, day.day, tzinfo=zone)
    check_instant(at, zone)
    values = {
        check_text(k, "a sample value's name"): check_text(v, f"the sample value of {k}")
        for k, v in req.values.items()
        if v
    }
    defaulted = []
    for ref in fmt.cross_refs:
        if ref.key not in values and ref.default is None:
            values[ref.key] = f"‹{ref.field}›"
            defaulted.append(ref.key)
    value = fmt.render(
        req.counter, at, values, field_id=req.field or "preview", zone=zone, fiscal_year_start=fiscal
    )
    return PreviewOut(
        value=value,
        format=fmt.source,
        scope=report.scope,
        scope_key=fmt.scope_key(report.scope, at, values, zone=zone, fiscal_year_start=fiscal),
        counter_width=fmt.counter_width,
        date_tokens=list(fmt.date_kinds),
        cross_tokens=[r.key for r in fmt.cross_refs],
        samples_defaulted=defaulted,
        max_length=report.max_length,
        checked_against=obj,
    )
