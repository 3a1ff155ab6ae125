"""Lookup values of custom objects checked against their target, in the writing transaction.

A custom object's `ref(X)` field must name a stored record of X: every value is looked up with
one `SELECT key WHERE key IN (...)` per field on the insert's (or update's) own connection, before
any number is reserved, so a dangling reference consumes no number and writes nothing. The standard
pack's lookups (`Case.AccountId`, …) keep their documented behaviour and are not checked here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import CatalogSnapshot
from ..db.objects import key_column
from ..errors import RecordError
from ..seeds import autonumber_formats as _seed

STANDARD_OBJECTS = frozenset(name for name, _, _ in _seed.OBJECTS)
"""The standard pack's objects; every other object the platform created is a custom object."""
CHUNK = 500


def is_custom(snapshot: CatalogSnapshot, object_name: str) -> bool:
    """An object created by `object add` (neither the standard pack's nor an adopted table)."""
    return object_name not in STANDARD_OBJECTS and not snapshot.is_adopted(object_name)


def checked_lookups(snapshot: CatalogSnapshot, object_name: str) -> list[tuple[str, str]]:
    """The `(field, target object)` pairs whose values must exist: a custom object's `ref` fields."""
    if not is_custom(snapshot, object_name):
        return []
    return [
        (info.name, info.reference_to)
        for info in snapshot.fields_of(object_name)
        if info.is_reference and info.reference_to is not None
    ]


def check_lookups(
    conn: Connection, snapshot: CatalogSnapshot, object_name: str, records: Iterable[Mapping[str, Any]]
) -> bool:
    """RecordError naming object, field, value and target for the first value not stored in its
    target; whether any was read (a statement was sent on `conn`)."""
    lookups = checked_lookups(snapshot, object_name)
    if not lookups:
        return False
    read = False
    rows = list(records)
    for field_name, target in lookups:
        wanted = list(dict.fromkeys(r[field_name] for r in rows if r.get(field_name) is not None))
        if not wanted:
            continue
        key = key_column(snapshot.table(target))
        found, read = _stored_keys(conn, key, wanted), True
        for value in wanted:
            if _as_key(key, value) not in found:
                raise RecordError(
                    f"{object_name}.{field_name}: {value!r} is not the Id of a stored {target} record"
                )
    return read


def _as_key(key: sa.Column[Any], value: Any) -> Any:
    """The value as the target key's Python type (an adopted table may have an integer key), or None."""
    try:
        kind = key.type.python_type
    except NotImplementedError:
        return str(value)
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def _stored_keys(conn: Connection, key: sa.Column[Any], values: list[Any]) -> set[Any]:
    """Which of `values` are keys of `key`'s table (in chunks, so a large batch stays one IN list each)."""
    keys = [k for k in (_as_key(key, v) for v in values) if k is not None]
    found: set[Any] = set()
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        found.update(conn.execute(sa.select(key).where(key.in_(chunk))).scalars())
    return found
