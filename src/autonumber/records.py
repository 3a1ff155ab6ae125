"""Record persistence: numbers are assigned, `RecordBeforeCreate` is published, then the row is
inserted (spec §3.2). Autonumber fields cannot be supplied by the caller nor changed later."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.engine import Engine as SAEngine

from .catalog import Catalog, CatalogSnapshot
from .db.base import to_utc
from .db.objects import key_column
from .engine import Engine
from .errors import RecordError, RecordNotFound, RuleQuarantined
from .events import EventBus, RecordBeforeCreate

SYSTEM_COLUMNS = ("Id", "CreatedDate")
SCALARS = (str, int, float, bool, Decimal)


def new_id() -> str:
    """A platform-generated record Id."""
    return uuid.uuid4().hex


def _plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, datetime):
            value = to_utc(value).isoformat()  # drivers return naive UTC; say so
        elif isinstance(value, Decimal):
            value = float(value)
        out[key] = value
    return out


class Records:
    """insert / insert_many / get / list / update for the objects of the catalog."""

    def __init__(self, db: SAEngine, catalog: Catalog, engine: Engine, events: EventBus) -> None:
        self._db = db
        self.catalog = catalog
        self.engine = engine
        self.events = events

    @contextmanager
    def _txn(self, conn: Connection | None) -> Iterator[Connection]:
        if conn is not None:
            yield conn
            return
        with self._db.connect() as own, self.engine.dialect.begin_write(own):
            yield own

    def insert(
        self, object_name: str, data: Mapping[str, Any], conn: Connection | None = None
    ) -> dict[str, Any]:
        """Insert one record; return it as stored, autonumbers included."""
        return self.insert_many(object_name, [data], conn)[0]

    def insert_many(
        self, object_name: str, rows: Sequence[Mapping[str, Any]], conn: Connection | None = None
    ) -> list[dict[str, Any]]:
        """Insert many records of one object; each autonumber field is assigned with one batch."""
        snapshot = self.catalog.current()
        table = snapshot.table(object_name)
        records = [
            self._checked(snapshot, object_name, table, row, f"{object_name} record #{i + 1}")
            for i, row in enumerate(rows)
        ]
        if not records:
            return []
        self._refuse_quarantined(snapshot, object_name)
        adopted = snapshot.is_adopted(object_name)
        with self._txn(conn) as c:
            at = None
            rules = snapshot.rules_of(object_name)
            # Every token resolves before any reservation: one that fails closed consumes no number.
            crosses = [self.engine.resolve(rule.field_id, records, c) for rule in rules]
            for rule, cross in zip(rules, crosses, strict=True):
                assigned = self.engine.assign(rule.field_id, records, c, cross=cross)
                at = assigned.assigned_at
                for record, value in zip(records, assigned.values, strict=True):
                    record[rule.field_name] = value
            if not adopted:
                created = at if at is not None else self.engine.dialect.utc_now(c)
                for record in records:
                    record["CreatedDate"] = created
            self.events.publish(RecordBeforeCreate(object_name, records, c))
            if adopted:
                _insert_adopted(c, table, records)
            else:
                c.execute(sa.insert(table), records)
        return [_plain({col.name: r.get(col.name) for col in table.c}) for r in records]

    def check(self, object_name: str, data: Mapping[str, Any], where: str) -> None:
        """Validate one record without writing; a RecordError names `where` (e.g. `file.jsonl:3`)."""
        snapshot = self.catalog.current()
        self._checked(snapshot, object_name, snapshot.table(object_name), data, where)

    def _refuse_quarantined(self, snapshot: CatalogSnapshot, object_name: str) -> None:
        for row in snapshot.fields.get(object_name, ()):
            if row.id in snapshot.quarantined:
                raise RuleQuarantined(row.id, snapshot.quarantined[row.id])

    def _checked(
        self,
        snapshot: CatalogSnapshot,
        object_name: str,
        table: sa.Table,
        data: Mapping[str, Any],
        where: str,
        *,
        allow_id: bool = False,
    ) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise RecordError(f"{where}: expected a JSON object of field values, got {type(data).__name__}")
        autonumbers = set(snapshot.autonumber_fields(object_name))
        adopted = snapshot.is_adopted(object_name)
        record: dict[str, Any] = {}
        for key, value in data.items():
            if key in autonumbers:
                raise RecordError(
                    f"{where}: {object_name}.{key} is an autonumber field; it is assigned on insert "
                    "and cannot be supplied"
                )
            if not adopted and key in SYSTEM_COLUMNS and not (allow_id and key == "Id"):
                raise RecordError(f"{where}: {key} is set by the platform and cannot be supplied")
            if key not in table.c:
                raise RecordError(f"{where}: {object_name} has no field {key!r}")
            record[key] = self._value(where, object_name, table.c[key], value)
        if not adopted:
            record["Id"] = new_id()
        return record

    @staticmethod
    def _value(where: str, object_name: str, column: sa.Column[Any], value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, SCALARS):
            raise RecordError(
                f"{where}: {object_name}.{column.name} must be a scalar, got {type(value).__name__}"
            )
        length = getattr(column.type, "length", None)
        if isinstance(column.type, sa.String):
            if not isinstance(value, str):
                raise RecordError(f"{where}: {object_name}.{column.name} must be text, got {value!r}")
            if length is not None and len(value) > length:
                raise RecordError(
                    f"{where}: {object_name}.{column.name} is {len(value)} characters; at most {length} fit"
                )
        if isinstance(column.type, sa.DateTime | sa.Date) and isinstance(value, str):
            return _when(where, object_name, column, value)
        return value

    def get(self, object_name: str, record_id: str, conn: Connection | None = None) -> dict[str, Any]:
        """One record by Id, or RecordNotFound."""
        table = self.catalog.current().table(object_name)
        stmt = sa.select(table).where(_key_equals(table, object_name, record_id))
        if conn is not None:
            row = conn.execute(stmt).mappings().first()
        else:
            with self._db.connect() as own:
                row = own.execute(stmt).mappings().first()
        if row is None:
            raise RecordNotFound(object_name, record_id)
        return _plain(row)

    def list(self, object_name: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """A page of records, newest first."""
        table = self.catalog.current().table(object_name)
        key = key_column(table)
        newest = (table.c.CreatedDate.desc(), key) if "CreatedDate" in table.c else (key.desc(),)
        stmt = (
            sa.select(table)
            .order_by(*newest)
            .limit(limit)
            .offset(offset)
        )
        with self._db.connect() as conn:
            return [_plain(r) for r in conn.execute(stmt).mappings()]

    def count(self, object_name: str) -> int:
        """How many records an object has."""
        table = self.catalog.current().table(object_name)
        with self._db.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())

    def update(
        self,
        object_name: str,
        record_id: str,
        changes: Mapping[str, Any],
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Change ordinary fields; an autonumber field is refused (locked after create, §7.1.2)."""
        snapshot = self.catalog.current()
        table = snapshot.table(object_name)
        checked = self._checked(snapshot, object_name, table, changes, f"{object_name} {record_id!r}")
        checked.pop("Id", None)
        checked.pop(key_column(table).name, None)
        if not checked:
            return self.get(object_name, record_id, conn)
        with self._txn(conn) as c:
            where = _key_equals(table, object_name, record_id)
            result = c.execute(sa.update(table).where(where).values(checked))
            if result.rowcount == 0:
                raise RecordNotFound(object_name, record_id)
            return self.get(object_name, record_id, c)


def _key_equals(table: sa.Table, object_name: str, record_id: str) -> sa.ColumnElement[bool]:
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


def _insert_adopted(conn: Connection, table: sa.Table, records: list[dict[str, Any]]) -> None:
    """Insert into an application's own table row by row, keeping the key its database generated."""
    key = key_column(table).name
    for record in records:
        result = conn.execute(sa.insert(table), record)
        if record.get(key) is None and result.inserted_primary_key is not None:
            record[key] = result.inserted_primary_key[0]


def _when(where: str, object_name: str, column: sa.Column[Any], text: str) -> datetime | date:
    """An ISO 8601 date or date-time given as text, as the column's Python type."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise RecordError(f"{where}: {object_name}.{column.name} must be an ISO 8601 date or date-time, "
                          f"got {text!r}") from None
    plain_date = isinstance(column.type, sa.Date) and not isinstance(column.type, sa.DateTime)
    return value.date() if plain_date else value
