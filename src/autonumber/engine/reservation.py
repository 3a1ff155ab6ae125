"""Reserving counter values in a short transaction of its own (docs/engine.md): the strategies.

Every strategy samples the database clock once inside the reservation transaction; that sample
drives both the scope key and the date tokens. A reservation counts only once its COMMIT
succeeded: a lost race, a deadlock or a Galera certification failure at COMMIT is retried under
the one retry policy (engine/retry.py), and a number from a transaction that did not commit is
never handed out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from cachetools import TTLCache
from sqlalchemy.engine import Connection, Engine

from autonumber.catalog.cache import Rule
from autonumber.db import Dialect, driver
from autonumber.db.base import Counter, Numbered
from autonumber.db.tables import counter_table, system_field
from autonumber.errors import CounterMissing, CounterOverflow, ReservationFailed

from . import metrics
from .journal import Journal, Range, reserved_line
from .retry import RetryPolicy

SEMAPHORE_TTL = 48 * 3600.0
MAX_LAZY_CREATES = 3
RESERVATION_SAVEPOINT = "autonumber_reservation"
"""The savepoint a reservation takes in a caller's transaction (SQLite, gapless rules)."""
T = counter_table
_Got = TypeVar("_Got")


@dataclass(frozen=True)
class Reservation:
    """`count` consecutive values starting at `first`, under one clock sample and scope key."""

    assigned_at: datetime
    scope_key: str
    first: int
    count: int


class _Lost(Exception):
    """A lost race: another writer changed the counter first, or the COMMIT was refused."""


@dataclass(frozen=True)
class _Missing:
    assigned_at: datetime
    scope_key: str


LiveMax = Callable[[Rule, str, datetime, Mapping[str, str]], int]


def _key(rule: Rule, scope_key: str) -> sa.ColumnElement[bool]:
    return sa.and_(T.c.field_id == rule.counter_id, T.c.scope_key == scope_key)


# The counter's key and "n more values still fit" as constant expressions (bind parameters from
# `_params`): the hot path's statement is then built once (Dialect.built).
_KEY = sa.and_(T.c.field_id == sa.bindparam("b_field_id"), T.c.scope_key == sa.bindparam("b_scope_key"))
_N = sa.bindparam("b_n", type_=sa.BigInteger)
_FITS = T.c.next_value <= sa.bindparam("b_limit", type_=sa.BigInteger)
_STAMP = {"last_modified_date": sa.bindparam("b_now", type_=T.c.last_modified_date.type)}
_COUNTER = Counter(T, _KEY, "next_value", _N, "last_modified_date", _FITS)
"""A counter row as Dialect.insert_numbered takes it."""
STAMPED_AT = sa.select(T.c.last_modified_date).where(_KEY).scalar_subquery()
"""The clock sample a reservation stamped on its counter row, read where `stamp_params` point:
the record's INSERT reads it when the increment did not (Reserver.reserve_stamped)."""


def stamp_params(rule: Rule) -> dict[str, Any]:
    """The bind parameters of STAMPED_AT for a `global` rule's counter row."""
    return {"b_field_id": rule.counter_id, "b_scope_key": ""}


def _params(rule: Rule, scope_key: str, n: int) -> dict[str, Any]:
    return {
        "b_field_id": rule.counter_id,
        "b_scope_key": scope_key,
        "b_n": n,
        "b_limit": 10**rule.format.counter_width - n,
    }


def _check_fits(rule: Rule, key: str, current: int, n: int) -> None:
    """CounterOverflow, before anything is written, when [current, current+n) does not fit."""
    limit = 10**rule.format.counter_width
    if current + n > limit:
        raise CounterOverflow(rule.field_id, key, max(current, limit), rule.format.counter_width)


def _overflow_or_missing(c: Connection, rule: Rule, key: str, n: int) -> None:
    """After a guarded increment changed no row: CounterOverflow if the row exists (it is full)."""
    current = c.execute(sa.select(T.c.next_value).where(_key(rule, key))).scalar()
    if current is not None:
        _check_fits(rule, key, int(current), n)


@dataclass
class Hooks:
    """Test seams of the reservation path; every one is None in production.

    - `clock(conn)` replaces the database clock sample (inject a date; real runs use the DB clock);
    - `before_cas(conn, rule, scope_key, read_value)` runs between the read and the CAS update
      (bump the row there to force a lost race);
    - `in_fallback(rule, scope_key)` runs inside the fallback lane while it holds the row lock;
    - `reserved(reservation)` runs once per committed reservation (count them).
    """

    clock: Callable[[Connection], datetime] | None = None
    before_cas: Callable[[Connection, Rule, str, int], None] | None = None
    in_fallback: Callable[[Rule, str], None] | None = None
    reserved: Callable[[Reservation], None] | None = None


@dataclass
class Reserver:
    """Runs reservation transactions on the reservation pool (or, for SQLite, the caller's conn)."""

    db: Engine
    dialect: Dialect
    live_max: LiveMax
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    semaphore_capacity: int = 512
    hooks: Hooks = field(default_factory=Hooks)
    sleep: Callable[[float], None] = time.sleep
    _semaphores: TTLCache[tuple[str, str], threading.Semaphore] = field(init=False)
    _sem_lock: threading.Lock = field(default_factory=threading.Lock)
    max_fallback_in_flight: int = 0
    _in_flight: int = 0
    journal: Journal = field(default_factory=Journal)

    def __post_init__(self) -> None:
        self._semaphores = TTLCache(maxsize=self.semaphore_capacity, ttl=SEMAPHORE_TTL)

    @contextmanager
    def transaction(
        self, conn: Connection | None, savepoint: bool = True, alone: bool = False
    ) -> Iterator[Connection]:
        """A reservation transaction: own connection, or a savepoint on the caller's (SQLite).

        `savepoint=False`: straight in `conn`'s transaction (a group-commit writer whose short
        transaction holds nothing before the reservation; a failure fails the whole group).
        `alone`: an own connection on which the reservation's one round trip commits by itself,
        where the backend allows (Dialect.commits_alone); else a transaction as usual."""
        if conn is not None and not savepoint:
            yield conn
            return
        if conn is not None:
            with driver.savepoint(conn, RESERVATION_SAVEPOINT):
                yield conn
            return
        if alone:
            with self.db.connect() as own, self.dialect.reservation_transaction(own):
                yield own
            return
        with self.db.begin() as own:
            yield own

    def _clock(self, c: Connection, at: datetime | None) -> datetime:
        """The batch's sample when one was taken, else ONE sample of the database clock."""
        if at is not None:
            return at
        if self.hooks.clock is not None:
            return self.hooks.clock(c)
        return self.dialect.utc_now(c)

    @contextmanager
    def _attempt(
        self, conn: Connection | None, savepoint: bool = True, alone: bool = False
    ) -> Iterator[Connection]:
        """One reservation transaction; a lost race or a dead own connection, at a statement or at
        COMMIT, leaves it as _Lost — nothing from it is ever handed out."""
        try:
            with self.transaction(conn, savepoint, alone) as c:
                yield c
        except sa.exc.DBAPIError as exc:
            if self._lost(exc, conn):
                raise _Lost() from exc
            raise

    def _lost(self, exc: sa.exc.DBAPIError, conn: Connection | None) -> bool:
        """A lost race, or our own reservation connection died: either way nothing was handed out,
        so the attempt is retried (at worst the dead transaction had committed: a gap, never a
        duplicate). On the caller's connection a dead link is the caller's failure, not ours; and on
        a server backend a lost race there (the group writer's transaction) has rolled that whole
        transaction back, so it is raised for its owner to retry as a whole (records._write_own)."""
        if conn is not None and self.dialect.reservation_conn(conn) is None:
            return False
        return self.dialect.is_retryable(exc) or (conn is None and exc.connection_invalidated)

    @property
    def max_retries(self) -> int:
        """The public knob `max_retries`: the policy's attempts, the unit of every budget."""
        return self.policy.attempts

    # -- the seed's optimistic CAS path ---------------------------------------------------------

    def reserve_cas(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None = None,
        at: datetime | None = None,
    ) -> Reservation:
        """Read next_value, CAS-update it, retry with jitter; after max_retries, the fallback lane."""
        started = time.perf_counter()
        lazy = 0
        tries = self.policy.tries(self.policy.cas_attempts, self.sleep, windowed=False)
        while True:
            try:
                outcome = self._cas_once(rule, n, cross, conn, at)
            except _Lost:
                if tries.again():
                    continue
                break
            if isinstance(outcome, _Missing):
                lazy = self._after_missing(rule, outcome, cross, conn, lazy)
                continue
            return self._done("cas", tries.losses + 1, started, outcome)
        result = self.reserve_fallback(rule, n, cross, conn, at)
        return self._done("cas", tries.losses + 1, started, result)

    def _cas_once(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None,
        at: datetime | None,
        savepoint: bool = True,
    ) -> Reservation | _Missing:
        with self._attempt(conn, savepoint) as c:
            now = self._clock(c, at)
            key = rule.scope_key(now, cross)
            current = c.execute(sa.select(T.c.next_value).where(_key(rule, key))).scalar()
            if current is None:
                return _Missing(now, key)
            _check_fits(rule, key, int(current), n)
            if self.hooks.before_cas is not None:
                self.hooks.before_cas(c, rule, key, int(current))
            stmt = (
                sa.update(T)
                .where(_key(rule, key), T.c.next_value == current)
                .values(next_value=T.c.next_value + n, last_modified_date=now)
            )
            if c.execute(stmt).rowcount != 1:
                raise _Lost()
            return self._journaled(c, rule, Reservation(now, key, int(current), n), conn)

    def reserve_fallback(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None = None,
        at: datetime | None = None,
    ) -> Reservation:
        """The starvation lane: one clock sample, the per-counter semaphore, then FOR UPDATE."""
        metrics.FALLBACKS.inc()
        lazy = 0
        tries = self.policy.tries(self.policy.fallback_attempts, self.sleep)
        while True:
            try:
                outcome = self._fallback_once(rule, n, cross, conn, at)
            except _Lost:
                if tries.again():
                    continue
                break
            if isinstance(outcome, _Missing):
                lazy = self._after_missing(rule, outcome, cross, conn, lazy)
                continue
            return outcome
        raise ReservationFailed(rule.field_id, "", tries.losses, "fallback lane kept losing")

    def _fallback_once(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None,
        at: datetime | None,
    ) -> Reservation | _Missing:
        # The slot is taken after the clock sample (its key is the sampled scope) and released
        # only after the COMMIT, so at most one fallback per counter is ever in flight.
        with self._fallback_slot() as take_slot, self._attempt(conn) as c:
            now = self._clock(c, at)
            key = rule.scope_key(now, cross)
            take_slot(rule.counter_id, key)
            current = c.execute(
                self.dialect.for_update(sa.select(T.c.next_value).where(_key(rule, key)))
            ).scalar()
            if current is None:
                return _Missing(now, key)
            _check_fits(rule, key, int(current), n)
            if self.hooks.in_fallback is not None:
                self.hooks.in_fallback(rule, key)
            c.execute(
                sa.update(T)
                .where(_key(rule, key))
                .values(next_value=T.c.next_value + n, last_modified_date=now)
            )
            return self._journaled(c, rule, Reservation(now, key, int(current), n), conn)

    @contextmanager
    def _fallback_slot(self) -> Iterator[Callable[[str, str], None]]:
        """Yield a function that takes the per-counter semaphore; it is released on exit."""
        held: list[threading.Semaphore] = []

        def take(field_id: str, scope_key: str) -> None:
            with self._sem_lock:
                sem = self._semaphores.get((field_id, scope_key)) or threading.Semaphore(1)
                self._semaphores[(field_id, scope_key)] = sem
            sem.acquire()
            held.append(sem)
            with self._sem_lock:
                self._in_flight += 1
                self.max_fallback_in_flight = max(self.max_fallback_in_flight, self._in_flight)
            metrics.FALLBACK_IN_FLIGHT.inc()

        try:
            yield take
        finally:
            for sem in held:
                metrics.FALLBACK_IN_FLIGHT.dec()
                with self._sem_lock:
                    self._in_flight -= 1
                sem.release()

    # -- the single-statement increment ---------------------------------------------------------

    def reserve_atomic(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None = None,
        at: datetime | None = None,
        savepoint: bool = True,
        defer: bool = False,
    ) -> Reservation:
        """One `UPDATE … next_value = next_value + n` returning the new value (dialect primitive).
        `defer`: its numbers are stored only by rows a later COMMIT on this database writes, so its
        own transaction need not wait for the disk (Dialect.defer_flush)."""
        started = time.perf_counter()
        lazy = 0
        tries = self.policy.tries(self.policy.atomic_attempts, self.sleep)
        while True:
            try:
                outcome = self._atomic_once(rule, n, cross, conn, at, savepoint, defer)
            except _Lost:
                if tries.again():
                    continue
                break
            if isinstance(outcome, _Missing):
                lazy = self._after_missing(rule, outcome, cross, conn, lazy)
                continue
            return self._done("atomic", tries.losses + 1, started, outcome)
        raise ReservationFailed(rule.field_id, "", tries.losses, "the database kept refusing")

    def _atomic_once(
        self,
        rule: Rule,
        n: int,
        cross: Mapping[str, str],
        conn: Connection | None,
        at: datetime | None,
        savepoint: bool = True,
        defer: bool = False,
    ) -> Reservation | _Missing:
        clocked_here = rule.scope == "global" and at is None and self.hooks.clock is None
        # increment, clock sample and journal line in one round trip that commits by itself
        alone = clocked_here and conn is None and self.journal.enabled
        with self._attempt(conn, savepoint, alone) as c:
            # where the backend allows, the journal line rides in the increment's statement
            fold = alone and self.dialect.folds_line(c)
            defer = defer and conn is None  # only a reservation's own transaction
            if defer and not fold:  # a folded statement defers its own COMMIT
                self.dialect.defer_flush(c)
            if clocked_here:
                # the scope key does not depend on the clock: sample it on the UPDATE itself
                if not (fold or c.in_transaction()):
                    raise RuntimeError(f"{self.dialect.name}: a reservation outside a transaction must fold")
                params = {**_params(rule, "", n), **self.journal.params()} if fold else _params(rule, "", n)
                clocked = self.dialect.atomic_increment_clocked(
                    c,
                    T,
                    _KEY,
                    "next_value",
                    _N,
                    "last_modified_date",
                    _FITS,
                    params,
                    line=reserved_line if fold else None,
                    defer=defer and fold,
                )
                if clocked is None:
                    _overflow_or_missing(c, rule, "", n)
                    return _Missing(self.dialect.utc_now(c), "")
                last, stamped = clocked
                res = Reservation(stamped, "", last - n, n)
                return res if fold else self._journaled(c, rule, res, conn)
            now = self._clock(c, at)
            key = rule.scope_key(now, cross)
            after = self.dialect.atomic_increment(
                c, T, _KEY, "next_value", _N, _STAMP, _FITS, {**_params(rule, key, n), "b_now": now}
            )
            if after is None:
                _overflow_or_missing(c, rule, key, n)
                return _Missing(now, key)
            return self._journaled(c, rule, Reservation(now, key, after - n, n), conn)

    def reserve_stamped(self, rule: Rule, conn: Connection) -> int:
        """One number of a `global` rule in `conn`'s own transaction (the group writer's), by the
        single-statement increment, with the clock stamped on the counter row but not read back:
        the caller's INSERT reads it (STAMPED_AT) in the same transaction, which holds the row
        locked until its COMMIT. For a rule whose value shows no date, on a backend whose increment
        cannot return the sample (Dialect.stamp_rides_on_insert): one round trip fewer. Not
        journaled: the number commits or rolls back with its row."""

        def increment(c: Connection) -> int | None:
            after = self.dialect.atomic_increment_stamped(
                c, T, _KEY, "next_value", _N, "last_modified_date", _FITS, _params(rule, "", 1)
            )
            return None if after is None else after - 1

        return self._in_writer(rule, conn, increment)

    def insert_numbered(
        self,
        rule: Rule,
        conn: Connection,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        number: Numbered,
        *,
        commit: bool = False,
    ) -> list[tuple[str, datetime]]:
        """Reserve len(rows) numbers of a `global` rule and insert `rows` with them, in one statement
        in `conn`'s own transaction (Dialect.insert_numbered; `commit`: the statement is that whole
        transaction and commits by itself): each row's value and CreatedDate. Not journaled: the
        numbers commit or roll back with their rows."""
        params = _params(rule, "", len(rows))

        def insert(c: Connection) -> list[tuple[str, datetime]] | None:
            return self.dialect.insert_numbered(c, _COUNTER, table, rows, number, params, commit=commit)

        return self._in_writer(rule, conn, insert, len(rows))

    def _in_writer(
        self, rule: Rule, conn: Connection, step: Callable[[Connection], _Got | None], n: int = 1
    ) -> _Got:
        """Run `step`, which reserves `n` numbers of a `global` rule by one statement, straight in
        the group writer's transaction, as reserve_atomic does: a full or missing counter raised
        (nothing was written), lost races raised for the group writer to retry as a whole; the
        reservation metrics observed."""
        started = time.perf_counter()
        tries = self.policy.tries(self.policy.atomic_attempts, self.sleep)
        while True:
            try:
                with self._attempt(conn, savepoint=False) as c:
                    got = step(c)
                    if got is None:
                        _overflow_or_missing(c, rule, "", n)
                        raise CounterMissing(rule.field_id, "", rule.counter_id)  # never reseeded
            except _Lost:
                if tries.again():
                    continue
                refused = "the database kept refusing"
                raise ReservationFailed(rule.field_id, "", tries.losses, refused) from None
            attempts_of, latency_of, reservations_of = metrics.reservation_metrics("atomic")
            attempts_of.observe(tries.losses + 1)
            latency_of.observe(time.perf_counter() - started)
            reservations_of.inc()
            return got

    def _journaled(self, c: Connection, rule: Rule, res: Reservation, conn: Connection | None) -> Reservation:
        """Append the reservation's journal line in its own transaction (it commits with it). A
        reservation made in a transaction that also writes its rows (`conn`: the caller's savepoint
        on SQLite, a group writer's or a committed batch's own transaction) needs none: its numbers
        commit with their rows or roll back with them, so they can never become gaps."""
        if conn is None:
            rng = Range(rule.counter_id, res.scope_key, res.first, res.count)
            self.journal.reserved(c, rng, res.assigned_at)
        return res

    # -- lazy scopes ----------------------------------------------------------------------------

    def _after_missing(
        self,
        rule: Rule,
        missing: _Missing,
        cross: Mapping[str, str],
        conn: Connection | None,
        lazy: int,
    ) -> int:
        """global: CounterMissing (corruption, never reseeded). Lazy scopes: create the row once."""
        if rule.scope == "global" or lazy >= MAX_LAZY_CREATES:
            raise CounterMissing(rule.field_id, missing.scope_key, rule.counter_id)
        start = max(rule.start, self.live_max(rule, missing.scope_key, missing.assigned_at, cross) + 1)
        tries = self.policy.tries(self.policy.lazy_attempts, self.sleep)
        while True:
            try:
                with self.transaction(conn) as c:
                    self.check_counter_of(c, rule, missing.scope_key)
                    self.dialect.upsert_greatest(
                        c,
                        T,
                        {"field_id": rule.counter_id, "scope_key": missing.scope_key},
                        "next_value",
                        start,
                        {"created_date": missing.assigned_at, "last_modified_date": missing.assigned_at},
                    )
                metrics.LAZY_ROWS.inc()
                return lazy + 1
            except sa.exc.DBAPIError as exc:
                if not (self.dialect.is_retryable(exc) or self.dialect.is_duplicate_key(exc)):
                    raise
                if not tries.again():
                    break
        raise ReservationFailed(rule.field_id, missing.scope_key, tries.losses, "lazy row")

    def check_counter_of(self, c: Connection, rule: Rule, scope_key: str) -> None:
        """CounterMissing unless `rule` still draws from its counter: a process that has not yet
        seen a field join or leave a shared counter must not create a row of the counter it left
        (it would count again from that counter's floor). The field's row is locked, as a rule
        change locks it before it reads the counters it moves, so the two cannot interleave."""
        f = system_field
        columns = (f.c.auto_number_format, f.c.auto_number_shared_counter)
        stmt = sa.select(*columns).where(f.c.Id == rule.field_id)
        stored = c.execute(self.dialect.for_update(stmt)).first()
        if stored is None or stored[0] is None or (stored[1] or None) != rule.shared_counter:
            raise CounterMissing(rule.field_id, scope_key, rule.counter_id)

    def _done(self, strategy: str, attempts: int, started: float, res: Reservation) -> Reservation:
        """Record a committed reservation in the metrics (and the test hook)."""
        attempts_of, latency_of, reservations_of = metrics.reservation_metrics(strategy)
        attempts_of.observe(attempts)
        latency_of.observe(time.perf_counter() - started)
        reservations_of.inc()
        if self.hooks.reserved is not None:
            self.hooks.reserved(res)
        return res
