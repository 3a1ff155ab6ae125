"""Streaming a target column and reading the counters out of its values (§8.2 steps 3.a–3.c).

One query per column, streamed in pages of 10,000 (`stream_results` + `yield_per`: a server-side
cursor on PostgreSQL and MySQL), so memory stays flat. Keyset pagination by `Id` was measured too: it
is no faster on MariaDB, and on PostgreSQL a table without fresh statistics gets a sequential scan and
sort per page (quadratic), 48k rows/s at 1M rows against 675k for the cursor.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog import Rule
from autonumber.db.objects import key_column
from autonumber.errors import SeedLimitError, SeedParseError
from autonumber.format.scan import ScanPattern
from autonumber.progress import Advance

PAGE = 10_000
MAX_BUCKETS = 3_650
"""At most ten years of per-day buckets per field (§8.2 P2-R3); more means pathological data."""


@dataclass
class ColumnScan:
    """The largest counter per scope key seen in a column, how many values were read, and how many
    of those only an older format reads (with the largest counter among them)."""

    buckets: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    older: int = 0
    older_max: int = 0


def pages(conn: Connection, table: sa.Table, column: str, page: int = PAGE) -> Iterator[Sequence[Any]]:
    """(Id, value) rows with a non-NULL value, `page` at a time, from one streamed query."""
    col = table.c[column]
    stmt = sa.select(key_column(table), col).where(col.is_not(None))
    first = conn.execute(stmt.limit(page)).all()  # most columns fit one page: one round trip
    if len(first) < page:
        if first:
            yield first
        return
    with conn.execution_options(stream_results=True, yield_per=page).execute(stmt) as result:
        yield from result.partitions()  # leaving early (a parse error) closes the cursor


class _Reader:
    """Counter and scope key of a value: the compiled regex per row, the full ScanPattern.match
    (date validity, scope key) once per distinct non-counter part, since only that part decides."""

    CACHE = 100_000

    def __init__(self, rule: Rule) -> None:
        self.pattern = rule.format.scan_pattern()
        self.scope = rule.scope
        self.counter_at = self.pattern.regex.groupindex["counter"] - 1
        self.keys: dict[tuple[str | Any, ...], str | None] = {}

    def read(self, value: str) -> tuple[int, str] | None:
        m = self.pattern.regex.fullmatch(value)
        if m is None:
            return None
        groups = m.groups()
        at = self.counter_at
        rest = groups[:at] + groups[at + 1 :]
        key = self.keys.get(rest, "\0")
        if key == "\0":
            full = self.pattern.match(value)
            key = None if full is None else ("" if self.scope == "global" else full.scope_key(self.scope))
            if len(self.keys) >= self.CACHE:
                self.keys.clear()
            self.keys[rest] = key
        return None if key is None else (int(groups[at]), key)


class _Older:
    """The counter of a value only an earlier format reads, with _Reader's per-part cache."""

    def __init__(self, patterns: Sequence[ScanPattern]) -> None:
        self.readers = [(p, p.regex.groupindex["counter"] - 1, dict[tuple[Any, ...], bool]())
                        for p in patterns]

    def counter(self, value: str) -> int | None:
        for pattern, at, valid in self.readers:
            m = pattern.regex.fullmatch(value)
            if m is None:
                continue
            groups = m.groups()
            rest = groups[:at] + groups[at + 1 :]
            ok = valid.get(rest)
            if ok is None:
                ok = pattern.match(value) is not None
                if len(valid) >= _Reader.CACHE:
                    valid.clear()
                valid[rest] = ok
            if ok:
                return int(groups[at])
        return None


def scan_rule(
    conn: Connection,
    rule: Rule,
    table: sa.Table,
    advance: Advance | None = None,
    max_buckets: int = MAX_BUCKETS,
    older: Sequence[ScanPattern] = (),
) -> ColumnScan:
    """Match every stored value of the rule's column; SeedParseError on the first that does not fit.

    Fail closed: a value neither the format nor one of its `older` formats (history.py) can have
    produced stops the seed. A value only an older format reads cannot collide with a new one, so it
    is counted in `ColumnScan.older` and feeds no bucket.
    """
    reader = _Reader(rule)
    read = reader.read
    older_counter = _Older(older).counter
    out = ColumnScan()
    buckets = out.buckets
    for rows in pages(conn, table, rule.field_name):
        for row_id, value in rows:
            found = read(value)
            if found is None:
                old = older_counter(value)
                if old is not None:
                    out.older += 1
                    out.older_max = max(out.older_max, old)
                    continue
                raise SeedParseError(rule.name, rule.field_id, str(row_id), value, reader.pattern.pattern)
            counter, key = found
            best = buckets.get(key)
            if best is None:
                if len(buckets) >= max_buckets:
                    raise SeedLimitError(
                        f"autonumber seed: field {rule.name} (field_id={rule.field_id}) spans more "
                        f"than {max_buckets} {rule.scope} buckets (row Id={row_id}, value {value!r}); "
                        "fix the data or the scope and re-run"
                    )
                buckets[key] = counter
            elif counter > best:
                buckets[key] = counter
        out.rows += len(rows)
        if advance is not None:
            advance(len(rows))
    return out
