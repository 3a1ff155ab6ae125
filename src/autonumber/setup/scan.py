"""Streaming a target column and reading the counters out of its values (§8.2 steps 3.a–3.c).

Keyset pagination by `Id` (pages of 10,000): constant memory on every backend, no server-side cursor
held open for the whole scan, and each page is one short indexed query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import Rule
from autonumber.errors import SeedLimitError, SeedParseError

from .progress import Advance

PAGE = 10_000
MAX_BUCKETS = 3_650
"""At most ten years of per-day buckets per field (§8.2 P2-R3); more means pathological data."""


@dataclass
class ColumnScan:
    """The largest counter per scope key seen in a column, and how many values were read."""

    buckets: dict[str, int] = field(default_factory=dict)
    rows: int = 0


def pages(conn: Connection, table: sa.Table, column: str, page: int = PAGE) -> Iterator[list[Any]]:
    """(Id, value) rows with a non-NULL value, in Id order, `page` at a time."""
    col, ident = table.c[column], table.c.Id
    last: Any = None
    while True:
        stmt = sa.select(ident, col).where(col.is_not(None)).order_by(ident).limit(page)
        if last is not None:
            stmt = stmt.where(ident > last)
        rows = list(conn.execute(stmt))
        if rows:
            yield rows
        if len(rows) < page:
            return
        last = rows[-1][0]


def scan_rule(
    conn: Connection,
    rule: Rule,
    table: sa.Table,
    advance: Advance | None = None,
    max_buckets: int = MAX_BUCKETS,
) -> ColumnScan:
    """Match every stored value of the rule's column; SeedParseError on the first that does not fit.

    Fail closed: nothing is skipped, so a value the format cannot have produced stops the seed.
    """
    pattern = rule.format.scan_pattern()
    match = pattern.match
    scope = rule.scope
    out = ColumnScan()
    buckets = out.buckets
    for rows in pages(conn, table, rule.field_name):
        for row_id, value in rows:
            found = match(value)
            if found is None:
                raise SeedParseError(rule.name, rule.field_id, str(row_id), value, pattern.pattern)
            key = "" if scope == "global" else found.scope_key(scope)
            best = buckets.get(key)
            if best is None:
                if len(buckets) >= max_buckets:
                    raise SeedLimitError(
                        f"autonumber seed: field {rule.name} (field_id={rule.field_id}) spans more "
                        f"than {max_buckets} {scope} buckets (row Id={row_id}, value {value!r}); "
                        "fix the data or the scope and re-run"
                    )
                buckets[key] = found.counter
            elif found.counter > best:
                buckets[key] = found.counter
        out.rows += len(rows)
        if advance is not None:
            advance(len(rows))
    return out
