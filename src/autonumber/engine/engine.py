"""`Engine.assign_one` / `assign_batch` (docs/engine.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.catalog.cache import Catalog, Rule
from autonumber.db import Dialect
from autonumber.db.base import Numbered
from autonumber.db.driver import kept
from autonumber.db.fence import declare, raise_if_refused
from autonumber.errors import DatabaseUnavailable, TransactionConflict

from .blocks import Blocks, Piece
from .combining import Combiner
from .gapless import reserve_gapless
from .journal import Range
from .livemax import live_max_reader
from .record_dates import record_dates
from .reservation import Hooks, Reservation, Reserver
from .resolve import Resolver
from .retry import DEFAULT_MAX_RETRIES, RetryPolicy

Strategy = Literal["cas", "atomic", "combining"]
STRATEGIES: tuple[Strategy, ...] = ("cas", "atomic", "combining")
DEFAULT_STRATEGY: Strategy = "combining"
"""The strategy of `Engine` and `autonumber.connect` alike, chosen by the benchmark (`make bench`)
(docs/performance.md): one atomic reservation serves every caller waiting on the same counter, so
throughput does not pay one durable commit per number."""
Record = Mapping[str, Any]
SHOWS_NO_DATE = datetime(1970, 1, 1, tzinfo=UTC)
"""The instant given to the renderer of a value that shows no date (`assign_stamped`): it cannot
appear in the value, and the record's own date is the clock sample its INSERT reads."""


@dataclass(frozen=True)
class Assigned:
    """Numbers assigned to a batch, with the one clock sample they share."""

    values: list[str]
    assigned_at: datetime | None
    detached: list[Range] = field(default_factory=list)
    """The values reserved off the caller's transaction (a rollback leaves them as gaps)."""


class Engine:
    """Assigns autonumbers; owns the reservation and fresh-read pools (docs/engine.md)."""

    def __init__(
        self,
        catalog: Catalog,
        dialect: Dialect,
        reservation_db: sa.Engine,
        fresh_db: sa.Engine,
        *,
        strategy: Strategy = DEFAULT_STRATEGY,
        max_retries: int = DEFAULT_MAX_RETRIES,
        defer_flush: bool = True,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        self.catalog = catalog
        self.dialect = dialect
        self.strategy = strategy
        self.defer_flush = defer_flush
        """Whether `assign(…, stored_by=True)` lets its reservation commit without waiting for the
        disk (Dialect.defer_flush)."""
        snapshot = catalog.current()
        fields = max(1, len(snapshot.rules) + len(snapshot.quarantined))
        self.reserver = Reserver(
            reservation_db,
            dialect,
            live_max_reader(fresh_db, catalog.current),
            policy=RetryPolicy(attempts=max_retries),
            semaphore_capacity=max(512, 4 * fields),
        )
        self.resolver = Resolver(fresh_db)
        self.combiner = Combiner()
        journal, own = self.reserver.journal, reservation_db
        self.blocks = Blocks(
            lambda rule, n, cross: self._reserve(rule, n, cross, None),
            lambda ranges: journal.outcome(own, ranges),
        )

    @property
    def hooks(self) -> Hooks:
        """Test seams of the reservation path."""
        return self.reserver.hooks

    def rule(self, field: str) -> Rule:
        """The usable rule for a field id or `Object.Field` (RuleQuarantined when quarantined)."""
        return self.catalog.current().rule(field)

    def assign_one(self, field: str, record: Record, conn: Connection | None = None) -> str:
        """Render one number for `record` (a dict of its field values)."""
        return self.assign(field, [record], conn).values[0]

    def assign_batch(
        self, field: str, records: Sequence[Record], conn: Connection | None = None
    ) -> list[str]:
        """Render numbers for many records: one reservation of N per (cross values) group."""
        return self.assign(field, records, conn).values

    def resolve(
        self, field: str, records: Sequence[Record], conn: Connection | None = None
    ) -> Sequence[Mapping[str, str]]:
        """The cross-record token values of each record (TokenResolveError when one fails closed)."""
        snapshot = self.catalog.current()
        return self.resolver.resolve(snapshot, snapshot.rule(field), records, conn)

    def assign(
        self,
        field: str,
        records: Sequence[Record],
        conn: Connection | None = None,
        *,
        cross: Sequence[Mapping[str, str]] | None = None,
        inside: bool = False,
        stored_by: bool = False,
        dates: Sequence[datetime] | None = None,
    ) -> Assigned:
        """assign_batch that also returns the shared assigned-at; `cross` = already resolved values;
        `dates` = each record's own date when the caller read it (a backfill: record_dates).

        `inside`: reserve in `conn`'s own short transaction (the group-commit writer; a savepoint
        only on SQLite), so the numbers commit with the rows in one COMMIT and roll back with them.
        `stored_by`: the numbers leave only in rows `conn`'s transaction writes on this database, so
        a reservation of their own commits without waiting for the disk (Dialect.defer_flush)."""
        snapshot = self.catalog.current()
        rule = snapshot.rule(field)
        if not records:
            return Assigned([], None)
        if conn is not None:
            declare(conn)  # a caller's connection from another pool: the writer fence's declaration
        if dates is None:  # before any reservation: a missing date takes none
            dates = record_dates(rule, records)
        keys = {ref.key for ref in rule.token_refs}
        if cross is None or len(cross) != len(records) or _stale(cross, keys):
            cross = self.resolver.resolve(snapshot, rule, records, conn)  # none given, or stale
        groups: dict[tuple[Any, ...], list[int]]
        if dates is None:
            groups = dict(_by_values(cross, keys))
        else:  # one reservation per counter row the records' dates name
            groups = {}
            for i, values in enumerate(cross):
                group = (*sorted(values.items()), rule.scope_key(dates[i], values))
                groups.setdefault(group, []).append(i)
        out: list[str] = [""] * len(records)
        at: datetime | None = None
        detached: list[Range] = []
        defer = stored_by and self.defer_flush
        try:  # the writer fence refusing this release: the database was upgraded past it
            for indices in groups.values():
                values = cross[indices[0]]
                by = rule if dates is None else rule.pinned(dates[indices[0]])
                if by.block_size > 1 and self._on_caller(conn) is None:
                    pieces = self.blocks.take(by, len(indices), values)
                    detached += [Range(rule.counter_id, p.scope_key, p.first, p.count) for p in pieces]
                    at = pieces[-1].assigned_at
                    for idx, (number, piece) in zip(indices, _numbers(pieces), strict=True):
                        when = piece.assigned_at if dates is None else dates[idx]
                        out[idx] = rule.render(number, when, values, piece.scope_key)
                    continue
                if by.gapless:
                    res, offset = reserve_gapless(self.reserver, by, len(indices), values, conn, at), 0
                elif len(records) == 1 and not inside and dates is None:
                    res, offset = self._reserve_single(by, values, conn, defer)
                else:
                    res, offset = self._reserve(by, len(indices), values, conn, at, inside, defer), 0
                if not by.gapless and not inside and self._on_caller(conn) is None:
                    detached.append(Range(rule.counter_id, res.scope_key, res.first + offset, len(indices)))
                at = res.assigned_at
                first = res.first + offset
                if dates is None and len(indices) == len(records):  # one group: every record, in order
                    out = rule.format.fixed_run(first, len(indices)) or [
                        rule.render(n, at, values, res.scope_key) for n in range(first, first + len(indices))
                    ]
                else:
                    for j, idx in enumerate(indices):
                        when = at if dates is None else dates[idx]
                        out[idx] = rule.render(first + j, when, values, res.scope_key)
        except sa.exc.DBAPIError as exc:
            raise_if_refused(exc)
            if conn is not None and not inside and self.dialect.is_retryable(exc):
                raise TransactionConflict(rule.object_name, exc) from exc  # the caller's to run again
            if not inside and self.dialect.is_unavailable(exc):  # the group writer's: `writing` says
                raise DatabaseUnavailable(f"taking numbers for {rule.name}", exc) from exc
            raise
        assert at is not None
        return Assigned(out, at, detached)

    def stamps_later(self, rule: Rule, conn: Connection) -> bool:
        """Whether the group writer's one record may take its number from `assign_stamped`, leaving
        the clock sample on the counter row for its INSERT to read: the backend's increment cannot
        return it (Dialect.stamp_rides_on_insert), and nothing needs it before the INSERT."""
        return self._no_clock_before_insert(rule) and self.dialect.stamp_rides_on_insert(conn)

    def assign_stamped(self, rule: Rule, conn: Connection) -> str:
        """One number for a rule `stamps_later` accepted (the caller asks it first), reserved in
        `conn`'s own transaction; the INSERT of its record then reads the clock sample
        (reservation.STAMPED_AT)."""
        value = self.reserver.reserve_stamped(rule, conn)
        return rule.render(value, SHOWS_NO_DATE, {}, "")

    def numbered_by_insert(self, rule: Rule, conn: Connection) -> Numbered | None:
        """How the group writer's records may be numbered by their own INSERT (`insert_numbered`):
        the backend builds the values in the statement that reserves them
        (Dialect.numbers_on_insert), and a value is fixed text around the counter, nothing read
        before the INSERT. Else None."""
        if not self.dialect.numbers_on_insert(conn):
            return None
        sides = rule.format.literal_sides
        if sides is None or not self._no_clock_before_insert(rule):
            return None
        return Numbered(rule.field_name, rule.format.counter_width, *sides, created="CreatedDate")

    def insert_numbered(
        self,
        rule: Rule,
        conn: Connection,
        table: sa.Table,
        records: Sequence[Record],
        number: Numbered,
        *,
        commit: bool = False,
    ) -> list[tuple[str, datetime]]:
        """Reserve len(records) numbers and insert `records` with them, in order, in one statement
        (`numbered_by_insert` said how); each record's value and CreatedDate as stored. `number` is
        checked against the renderer before anything is sent, and the values the database built
        after, consecutive from the first, so the two can never disagree unnoticed (the
        transaction then rolls back; with `commit`, Dialect.insert_numbered's, it has committed and
        the error says so)."""
        checked = ("autonumber.numbered-checked", rule.field_id, rule.format.source, number)
        kept(table, checked, lambda: self.check_numbered(rule, number))  # once per table and rule
        stored = self.reserver.insert_numbered(rule, conn, table, records, number, commit=commit)
        first = stored[0][0][len(number.before) : len(stored[0][0]) - len(number.after)]
        start = int(first) if first.isdigit() else -1
        for i, (value, _) in enumerate(stored):
            if start < 0 or rule.render(start + i, SHOWS_NO_DATE, {}, "") != value:
                stored_note = " (committed)" if commit else ""
                raise RuntimeError(
                    f"{rule.field_id}: the database built {value!r}{stored_note}, not the format's value"
                )
        return stored

    @staticmethod
    def check_numbered(rule: Rule, number: Numbered) -> bool:
        """RuntimeError unless `number` builds the renderer's values (the first and the widest)."""
        for n in (1, 10**number.width - 1):
            if rule.render(n, SHOWS_NO_DATE, {}, "") != number.values(n, 1)[0]:
                raise RuntimeError(f"{rule.field_id}: {number.values(n, 1)[0]!r} is not the format's value")
        return True

    def _no_clock_before_insert(self, rule: Rule) -> bool:
        """Nothing needs the reservation's clock sample before the record's INSERT, and the
        number comes from one counter statement: a `global` rule (its scope key is not a date), a
        value that shows no date, no record date, standard numbering (not cas, not blocks), no
        clock test seam."""
        return (
            rule.scope == "global"
            and not rule.format.has_date
            and not rule.token_refs
            and rule.date_field is None
            and not rule.gapless
            and rule.block_size == 1
            and self.strategy != "cas"
            and self.hooks.clock is None
            and self.hooks.reserved is None
        )

    def check_dates(self, field: str, records: Sequence[Record]) -> None:
        """RecordError when a rule dated by a record field finds a record without that date."""
        record_dates(self.catalog.current().rule(field), records)

    def close(self) -> None:
        """Journal the unused rest of every block this process holds as a gap."""
        self.blocks.release_all()

    def reserves_on_caller(self, conn: Connection) -> bool:
        """Whether numbers for records written in `conn`'s transaction are reserved on `conn`."""
        return self._on_caller(conn) is not None

    def _on_caller(self, conn: Connection | None) -> Connection | None:
        """SQLite: reserve on the caller's connection when its transaction holds the write lock."""
        return self.dialect.reservation_conn(conn)

    def _reserve(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None,
        at: datetime | None = None,
        inside: bool = False,
        defer: bool = False,
    ) -> Reservation:
        target = conn if inside else self._on_caller(conn)
        if self.strategy == "cas":
            return self.reserver.reserve_cas(rule, n, cross, target, at)
        # inside the group writer's own short transaction the row lock lasts to its COMMIT anyway
        # (and on SQLite it holds the write lock from BEGIN): no savepoint round trips
        savepoint = not inside
        return self.reserver.reserve_atomic(rule, n, cross, target, at, savepoint, defer)

    def _reserve_single(
        self, rule: Rule, cross: Mapping[str, str], conn: Connection | None, defer: bool
    ) -> tuple[Reservation, int]:
        if self.strategy != "combining" or self._on_caller(conn) is not None:
            return self._reserve(rule, 1, cross, conn, defer=defer), 0
        # a deferred reservation is shared only by callers whose numbers are all stored by later COMMITs
        key = (rule.field_id, tuple(sorted(cross.items())), defer)
        return self.combiner.reserve_one(
            key, lambda n: self.reserver.reserve_atomic(rule, n, cross, defer=defer)
        )


def _numbers(pieces: Sequence[Piece]) -> list[tuple[int, Piece]]:
    """Every value of the pieces, in order, with the piece it came from."""
    return [(piece.first + j, piece) for piece in pieces for j in range(piece.count)]


def _stale(cross: Sequence[Mapping[str, str]], keys: set[str]) -> bool:
    """Whether resolved token values lack (or exceed) the rule's tokens for some record."""
    if not keys:
        return any(cross)  # a rule without cross tokens: every map is empty
    return any(set(v) != keys for v in cross)


Groups = dict[tuple[tuple[str, str], ...], list[int]]


def _by_values(cross: Sequence[Mapping[str, str]], keys: set[str]) -> Groups:
    """Record indexes grouped by their token values (one reservation per group), in order."""
    if not keys:
        return {(): list(range(len(cross)))}
    groups: Groups = {}
    for i, values in enumerate(cross):
        groups.setdefault(tuple(sorted(values.items())), []).append(i)
    return groups
