"""Object tables (Account, Order, Case, …) built from catalog metadata; names validated first."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from autonumber.format import FieldInfo
from autonumber.identifiers import check_api_name

from .tables import Timestamp6

ID_LENGTH = 64
NO_COLUMN_TYPES = frozenset({"formula"})


def column_type(field: FieldInfo) -> sa.types.TypeEngine[Any]:
    """The SQL type a field's column gets."""
    kind = field.type.lower()
    if field.is_reference:
        return sa.String(ID_LENGTH)
    if kind in ("integer", "int"):
        return sa.BigInteger()
    if kind in ("number", "currency", "percent"):
        return sa.Numeric(18, 4)
    if kind in ("boolean", "checkbox"):
        return sa.Boolean()
    if kind == "date":
        return sa.Date()  # a calendar day, not an instant
    if kind == "datetime":
        return Timestamp6  # an instant, stored as UTC (write/values.py)
    return sa.String(field.max_length or 255)


def object_table(table_name: str, fields: Sequence[FieldInfo], metadata: sa.MetaData) -> sa.Table:
    """The Core table for one object: `Id`, `CreatedDate`, then one column per stored field."""
    check_api_name(table_name, "table name")
    columns: list[sa.Column[Any]] = [
        sa.Column("Id", sa.String(ID_LENGTH), primary_key=True),
        sa.Column("CreatedDate", Timestamp6, nullable=True),
    ]
    for field in fields:
        if field.type.lower() in NO_COLUMN_TYPES or field.name in ("Id", "CreatedDate"):
            continue
        check_api_name(field.name, "field name")
        columns.append(sa.Column(field.name, column_type(field), nullable=True))
    return sa.Table(table_name, metadata, *columns)


@functools.lru_cache(maxsize=4096)
def shared_object_table(table_name: str, fields: tuple[FieldInfo, ...]) -> sa.Table:
    """object_table, built once per (table, fields) in this process, each in its own MetaData.

    Catalog snapshots come and go; sharing the Table across them keeps SQLAlchemy's compiled-SQL
    cache warm (a Table built afresh never hits it) and skips rebuilding 127 tables per reload.
    """
    return object_table(table_name, fields, sa.MetaData())


def key_column(table: sa.Table) -> sa.Column[Any]:
    """The table's single-column primary key (`Id` on the platform's own tables)."""
    columns = list(table.primary_key.columns)
    if len(columns) != 1:
        raise ValueError(f"table {table.name} has no single-column primary key")
    return columns[0]
