"""`setup verify`: rows left without a number after their field was numbering (V1).

A row inserted with its number NULL after numbered rows exist came from a writer that bypassed
the product (a Core insert from a process that never called `autonumbered()`, a raw SQL script).
"After" is read from the table's own order: an integer primary key above the smallest numbered
row's key, or else a `CreatedDate` later than the earliest numbered row's. Rows older than every
number (a field added to a table with data, not yet backfilled) are not reported, nor a row that
carries the number of another autonumber field of its object: it was written by something that knew
the numbers (a restore, an import of one field's legacy values), not by a writer that bypassed them.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.db.tables import field_format_history


def numberless_after(conn: Connection, snapshot: CatalogSnapshot, rule: Rule) -> tuple[int, str] | None:
    """(how many, the first one's key) of the rows with no number written after numbered rows."""
    table = snapshot.table(rule.object_name)
    column = table.c[rule.field_name]
    order = _order_column(table)
    if order is None:
        return None
    first = sa.select(sa.func.min(order)).where(column.is_not(None)).scalar_subquery()
    siblings = [table.c[r.field_name] for r in snapshot.rules.values() if r.object_name == rule.object_name]
    late = sa.and_(column.is_(None), order > first, *(c.is_(None) for c in siblings))
    since = _rule_since(conn, rule)
    if since is not None and "CreatedDate" in table.c:  # rows from before the rule as it is now
        late = sa.and_(late, table.c["CreatedDate"] >= since)  # (e.g. while it was removed) are not
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


def _rule_since(conn: Connection, rule: Rule) -> object:
    """When the field's current format last became current (a field removed and added again
    starts anew); None when its history does not say."""
    h = field_format_history
    stmt = sa.select(sa.func.max(h.c.effective_from)).where(h.c.field_id == rule.field_id)
    return conn.execute(stmt).scalar()
