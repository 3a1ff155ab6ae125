"""A rule dated by the record itself (docs/formats.md, "date source"): each record's own date or
datetime field, read before any number is reserved; a record without one fails closed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, tzinfo
from typing import Any

from autonumber.catalog.cache import Rule
from autonumber.errors import RecordError


def as_instant(value: Any, zone: tzinfo) -> datetime | None:
    """A record's date value as an aware instant: a datetime as it is, a naive one as UTC (what the
    product stores, write/values.py); a date as its midnight on the field's calendar `zone`; ISO text is
    parsed. None when the value is empty or not a date."""
    if isinstance(value, str):
        value = _parsed(value.strip())
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=zone)
    return None


def _parsed(text: str) -> date | None:
    """ISO text as a date (a day alone) or a datetime; None when it is neither."""
    for parse in (date.fromisoformat, datetime.fromisoformat):
        try:
            return parse(text)
        except ValueError:
            pass
    return None


def record_dates(
    rule: Rule, records: Sequence[Mapping[str, Any]], name: str | None = None
) -> list[datetime] | None:
    """Each record's date from its field `name` (default: the rule's date field; None: the rule
    uses the clock); RecordError naming the field and the record when one has no usable date."""
    name = name or rule.date_field
    if name is None:
        return None
    out: list[datetime] = []
    for i, record in enumerate(records):
        found = as_instant(record.get(name), rule.zone)
        if found is None:
            which = record.get("Id") or f"#{i + 1}"
            raise RecordError(
                f"{rule.name} is dated by {rule.object_name}.{name}, and record {which} has "
                f"{'no ' + name if record.get(name) in (None, '') else 'no date in ' + name}; "
                "nothing was written and no number was taken"
            )
        out.append(found)
    return out
