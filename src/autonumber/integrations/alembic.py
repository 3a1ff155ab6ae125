"""Alembic autogenerate filters that leave autonumber's own schema alone (docs/integrations.md).

An application's `target_metadata` does not declare the product's `_System_*` tables, nor the
UNIQUE index the product adds on each autonumber column: without these filters `alembic revision
--autogenerate` writes `op.drop_table` / `op.drop_index` for them. Pass both to
`context.configure(include_name=include_name, include_object=include_object)` in `env.py`.
Nothing here imports Alembic: the functions only look at the names and objects they are given.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa

from autonumber.db.tables import PRODUCT_METADATA
from autonumber.db.unique import index_name

PRODUCT_TABLES: frozenset[str] = frozenset(name for md in PRODUCT_METADATA for name in md.tables)
"""The names of every table the product defines (autonumber.db.tables.PRODUCT_METADATA)."""


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic's `include_name` hook: skip reflecting the product's tables (never compared)."""
    return not (type_ == "table" and name in PRODUCT_TABLES)


def include_object(
    obj: sa.schema.SchemaItem,
    name: str | None,
    type_: str,
    reflected: bool,
    compare_to: sa.schema.SchemaItem | None,
) -> bool:
    """Alembic's `include_object` hook: leave out the product's tables (and anything on them) and
    the product's UNIQUE index on an autonumber column that the models do not declare."""
    if type_ == "table":
        return name not in PRODUCT_TABLES
    table = getattr(obj, "table", None)
    if isinstance(table, sa.Table) and table.name in PRODUCT_TABLES:
        return False
    return not (reflected and compare_to is None and is_product_index(obj))


def is_product_index(obj: sa.schema.SchemaItem) -> bool:
    """A one-column UNIQUE index (or constraint) named as the product names the index it adds on an
    autonumber column (`autonumber.db.unique.index_name`)."""
    if isinstance(obj, sa.Index):
        unique = bool(obj.unique)
    elif isinstance(obj, sa.UniqueConstraint):
        unique = True
    else:
        return False
    columns = list(obj.columns)
    table = getattr(obj, "table", None)
    if not unique or len(columns) != 1 or not isinstance(table, sa.Table):
        return False
    return obj.name == index_name(table.name, columns[0].name)


__all__ = ["PRODUCT_TABLES", "include_name", "include_object", "is_product_index"]
