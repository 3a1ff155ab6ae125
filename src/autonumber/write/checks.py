"""A record's values checked before any number is reserved: supplied fields exist and are not
autonumber or system fields, each value fits its column, no rule of the object is quarantined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from ..catalog.cache import CatalogSnapshot
from ..errors import RecordError, RuleQuarantined
from .ids import new_id
from .rows import SYSTEM_COLUMNS, shape
from .values import checked_value


def refuse_quarantined(snapshot: CatalogSnapshot, object_name: str) -> None:
    for row in snapshot.fields.get(object_name, ()):
        if row.field_id in snapshot.quarantined:
            raise RuleQuarantined(row.field_id, snapshot.quarantined[row.field_id])


def checked(
    snapshot: CatalogSnapshot,
    object_name: str,
    table: sa.Table,
    data: Mapping[str, Any],
    where: object,
    *,
    allow_id: bool = False,
) -> dict[str, Any]:
    """The record to write; `where` (text, or a label whose str() is) is formatted only into an
    error, so a streamed import does not build one string per row."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: expected a JSON object of field values, got {type(data).__name__}")
    autonumbers = snapshot.autonumber_field_set(object_name)
    adopted = snapshot.is_adopted(object_name)
    columns = shape(table).columns
    record: dict[str, Any] = {}
    for key, value in data.items():
        if key in autonumbers:
            raise RecordError(
                f"{where}: {object_name}.{key} is an autonumber field; it is assigned on insert "
                "and cannot be supplied"
            )
        if not adopted and key in SYSTEM_COLUMNS and not (allow_id and key == "Id"):
            raise RecordError(f"{where}: {key} is set by the platform and cannot be supplied")
        column = columns.get(key)
        if column is None:
            raise RecordError(f"{where}: {object_name} has no field {key!r}")
        record[key] = checked_value(where, object_name, column, value)
    if not adopted:
        record["Id"] = new_id()
    return record
