"""The width of an autonumber field's column (`field set|add --length N`, docs/changing-rules.md).

A custom object's column (the product's own table) is widened, or narrowed down to its longest
stored value and no further. An adopted table (the application's own) is never altered: the field
follows the width the application gave its column, and a wider one is refused with the width to
give it. The format's longest value must still fit (rule 5), checked against the new width.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.db import dialect_for
from autonumber.db.guard import authorized
from autonumber.db.tables import system_field
from autonumber.errors import RuleChangeRefused
from autonumber.identifiers import check_api_name

MAX_LENGTH = 255


@dataclass(frozen=True)
class Resize:
    """A new width for one field: its column altered (`alter`), or MaxLength following the column."""

    name: str
    field_id: str
    table: str
    column: str
    stored: int | None
    """MaxLength before."""
    width: int
    """MaxLength after (and the column's length when `alter`)."""
    physical: int | None
    """The column's length before (what a failed change puts back where DDL commits at once)."""
    alter: bool

    @property
    def line(self) -> str:
        """What the change did, in one line."""
        where = f"{self.table}.{self.column}"
        if self.alter:
            return f"column {where}: length {self.physical or self.stored} → {self.width}"
        return f"{self.name}: length {self.stored} → {self.width}, as the application's column {where} is"


def column_length(conn: Connection, table: str, column: str) -> int | None:
    """The declared length of a text column (None: unbounded or not a sized type)."""
    for col in sa.inspect(conn).get_columns(table):
        if col["name"] == column:
            return getattr(col["type"], "length", None)
    return None


def longest_value(conn: Connection, table: str, column: str) -> int:
    """The length in characters of the longest value the column holds (0 when empty)."""
    check_api_name(table.lstrip("_"), "table name")
    check_api_name(column, "field name")
    col = sa.column(column, sa.String())
    stmt = sa.select(sa.func.max(dialect_for(conn).text_length(col))).select_from(sa.table(table, col))
    return int(conn.execute(stmt).scalar() or 0)


def plan_resize(
    conn: Connection,
    name: str,
    field_id: str,
    table: str,
    column: str,
    stored: int | None,
    wanted: int | None,
    *,
    adopted: bool,
) -> Resize | None:
    """The resize `wanted` asks for (None: nothing to do), or RuleChangeRefused naming what to do.

    On an adopted table `wanted` None still follows a column the application resized itself."""
    if wanted is not None and not 1 <= wanted <= MAX_LENGTH:
        raise RuleChangeRefused(name, f"length {wanted} is not between 1 and {MAX_LENGTH}")
    physical = column_length(conn, table, column)
    if adopted:
        if wanted is not None and physical is not None and physical < wanted:
            raise RuleChangeRefused(
                name,
                f"length {wanted}: {table} is the application's own table and autonumber never alters "
                f"it; widen {table}.{column} to at least {wanted} characters in the application's "
                f"schema (it holds {physical}), then run this again",
            )
        if physical is None or physical == stored:
            return None
        return Resize(name, field_id, table, column, stored, physical, physical, alter=False)
    physical = dialect_for(conn).enforced_length(physical)  # None: MaxLength is the only width
    if wanted is None or (wanted == stored and wanted == (physical or wanted)):
        return None
    longest = longest_value(conn, table, column)
    if wanted < longest:
        raise RuleChangeRefused(
            name,
            f"length {wanted}: the longest stored value of {table}.{column} is {longest} characters; "
            f"keep at least {longest}",
        )
    return Resize(name, field_id, table, column, stored, wanted, physical, alter=True)


def apply_resize(conn: Connection, resize: Resize) -> None:
    """Alter the column (a custom object's) to the new width; the caller writes MaxLength."""
    if resize.alter:
        dialect_for(conn).resize_text_column(conn, resize.table, resize.column, resize.width)


def undo_resize(conn: Connection, resize: Resize) -> None:
    """Put a column back to its width before (where DDL committed at once and the change failed)."""
    if resize.alter and resize.physical is not None and resize.physical != resize.width:
        dialect_for(conn).resize_text_column(conn, resize.table, resize.column, resize.physical)


def write_length(conn: Connection, resize: Resize) -> None:
    """Store the field's new MaxLength."""
    with authorized(conn):
        conn.execute(
            sa.update(system_field).where(system_field.c.Id == resize.field_id).values(MaxLength=resize.width)
        )
