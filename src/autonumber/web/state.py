"""Small read-only queries the console needs beyond `Records`: counter rows and record types.

Kept out of the routes so the web layer never builds SQL itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.db.objects import key_column
from autonumber.db.tables import system_object, system_record_type


@dataclass(frozen=True)
class RecordTypeOption:
    """A record type as a form offers it: Id, display name and code."""

    id: str
    name: str
    code: str | None


def record_types(conn: Connection | Engine, object_name: str) -> list[RecordTypeOption]:
    """The record types of one object, by display name."""
    rt, obj = system_record_type, system_object
    stmt = (
        sa.select(rt.c.Id, rt.c.Name, rt.c.DeveloperName, rt.c.RecordTypeCode)
        .join(obj, obj.c.Id == rt.c.ObjectId)
        .where(obj.c.ApiName == object_name)
        .order_by(sa.func.coalesce(rt.c.Name, rt.c.DeveloperName))
    )
    with _connection(conn) as c:
        return [RecordTypeOption(r.Id, r.Name or r.DeveloperName, r.RecordTypeCode) for r in c.execute(stmt)]


class _connection:
    """Use a given Connection as is, or open one on an Engine for the duration of a block."""

    def __init__(self, source: Connection | Engine) -> None:
        self._source = source
        self._own: Connection | None = None

    def __enter__(self) -> Connection:
        if isinstance(self._source, Connection):
            return self._source
        self._own = self._source.connect()
        return self._own

    def __exit__(self, *exc: object) -> None:
        if self._own is not None:
            self._own.close()


def rows_by_id(
    conn: Connection | Engine, table: sa.Table, ids: Iterable[str]
) -> dict[str, dict[str, object]]:
    """Several records of one table by Id in one query (to label lookups on a list page)."""
    wanted = sorted({i for i in ids if i})
    if not wanted:
        return {}
    key = key_column(table)
    stmt = sa.select(table).where(key.in_(wanted))
    with _connection(conn) as c:
        return {str(r[key.name]): dict(r) for r in c.execute(stmt).mappings()}
