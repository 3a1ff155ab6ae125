"""Numbering the rows that exist when a field becomes an autonumber field (docs/changing-rules.md).

Rows whose column is NULL are numbered in `CreatedDate` then `Id` order (an adopted table without
`CreatedDate`: its key order), a batch at a time. Each batch is one transaction: it locks its rows
(`FOR UPDATE`; SQLite's write lock), reserves one range per counter scope through the engine, the
same path an insert takes, and writes the numbers. A batch either commits whole or not at all, so a
backfill killed at any point resumes where it stopped: the next run numbers the rows still NULL, no
row is numbered twice (a numbered row is never selected again) and none is skipped. Writers that
insert meanwhile take their numbers from the same counter when they insert, so a new record's
number may fall between two batches; a number is never handed out twice. The values a killed batch
had reserved are gaps the reservation journal explains (its process died), as for any insert.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .catalog.cache import Rule
from .db.objects import key_column
from .engine.journal import Pending, track
from .engine.record_dates import record_dates
from .errors import UnknownField
from .runtime import Platform
from .write.skips import skip_tries, skipped_stored

BACKFILL_BATCH = 1_000
"""Rows per batch: one transaction and one reservation per counter scope each."""
Progress = Callable[[int, int], None]
"""Hears (rows numbered so far, rows to number) after each committed batch."""


@dataclass(frozen=True)
class BackfillResult:
    """What a backfill did: the field, the rows numbered, the batches committed, the first and last
    number given (None when there was nothing to number)."""

    field_id: str
    field: str
    rows: int
    batches: int
    first: str | None = None
    last: str | None = None

    @property
    def line(self) -> str:
        """One line for the CLI."""
        if not self.rows:
            return f"{self.field}: no row to backfill (every row has a number)"
        return (
            f"{self.field}: backfilled {self.rows} row(s) in {self.batches} batch(es), "
            f"{self.first} … {self.last}"
        )


def _order(table: sa.Table) -> list[sa.ColumnElement[Any]]:
    """CreatedDate then the key (Id on the platform's tables); the key alone where there is none."""
    created = [table.c.CreatedDate] if "CreatedDate" in table.c else []
    return [*created, key_column(table)]


def backfill(
    platform: Platform, field: str, *, batch_size: int = BACKFILL_BATCH, progress: Progress | None = None
) -> BackfillResult:
    """Number every row of the field (id or `Object.Field`) whose column is NULL; see the module doc.

    The keys of the rows to number are read once, in order (one sorted scan, no index needed); each
    batch then locks its rows by key and numbers those still NULL. A pass repeats while rows without
    a number remain (rows another program inserted meanwhile without one)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    snapshot = platform.catalog.current()
    rule = snapshot.rule(field)  # UnknownField / RuleQuarantined before anything is read
    table = snapshot.table(rule.object_name)
    if rule.field_name not in table.c:
        raise UnknownField(rule.name, "the object's table has no such column")
    done = batches = 0
    first: str | None = None
    last: str | None = None
    while todo := _todo(platform, table, rule.field_name):
        total = done + len(todo)
        for at in range(0, len(todo), batch_size):
            numbers = _skipping(platform, rule, table, todo[at : at + batch_size])
            if numbers:
                done += len(numbers)
                batches += 1
                first = first or numbers[0]
                last = numbers[-1]
            if progress is not None:
                progress(done, total)
    return BackfillResult(rule.field_id, rule.name, done, batches, first, last)


def _skipping(platform: Platform, rule: Rule, table: sa.Table, keys: list[Any]) -> list[str]:
    """One batch in a transaction of its own, written again with new numbers when one of them was
    already stored by a row written outside the product (docs/engine.md, "Values stored behind the
    counter's back")."""
    tries = skip_tries(platform.engine)
    while True:
        written: list[dict[str, Any]] = []
        try:
            with platform.db.begin() as conn:
                return _batch(platform, conn, rule.field_id, table, rule.field_name, keys, written)
        except sa.exc.DBAPIError as exc:
            if not skipped_stored(
                platform.engine, platform.catalog, exc, rule.object_name, written, None, tries.again()
            ):
                raise


def _dated_by(rule: Rule, table: sa.Table) -> str | None:
    """The column that dates a row as its insert dated it: the rule's date field, or the row's own
    CreatedDate for a rule dated by it (an insert stores the clock sample it is dated by there);
    None: the clock (an adopted table without CreatedDate has no older instant to go by)."""
    if rule.date_src == "created_date" and "CreatedDate" in table.c:
        return "CreatedDate"
    return rule.date_field


def _todo(platform: Platform, table: sa.Table, column: str) -> list[Any]:
    """The keys of the rows without a number, in numbering order."""
    key = key_column(table)
    stmt = sa.select(key).where(table.c[column].is_(None)).order_by(*_order(table))
    with platform.db.connect() as conn:
        return list(conn.execute(stmt.execution_options(stream_results=True, yield_per=10_000)).scalars())


def _batch(
    platform: Platform,
    conn: Connection,
    field_id: str,
    table: sa.Table,
    column: str,
    keys: list[Any],
    written: list[dict[str, Any]],
) -> list[str]:
    """Lock the batch's rows still without a number, number them in order and write the numbers
    (also into `written`, which the caller reads when the database refuses one)."""
    col = table.c[column]
    key = key_column(table)
    stmt = sa.select(table).where(key.in_(keys))  # by key only: an IS NULL here picks the column's index
    locked = conn.execute(platform.dialect.for_update(stmt))
    found = {r._mapping[key.name]: dict(r._mapping) for r in locked if r._mapping[column] is None}
    rows = [found[k] for k in keys if k in found]
    if not rows:
        return []
    rule = platform.engine.rule(field_id)
    assigned = platform.engine.assign(
        field_id, rows, conn, dates=record_dates(rule, rows, _dated_by(rule, table))
    )
    if assigned.detached:  # reserved off this transaction: a rollback leaves journaled gaps
        reserver = platform.engine.reserver
        track(conn, Pending(reserver.journal, reserver.db, assigned.detached))
    written += [{column: v} for v in assigned.values]
    update = (
        sa.update(table)
        .where(key == sa.bindparam("b_key"), col.is_(None))
        .values({column: sa.bindparam("b_value")})
    )
    conn.execute(
        update, [{"b_key": r[key.name], "b_value": v} for r, v in zip(rows, assigned.values, strict=True)]
    )
    return assigned.values
