"""Adopting an application's own table: register it as it is (any single-column primary key), then
adopt one of its text columns as an autonumber field (scan, seed above the maximum, UNIQUE index).

Nothing of the table is altered except the UNIQUE index on an adopted autonumber column, which is
created last, after every check and the seed have passed.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db.tables import system_field, system_object
from autonumber.identifiers import check_api_name
from autonumber.rules.store import RuleSpec
from autonumber.setup.pack import field_id, object_id

from .custom import ObjectDefinitionError


def is_adopted(conn: Connection, object_name: str) -> bool:
    """True when `object_name` is an adopted application table."""
    o = system_object
    key = conn.execute(sa.select(o.c.KeyColumn).where(o.c.ApiName == object_name)).scalar_one_or_none()
    return key is not None


def field_type(column: sa.Column[Any]) -> tuple[str, int | None]:
    """The metadata type (and length) a reflected column is registered with."""
    kind = column.type
    if isinstance(kind, sa.Boolean):
        return "boolean", None
    if isinstance(kind, sa.Integer):
        return "integer", None
    if isinstance(kind, sa.Numeric | sa.Float):
        return "number", None
    if isinstance(kind, sa.DateTime):
        return "datetime", None
    if isinstance(kind, sa.Date):
        return "date", None
    return "text", getattr(kind, "length", None)


def reflect(conn: Connection, table_name: str) -> sa.Table:
    """The application table as the database has it, or ObjectDefinitionError."""
    check_api_name(table_name, "table name")
    if table_name not in sa.inspect(conn).get_table_names():
        raise ObjectDefinitionError(f"table {table_name!r} does not exist")
    return sa.Table(table_name, sa.MetaData(), autoload_with=conn)


def _field_row(object_name: str, column: sa.Column[Any]) -> dict[str, object]:
    kind, length = field_type(column)
    return {
        "Id": field_id(object_name, column.name),
        "ObjectId": object_id(object_name),
        "ApiName": column.name,
        "Label": column.name,
        "Type": kind,
        "MaxLength": length,
    }


def adopt_table(conn: Connection, name: str, table_name: str) -> list[str]:
    """Register an existing table as object `name` (its columns as fields); the table is not touched."""
    check_api_name(name, "object name")
    table = reflect(conn, table_name)
    keys = list(table.primary_key.columns)
    if len(keys) != 1:
        raise ObjectDefinitionError(
            f"table {table_name}: adoption needs a single-column primary key, found {len(keys) or 'none'}"
        )
    for column in table.columns:
        check_api_name(column.name, f"column name of table {table_name}")
    o = system_object
    row = conn.execute(sa.select(o.c.TableName, o.c.KeyColumn).where(o.c.ApiName == name)).first()
    if row is not None:
        if tuple(row) == (table_name, keys[0].name):
            return []
        raise ObjectDefinitionError(f"object {name} already exists (table {row[0]}); choose another name")
    owner = conn.execute(sa.select(o.c.ApiName).where(o.c.TableName == table_name)).scalar_one_or_none()
    if owner is not None:
        raise ObjectDefinitionError(f"table {table_name} already belongs to object {owner}")
    conn.execute(
        sa.insert(o).values(
            Id=object_id(name), ApiName=name, TableName=table_name, Label=name, KeyColumn=keys[0].name
        )
    )
    conn.execute(sa.insert(system_field), [_field_row(name, c) for c in table.columns])
    return [f"object {name} adopts table {table_name} (key {keys[0].name}, {len(table.columns)} columns)"]


def adopt_column(conn: Connection, rule: RuleSpec, table_name: str) -> list[str]:
    """Check an existing text column can hold the rule's numbers (no duplicates) and register it."""
    table = reflect(conn, table_name)
    column = table.c.get(rule.field)
    if column is None:
        raise ObjectDefinitionError(
            f"{rule.name}: table {table_name} has no column {rule.field}; add "
            "it in the application's schema first (an adopted table is not altered)"
        )
    if field_type(column)[0] != "text":
        raise ObjectDefinitionError(
            f"{rule.name}: column {rule.field} is {column.type}, an autonumber column must be text"
        )
    key = next(iter(table.primary_key.columns))
    dupe = conn.execute(
        sa.select(column, sa.func.min(key))
        .where(column.is_not(None))
        .group_by(column)
        .having(sa.func.count() > 1)
        .limit(1)
    ).first()
    if dupe is not None:
        raise ObjectDefinitionError(
            f"{rule.name}: value {dupe[0]!r} is stored more than once (first in row "
            f"{dupe[1]}); autonumbers must be unique, fix the data first"
        )
    f = system_field
    known = conn.execute(
        sa.select(f.c.Id).where(f.c.ObjectId == object_id(rule.object), f.c.ApiName == rule.field)
    ).first()
    if known is not None:
        return []
    conn.execute(sa.insert(f).values(_field_row(rule.object, column)))
    return [f"field {rule.name} registered"]
