"""Changing a rule from the console and `PUT /api/autonumber/fields/{id}`: thin over `autonumber.rules`.

The same `rules.set_rule` as `autonumber field set`, so both give the same answer to the same change
(RuleChangeRefused, FormatError or the change's lines); the catalog is refreshed afterwards.
"""

from __future__ import annotations

from autonumber.catalog import FieldRow
from autonumber.errors import RuleChangeRefused, UnknownField
from autonumber.platform import Platform
from autonumber.rules import FieldChange, set_rule

__all__ = ["RuleChangeRefused", "change_format", "field_row"]


def field_row(platform: Platform, field: str) -> FieldRow:
    """The `_System_Field` row of an autonumber field (by id or `Object.Field`), or UnknownField."""
    snapshot = platform.catalog.current()
    fid = snapshot.field_id(field)
    for rows in snapshot.fields.values():
        for row in rows:
            if row.id == fid and row.format is not None:
                return row
    raise UnknownField(field, "field has no autonumber rule")


def change_format(platform: Platform, field: str, new_format: str | None = None, *,
                  scope: str | None = None, start: int | None = None, numbering: str | None = None,
                  time_zone: str | None = None) -> FieldChange:
    """Change an autonumber field's rule (what is not given stays as stored); return what changed."""
    row = field_row(platform, field)
    _, done = set_rule(platform.db, row.info.object, row.info.name, new_format, scope=scope, start=start,
                       numbering=numbering, time_zone=time_zone)
    platform.catalog.refresh()
    return done
