"""SQL of the MySQL family's one-statement paths: the counter's UPDATE leaves its new value and
clock sample in session variables, and the INSERT that follows builds the numbers from them
(`MySQLDialect.insert_numbered`, `atomic_increment_stamped`)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_types
from sqlalchemy.engine import Connection

from .base import Counter, Numbered
from .driver import kept

NEXT_VARIABLE = "@autonumber_next"
STAMP_VARIABLE = "@autonumber_stamp"
"""Session variables the numbered insert's UPDATE sets for its INSERT: the counter's new value and
the clock sample it stamped."""


def assigned(variable: str, value: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """`(@variable := value)`: MariaDB sets a session variable inside an expression."""
    return sa.literal_column(variable).op(":=")(value).self_group()


LAST_ID = "SELECT LAST_INSERT_ID()"
NEXT_VALUE = f"CAST({NEXT_VARIABLE} AS SIGNED)"
"""The counter's value after the increment as the UPDATE left it in NEXT_VARIABLE: read after an
INSERT, where LAST_INSERT_ID() may be that INSERT's AUTO_INCREMENT value instead."""


def bumped(conn: Connection, carried: int | None) -> int:
    """The value an UPDATE gave LAST_INSERT_ID(expr): carried by its OK packet, except on a table
    with a trigger (the writer fence, db/fence.py), whose OK packet says 0: then read back."""
    return int(carried) if carried else int(conn.exec_driver_sql(LAST_ID).scalar_one())


def variables(counter: Counter) -> sa.CTE:
    """The increment's new value and clock sample, read from the session variables it set, as
    the one row a `line` builder selects from; no row when the increment matched none."""
    next_value = sa.literal_column(NEXT_VARIABLE, sa.BigInteger)
    stamp = sa.cast(sa.literal_column(STAMP_VARIABLE), mysql_types.DATETIME(fsp=6))
    return (
        sa.select(next_value.label(counter.column), stamp.label(counter.clock_column))
        .where(next_value.is_not(None))
        .cte("bumped")
    )


def numbered_insert_text(
    conn: Connection, table: sa.Table, given: tuple[str, ...], number: Numbered, rows: int
) -> str:
    """`INSERT INTO t (given…, number, created) SELECT …, CONCAT(before, LPAD(@next - k, width,
    '0'), after), @stamp … WHERE @next IS NOT NULL RETURNING number, created, @next` for `rows`
    rows (the counter's value rides on every returned row, so no SELECT reads it after; row
    i's own values bound as r<i>_<j>, k = rows - i), made once per table, fields and row count (a
    group holds at most a few). One row selects its values FROM DUAL; several select them from one
    table value constructor (`VALUES (…), (…)`) under a first SELECT of NULLs that names its
    columns: MariaDB took about 65 µs more per row for a UNION ALL of one SELECT per row (a group
    of 7: 650–710 µs against 420–450 µs, by hand)."""

    def make() -> str:
        prep = conn.dialect.identifier_preparer
        names = ", ".join(prep.quote(name) for name in (*given, number.column, number.created))

        def numbered(k: str) -> str:  # the number built from @next and the row's offset k, and @stamp
            return (
                f"CONCAT(%(autonumber_before)s, LPAD({NEXT_VARIABLE} - {k}, {int(number.width)}, '0'), "
                f"%(autonumber_after)s), {STAMP_VARIABLE}"
            )

        returned = f"{prep.quote(number.column)}, {prep.quote(number.created)}"
        into = f"INSERT INTO {prep.format_table(table)} ({names})"
        if rows == 1:
            values = "".join(f"%(r0_{j})s, " for j in range(len(given)))
            select = f"SELECT {values}{numbered('1')} FROM DUAL"
        else:
            columns = [f"c{j}" for j in range(len(given))]
            named = ", ".join(f"NULL AS {c}" for c in (*columns, "k"))
            own = ["".join(f"%(r{i}_{j})s, " for j in range(len(given))) for i in range(rows)]
            constructed = ", ".join(f"({values}{rows - i})" for i, values in enumerate(own))
            picked = "".join(f"v.{c}, " for c in columns)
            select = (
                f"SELECT {picked}{numbered('v.k')} "
                f"FROM (SELECT {named} FROM DUAL WHERE FALSE UNION ALL VALUES {constructed}) AS v"
            )
        return f"{into} {select} WHERE {NEXT_VARIABLE} IS NOT NULL RETURNING {returned}, {NEXT_VALUE}"

    key = ("autonumber.mysql_numbered", given, number.column, number.width, number.created, rows)
    return kept(table, key, make)
