"""Streaming a target column and reading the counters out of its values (docs/setup.md).

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

from autonumber.catalog.cache import Rule
from autonumber.db.objects import key_column
from autonumber.errors import FormatError, SeedLimitError, SeedParseError
from autonumber.format.scope import prefix_key
from autonumber.format.value_patterns import ScanPattern
from autonumber.progress import Advance

PAGE = 10_000
MAX_BUCKETS = 3_650
"""At most ten years of days for a per_day field; more means pathological data. per_prefix fields
have no cap: their keys multiply days by cross values (4 countries × 9 types × 3,650 days)."""


def bucket_cap(rule: Rule, max_buckets: int = MAX_BUCKETS) -> int | None:
    """The distinct-key limit of a field: `max_buckets` for per_day, none for other scopes."""
    return max_buckets if rule.scope == "per_day" else None


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
    # options on the statement, not the connection: a Connection keeps its options for later writes
    with conn.execute(stmt.execution_options(stream_results=True, yield_per=page)) as result:
        yield from result.partitions()  # leaving early (a parse error) closes the cursor


class _Reader:
    """Counter and scope key of a value: the compiled regex per row; the date check (impossible or
    disagreeing dates) once per distinct date shown; the key from the text around the counter."""

    CACHE = 100_000

    def __init__(self, rule: Rule) -> None:
        self.pattern = rule.format.scan_pattern()
        self.scope = rule.scope
        self.counter_group = self.pattern.regex.groupindex["counter"]
        self.date_groups = self.pattern.date_groups
        self.days: dict[tuple[str | Any, ...], str | None] = {}
        if rule.scope == "per_day" and not rule.format.key_plan.full_date:
            raise FormatError(
                9,
                f"{rule.name}: scope per_day needs a format that shows the full date",
                format=rule.format.source,
            )

    def read(self, value: str) -> tuple[int, str] | None:
        m = self.pattern.regex.fullmatch(value)
        if m is None:
            return None
        shown = (
            m.group(*self.date_groups)
            if len(self.date_groups) > 1
            else ((m.group(self.date_groups[0]),) if self.date_groups else ())
        )
        day = self.days.get(shown, "\0")
        if day == "\0":
            day = self.pattern.day_of(m)
            if len(self.days) >= self.CACHE:
                self.days.clear()
            self.days[shown] = day
        if day is None:
            return None
        counter = int(m.group(self.counter_group))
        if self.scope == "global":
            return counter, ""
        if self.scope == "per_day":
            return counter, day
        start, end = m.span(self.counter_group)
        return counter, prefix_key(value[:start], value[end:] if self.pattern.has_suffix else None)


class _Older:
    """The counter of a value only an earlier format reads, with _Reader's per-part cache."""

    def __init__(self, patterns: Sequence[ScanPattern]) -> None:
        self.readers = [
            (p, p.regex.groupindex["counter"] - 1, dict[tuple[Any, ...], bool]()) for p in patterns
        ]

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
    cap = bucket_cap(rule, max_buckets)
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
                if cap is not None and len(buckets) >= cap:
                    raise SeedLimitError(
                        f"autonumber seed: field {rule.name} (field_id={rule.field_id}) spans more "
                        f"than {cap} {rule.scope} buckets (row Id={row_id}, value {value!r}); "
                        "fix the data or the scope and re-run"
                    )
                buckets[key] = counter
            elif counter > best:
                buckets[key] = counter
        out.rows += len(rows)
        if advance is not None:
            advance(len(rows))
    return out
