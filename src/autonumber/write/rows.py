"""Rows as the write path stores and returns them: the INSERT of one row or many, an adopted
table's row-by-row insert, a record as JSON-ready values, and one written batch of a stream."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.base import Dialect
from ..db.bulk import by_fields
from ..db.driver import kept, plain_insert, statement, watched
from ..db.objects import key_column
from ..db.replies import to_utc
from ..engine.journal import FAILED, Pending
from ..errors import RecordError, RecordNotFound
from .values import refused_value

SYSTEM_COLUMNS = ("Id", "CreatedDate")
"""Columns the platform sets on its own tables; a caller cannot supply them."""


@dataclass(frozen=True)
class Batch:
    """One written batch of a streamed insert: its rows' labels and the rows as written."""

    labels: list[Any]
    rows: list[dict[str, Any]]
    table: sa.Table

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def last_id(self) -> str:
        """The Id of the batch's last row."""
        return str(self.rows[-1]["Id"])

    def records(self) -> list[dict[str, Any]]:
        """The records as stored, as JSON-ready dicts (made on demand: a quiet import never pays)."""
        return stored_form(self.table, self.rows)


def plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A record as JSON-ready values: timestamps as ISO text in UTC, days as ISO dates, decimals as
    floats."""
    out: dict[str, Any] = dict(row)
    for key, value in row.items():
        if type(value) is str or value is None:  # most values: nothing to convert
            continue
        if isinstance(value, datetime):  # drivers return naive UTC; say so
            out[key] = value.isoformat() + "+00:00" if value.tzinfo is None else to_utc(value).isoformat()
        elif isinstance(value, date):
            out[key] = value.isoformat()
        elif isinstance(value, Decimal):
            out[key] = float(value)
    return out


@dataclass(frozen=True)
class Shape:
    """A table's columns by key and its column names in order, built once per table (kept in
    `table.info`): `table.c`'s own lookups cost more than a one-row insert's every other check."""

    columns: dict[str, sa.Column[Any]]
    names: tuple[str, ...]


def shape(table: sa.Table) -> Shape:
    return kept(
        table,
        ("autonumber.write.records.shape",),
        lambda: Shape({c.key: c for c in table.c}, tuple(c.name for c in table.c)),
    )


def stored_form(table: sa.Table, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The records as `insert` returns them: every column of the table, in its order."""
    names = shape(table).names
    return [plain({name: r.get(name) for name in names}) for r in records]


def record_ids(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Ids a CommitOutcomeUnknown names (the group writer's records: never an adopted table)."""
    return [str(r["Id"]) for r in records]


def failing_gaps(write: Callable[[], None], held: list[Pending]) -> None:
    """Run `write`; when the database refuses it, the held numbers' gap reason is its error (the
    journal records it once the transaction rolls back)."""
    try:
        write()
    except (sa.exc.DBAPIError, RecordError) as exc:  # RecordError: a value an adopted table refused
        for pending in held:
            pending.state, pending.detail = FAILED, (str(getattr(exc, "orig", exc)).splitlines() or [""])[0]
        raise


def first_line(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0][:200] if lines else type(cause).__name__


def insert_rows(
    conn: Connection, table: sa.Table, records: Sequence[Mapping[str, Any]], dialect: Dialect
) -> None:
    """The records' INSERTs: one row on the driver's cursor, many in one round trip per set of
    fields they set (Dialect.insert_many)."""
    if len(records) == 1:  # one row (a caller alone): no shape grouping, the table's own INSERT
        _insert_one(conn, table, records[0])
        return
    for rows in by_fields(records).values():  # callers of one group may set different fields
        if len(rows) == 1:
            conn.execute(plain_insert(table), rows)
        else:
            dialect.insert_many(conn, table, rows)


def _insert_one(conn: Connection, table: sa.Table, record: Mapping[str, Any]) -> None:
    """One row on the driver's cursor (db/driver.py): SQLAlchemy's execute path costs a caller's
    transaction more client CPU than the INSERT itself. Through SQLAlchemy when anything listens
    to the connection's statements (a caller's tracing or logging), so that it sees this one too."""
    if watched(conn):
        conn.execute(plain_insert(table), record)
        return
    fields = tuple(record)

    def build() -> sa.Insert:
        values = {name: sa.bindparam(name, type_=table.c[name].type) for name in fields}
        return sa.insert(table).values(values)

    statement(table, ("insert-one", fields), build, conn.dialect).run(conn, record)


RECORD_SAVEPOINT = "autonumber_record"
"""The savepoint records are written in within a caller's transaction that holds their numbers."""


def key_equals(table: sa.Table, object_name: str, record_id: str) -> sa.ColumnElement[bool]:
    """`key = record_id`, the Id given as text converted to an integer key (adopted tables)."""
    key = key_column(table)
    value: Any = record_id
    if isinstance(key.type, sa.Integer):
        try:
            value = int(record_id)
        except ValueError:
            raise RecordNotFound(object_name, record_id) from None
    condition: sa.ColumnElement[bool] = key == value
    return condition


def insert_adopted(
    conn: Connection, object_name: str, table: sa.Table, records: list[dict[str, Any]], numbered: set[str]
) -> None:
    """Insert into an application's own table row by row, keeping the key its database generated;
    a value its column type refuses is a RecordError naming the field (values.refused_value)."""
    key = key_column(table).name
    for i, record in enumerate(records, 1):
        try:
            result = conn.execute(sa.insert(table), record)
        except sa.exc.StatementError as exc:
            where = f"{object_name} record #{i}"
            given = [name for name in record if name not in numbered]
            refused = refused_value(exc, where, object_name, record, given)
            if refused is None:
                raise
            raise refused from exc
        if record.get(key) is None and result.inserted_primary_key is not None:
            record[key] = result.inserted_primary_key[0]
