"""The gap audit: every value a field's counters moved past that no stored record carries, and why.

For each counter scope the values from the lowest known one (the smallest stored or journaled value,
or `lo`) up to the counter's last issued value (`next_value - 1`, or `hi`) are compared with the
values the field's column holds. Each missing value gets the reason the reservation journal knows:
rolled back, insert failed, skipped by `autonumber counter set`, reserved by a process that died,
still held by a running process, or unknown (no journal line: reserved before the journal existed,
pruned, or the counter was moved). Rule changes keep all of it: retired rows are checked under their
old keys, stored values are read with every rule the field had, and a gap is printed with the rule
in force when it was reserved (rules/timeline.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import CatalogSnapshot, Rule
from autonumber.catalog.shared import counter_id
from autonumber.db.schema import has_table
from autonumber.db.tables import counter_table, setup_state
from autonumber.engine.journal import (
    FAILED,
    MOVED,
    RESERVED,
    ROLLED_BACK,
    SKIPPED,
    lines_for,
    owner_alive,
    who,
)
from autonumber.errors import AutonumberError
from autonumber.format.scope import COUNTER_MARK
from autonumber.rules.floor import retired
from autonumber.rules.history import format_rows, rule_log, utc
from autonumber.rules.timeline import Version, in_force, versions
from autonumber.runtime import Platform

PAGE = 10_000
LogByField = dict[str, list[tuple[datetime | None, dict[str, Any]]]]
UNKNOWN = "unknown: no journal line (reserved before the journal existed, pruned, or the counter was moved)"


@dataclass(frozen=True)
class Gap:
    """A run of consecutive missing values of one scope that share a reason."""

    scope_key: str
    first: int
    last: int
    reason: str
    numbers: str | None = None
    """The run as printed on documents (`00000038`, `INV-2026-00017 … INV-2026-00019`); None when
    the number depends on the record (cross-record tokens) or the day it was reserved is unknown."""
    reserved_at: datetime | None = None
    released_at: datetime | None = None
    """When the journal recorded the run's reservation and its outcome (rolled back / failed)."""
    caller: str | None = None
    """Who reserved the run: the application's label and process (`billing (web1:4242)`), or the
    process alone when the application set no label; None when no journal line says."""

    @property
    def count(self) -> int:
        """How many values the run holds."""
        return self.last - self.first + 1


@dataclass(frozen=True)
class GapReport:
    """The audit of one field."""

    field_id: str
    field: str
    numbering: str
    checked: int
    missing: int
    gaps: list[Gap]


def audit_gaps(
    platform: Platform,
    field: str,
    *,
    scope_key: str | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> GapReport:
    """Audit one field (id or `Object.Field`); `scope_key`, `lo`, `hi` narrow what is checked."""
    snapshot = platform.catalog.current()
    rule = snapshot.rule(field)
    with platform.db.connect() as conn:
        logs, formats = rule_log(conn), format_rows(conn)

        def history(r: Rule) -> list[Version]:
            return versions(r, logs.get(r.field_id, []), formats.get(r.field_id, []))

        mine = history(rule)
        cids = list(dict.fromkeys([rule.counter_id, *(v.rule.counter_id for v in mine), rule.field_id]))
        counters = _counters(conn, cids, scope_key)
        stored: dict[str, set[int]] = {}
        for member in _readers(snapshot, rule, cids, logs):  # a value another member stored is no gap
            column = snapshot.table(member.object_name).c[member.field_name]
            for key, values in _stored(conn, column, history(member), counters).items():
                stored.setdefault(key, set()).update(values)
        lines = [line for cid in cids for line in lines_for(conn, cid, counters)]
    gaps: list[Gap] = []
    checked = 0
    by_key = lines_by_key(lines)
    for key in sorted(counters):
        reasons = _Reasons(by_key.get(key, []))
        used = stored.get(key, set())
        low = lo if lo is not None else min([*used, *reasons.firsts()], default=None)
        high = counters[key] - 1 if hi is None else min(hi, counters[key] - 1)
        if low is None or high < low:
            continue
        checked += high - low + 1
        missing = _missing(low, high, used, reasons.breaks())
        runs = _runs(key, ((first, last, reasons.of(first)) for first, last in missing))
        gaps += [_described(mine, g, reasons) for g in runs]
    return GapReport(rule.field_id, rule.name, rule.numbering, checked, sum(g.count for g in gaps), gaps)


def _counters(conn: Connection, cids: Sequence[str], scope_key: str | None) -> dict[str, int]:
    """The next value per scope key over the counters the field drew from, live or retired (a
    scope, format or counter change retires rows: rules/floor.py)."""
    t = counter_table
    stmt = sa.select(t.c.scope_key, t.c.next_value).where(t.c.field_id.in_(cids))
    out: dict[str, int] = {}
    found = [(str(k), int(v)) for k, v in conn.execute(stmt)]
    if has_table(conn, setup_state.name):
        found += [item for cid in cids for item in retired(conn, cid).items()]
    for key, nxt in found:
        if scope_key is None or key == scope_key:
            out[key] = max(nxt, out.get(key, 0))
    return out


def _readers(snapshot: CatalogSnapshot, rule: Rule, cids: Sequence[str], logs: LogByField) -> list[Rule]:
    """The fields whose stored values may come from one of `cids`: the field, the members of those
    counters now, and every field whose rule log shows it drew from one of them."""
    out = {rule.field_id: rule}
    for other in snapshot.rules.values():
        logged = [kept.get("shared_counter") for _, kept in logs.get(other.field_id, [])]
        drew = {other.counter_id, *(counter_id(other.field_id, name) for name in logged)}
        if drew & set(cids):
            out.setdefault(other.field_id, other)
    return list(out.values())


def _stored(
    conn: Connection, column: sa.Column[Any], history: Sequence[Version], counters: Mapping[str, int]
) -> dict[str, set[int]]:
    """The counter values the column holds, per scope key, read with every rule the field has had:
    a value counts under the key of each rule whose format reads it (a value is never listed as a
    gap). Values no format reads are skipped: `setup verify` V1 reports those."""
    readers = [(v.rule.format.scan_pattern(), v.rule.scope) for v in history]
    out: dict[str, set[int]] = {}
    stmt = sa.select(column).where(column.is_not(None))
    result = conn.execute(stmt.execution_options(stream_results=True, yield_per=PAGE))
    for (value,) in result:
        for pattern, scope in readers:
            match = pattern.match(str(value))
            if match is None:
                continue
            try:
                key = match.scope_key(scope)
            except AutonumberError:  # this rule cannot have produced it (per_day without its date)
                continue
            if key in counters:
                out.setdefault(key, set()).add(match.counter)
    return out


def lines_by_key(lines: Iterable[Any]) -> dict[str, list[Any]]:
    """Journal lines grouped by scope key, in the order they were written."""
    out: dict[str, list[Any]] = {}
    for line in lines:
        out.setdefault(str(line.scope_key), []).append(line)
    return out


class _Reasons:
    """Why a value of one scope is missing, from that scope's journal lines."""

    def __init__(self, lines: Sequence[Any]) -> None:
        reserved = sorted((int(r.first_value), r) for r in lines if r.state in (RESERVED, MOVED, SKIPPED))
        self._starts = [first for first, _ in reserved]
        self._reserved = [line for _, line in reserved]
        self._outcome: dict[int, str] = {}
        self._released: dict[int, datetime] = {}
        for line in lines:
            if line.state in (ROLLED_BACK, FAILED):
                text = _outcome_text(line.state, line.detail)
                for v in range(int(line.first_value), int(line.first_value) + int(line.count)):
                    if self._outcome.get(v, "").startswith("insert failed"):
                        continue  # a failed INSERT also rolls back: the failure is the better reason
                    self._outcome[v] = text
                    self._released[v] = line.logged_at
        self._alive: dict[str, bool | None] = {}
        edges = {int(line.first_value) for line in lines}
        self._breaks = sorted(edges | {int(line.first_value) + int(line.count) for line in lines})

    def times(self, value: int) -> tuple[datetime | None, datetime | None]:
        """When `value` was reserved and when its outcome was recorded (None: not known)."""
        line = self._line(value)
        return (None if line is None else line.logged_at), self._released.get(value)

    def caller(self, value: int) -> str | None:
        """Who reserved `value` (journal.who), None when no reserved line covers it."""
        line = self._line(value)
        return None if line is None else who(str(line.owner), line.caller)

    def _line(self, value: int) -> Any:
        i = bisect.bisect_right(self._starts, value) - 1
        if i < 0 or value >= int(self._reserved[i].first_value) + int(self._reserved[i].count):
            return None
        return self._reserved[i]

    def breaks(self) -> list[int]:
        """Every value where a reason can change: the first value of each journal line and the
        one after its last. Between two of them every missing value has the same reason."""
        return self._breaks

    def firsts(self) -> list[int]:
        """The first value of every reserved range."""
        return self._starts

    def of(self, value: int) -> str:
        """The reason for one missing value."""
        if value in self._outcome:
            return self._outcome[value]
        i = bisect.bisect_right(self._starts, value) - 1
        if i < 0:
            return UNKNOWN
        line = self._reserved[i]
        if value >= int(line.first_value) + int(line.count):
            return UNKNOWN
        if line.state in (MOVED, SKIPPED):
            return _outcome_text(line.state, line.detail)
        owner = str(line.owner)
        if owner not in self._alive:
            self._alive[owner] = owner_alive(owner)
        alive = self._alive[owner]
        if alive is False:
            return f"reserved but never stored: its process ended without recording an outcome ({owner})"
        if alive:
            return (
                f"reserved by a running process ({owner}): in flight, or its caller's outcome "
                "was not recorded"
            )
        return (
            f"reserved by {owner} on another host: never stored (the process died or its outcome "
            "was not recorded)"
        )


def _outcome_text(state: str, detail: str | None) -> str:
    if state == SKIPPED:
        return f"skipped: a row written outside autonumber held the counter's next number ({detail})"
    if state == MOVED:
        return (
            f"skipped by `autonumber counter set` ({detail})"
            if detail
            else "skipped by `autonumber counter set`"
        )
    if state == FAILED:
        return f"insert failed: {detail}" if detail else "insert failed"
    return "rolled back"


def _missing(low: int, high: int, used: set[int], breaks: Sequence[int]) -> Iterator[tuple[int, int]]:
    """The runs of values in low..high that no row holds, cut at every break: their cost is what the
    table and the journal hold, never the counter's range (a counter set to 50,000,000 is one run)."""
    start = low
    for value in [*sorted(v for v in used if low <= v <= high), high + 1]:
        if value > start:
            i = bisect.bisect_right(breaks, start)
            while i < len(breaks) and breaks[i] < value:
                yield start, breaks[i] - 1
                start = breaks[i]
                i += 1
            yield start, value - 1
        start = value + 1


def _runs(key: str, missing: Iterable[tuple[int, int, str]]) -> list[Gap]:
    """Adjacent runs with the same reason become one Gap."""
    out: list[Gap] = []
    for first, last, reason in missing:
        if out and out[-1].last == first - 1 and out[-1].reason == reason:
            out[-1] = Gap(key, out[-1].first, last, reason)
        else:
            out.append(Gap(key, first, last, reason))
    return out


def _described(history: Sequence[Version], gap: Gap, reasons: _Reasons) -> Gap:
    """The gap's numbers as printed by the rule in force when it was reserved."""
    reserved_at, released_at = reasons.times(gap.first)
    at = utc(reserved_at)
    rule = in_force(history, gap.scope_key, at)
    first = render_in_scope(rule, gap.scope_key, gap.first, at)
    last = first if gap.first == gap.last else render_in_scope(rule, gap.scope_key, gap.last, at)
    numbers = None if first is None or last is None else first if first == last else f"{first} … {last}"
    return replace(
        gap,
        numbers=numbers,
        reserved_at=reserved_at,
        released_at=released_at,
        caller=reasons.caller(gap.first),
    )


def render_in_scope(rule: Rule, scope_key: str, value: int, at: datetime | None = None) -> str | None:
    """Counter `value` of one scope as the field prints it, when the scope (and `at`, the time it
    was reserved, for a global format with date tokens) decides it; None otherwise."""
    fmt = rule.format
    if fmt.cross_refs:
        return None
    try:
        if rule.scope == "per_prefix":
            if "#" in scope_key and COUNTER_MARK not in scope_key:
                return None  # a digest key: the text is not kept
            digits = str(value).zfill(fmt.counter_width)
            return (
                scope_key.replace(COUNTER_MARK, digits) if COUNTER_MARK in scope_key else scope_key + digits
            )
        if rule.scope == "per_day":
            at = datetime.strptime(scope_key, "%Y%m%d").replace(hour=12, tzinfo=rule.zone)
        elif at is None:
            if fmt.has_date:
                return None
            at = datetime.now(UTC)
        return rule.render(value, at, {})
    except (AutonumberError, ValueError):
        return None
