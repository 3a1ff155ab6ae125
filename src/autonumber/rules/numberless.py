"""`setup verify`: rows left without a number after their field was numbering (V1).

A row inserted with its number NULL after numbered rows exist came from a writer that bypassed
the product (a Core insert from a process that never called `autonumbered()`, a raw SQL script).
"After" is read from the table's own order: an integer primary key above the smallest numbered
row's key, or else a `CreatedDate` later than the earliest numbered row's. Rows older than every
number (a field added to a table with data, not yet backfilled) are not reported.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import CatalogSnapshot, Rule


def numberless_after(conn: Connection, snapshot: CatalogSnapshot, rule: Rule) -> tuple[int, str] | None:
    """(how many, the first one's key) of the rows with no number written after numbered rows."""
    table = snapshot.table(rule.object_name)
    column = table.c[rule.field_name]
    order = _order_column(table)
    if order is None:
        return None
    first = sa.select(sa.func.min(order)).where(column.is_not(None)).scalar_subquery()
    late = sa.and_(column.is_(None), order > first)
    count = int(conn.execute(sa.select(sa.func.count()).select_from(table).where(late)).scalar() or 0)
    if count == 0:
        return None
    key = next(iter(table.primary_key.columns)) if table.primary_key.columns else order
    first_key = conn.execute(sa.select(sa.func.min(key)).where(late)).scalar()
    return count, str(first_key)


def _order_column(table: sa.Table) -> sa.ColumnElement[object] | None:
    """The column rows are written in order of: a single integer primary key, or CreatedDate."""
    keys = list(table.primary_key.columns)
    if len(keys) == 1 and isinstance(keys[0].type, sa.Integer):
        return keys[0]
    if "CreatedDate" in table.c:
        return table.c["CreatedDate"]
    return None
