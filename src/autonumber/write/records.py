"""Record persistence: numbers are assigned, `RecordBeforeCreate` is published, then the row is
inserted (docs/engine.md). Autonumber fields cannot be supplied by the caller nor changed later."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import Catalog, CatalogSnapshot, Rule
from ..db.base import Dialect, Numbered, by_fields, to_utc
from ..db.driver import kept, savepoint, statement, watched
from ..db.fence import declare, raise_if_refused
from ..db.held import HeldConnection
from ..db.objects import key_column
from ..engine import Engine, metrics
from ..engine.journal import FAILED, Pending, Range, track, watch
from ..engine.reservation import STAMPED_AT, stamp_params
from ..engine.retry import Tries
from ..engine.skip import skip_stored
from ..errors import (
    AutonumberError,
    CommitOutcomeUnknown,
    CounterMissing,
    DatabaseUnavailable,
    NumberAlreadyStored,
    RecordError,
    RecordNotFound,
    ReservationFailed,
    RuleQuarantined,
)
from ..events import EventBus, RecordBeforeCreate
from . import idempotency
from .batch_sender import BatchSender
from .bulk_rows import PairChunks, Rejected, RowCheck, ordered_ids
from .group_commit import GroupCommit
from .ids import new_id
from .lookups import check_lookups, checked_lookups
from .values import checked_value, refused_value, text_problem

SYSTEM_COLUMNS = ("Id", "CreatedDate")
MAX_LIMIT = 10_000
MAX_OFFSET = 1_000_000_000
"""Paging bounds every backend accepts (a larger offset is refused, not sent to the database)."""
BATCH_SIZE = 20_000
"""Rows per batch of a streamed insert: one reservation per batch and counter, one bulk write."""
INSIDE_UP_TO = 16
"""Largest group-commit group that reserves its numbers in the transaction writing its rows."""


@dataclass(frozen=True)
class Batch:
    """One written batch of a streamed insert: its rows' labels and the rows as written."""

    labels: list[Any]
    rows: list[dict[str, Any]]
    table: sa.Table

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def last_id(self) -> str:
        """The Id of the batch's last row."""
        return str(self.rows[-1]["Id"])

    def records(self) -> list[dict[str, Any]]:
        """The records as stored, as JSON-ready dicts (made on demand: a quiet import never pays)."""
        return _stored_form(self.table, self.rows)


def _plain(row: Mapping[Any, Any]) -> dict[str, Any]:
    """A record as JSON-ready values: timestamps as ISO text in UTC, days as ISO dates, decimals as
    floats."""
    out: dict[str, Any] = dict(row)
    for key, value in row.items():
        if type(value) is str or value is None:  # most values: nothing to convert
            continue
        if isinstance(value, datetime):  # drivers return naive UTC; say so
            out[key] = value.isoformat() + "+00:00" if value.tzinfo is None else to_utc(value).isoformat()
        elif isinstance(value, date):
            out[key] = value.isoformat()
        elif isinstance(value, Decimal):
            out[key] = float(value)
    return out


@dataclass(frozen=True)
class _Shape:
    """A table's columns by key and its column names in order, built once per table (kept in
    `table.info`): `table.c`'s own lookups cost more than a one-row insert's every other check."""

    columns: dict[str, sa.Column[Any]]
    names: tuple[str, ...]


def _shape(table: sa.Table) -> _Shape:
    return kept(
        table,
        ("autonumber.write.records.shape",),
        lambda: _Shape({c.key: c for c in table.c}, tuple(c.name for c in table.c)),
    )


def _stored_form(table: sa.Table, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The records as `insert` returns them: every column of the table, in its order."""
    names = _shape(table).names
    return [_plain({name: r.get(name) for name in names}) for r in records]


def _record_ids(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Ids a CommitOutcomeUnknown names (the group writer's records: never an adopted table)."""
    return [str(r["Id"]) for r in records]


def _failing_gaps(write: Callable[[], None], held: list[Pending]) -> None:
    """Run `write`; when the database refuses it, the held numbers' gap reason is its error (the
    journal records it once the transaction rolls back)."""
    try:
        write()
    except (sa.exc.DBAPIError, RecordError) as exc:  # RecordError: a value an adopted table refused
        for pending in held:
            pending.state, pending.detail = FAILED, (str(getattr(exc, "orig", exc)).splitlines() or [""])[0]
        raise


def _first_line(exc: BaseException) -> str:
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return lines[0][:200] if lines else type(cause).__name__


def insert_rows(
    conn: Connection, table: sa.Table, records: Sequence[Mapping[str, Any]], dialect: Dialect
) -> None:
    """One INSERT; many rows go as one multi-row INSERT (SQLAlchemy's "insertmanyvalues" batching,
    which RETURNING turns on for every backend, with the statement compiled once and cached), or as
    one executemany where the driver pipelines it (`Dialect.executemany_pipelined`)."""
    many_values = conn.dialect.insert_executemany_returning  # MySQL proper has no RETURNING
    if len(records) == 1:  # one row (a caller alone): no shape grouping, the table's own INSERT
        _insert_one(conn, table, records[0])
        return
    for rows in by_fields(records).values():  # callers of one group may set different fields
        if len(rows) == 1 or not many_values or dialect.executemany_pipelined:
            conn.execute(plain_insert(table), rows)  # PyMySQL rewrites executemany as one INSERT
        else:
            conn.execute(sa.insert(table).returning(table.c.Id), rows).all()


def _insert_one(conn: Connection, table: sa.Table, record: Mapping[str, Any]) -> None:
    """One row on the driver's cursor (db/driver.py): SQLAlchemy's execute path costs a caller's
    transaction more client CPU than the INSERT itself. Through SQLAlchemy when anything listens
    to the connection's statements (a caller's tracing or logging), so that it sees this one too."""
    if watched(conn):
        conn.execute(plain_insert(table), record)
        return
    fields = tuple(record)

    def build() -> sa.Insert:
        values = {name: sa.bindparam(name, type_=table.c[name].type) for name in fields}
        return sa.insert(table).values(values)

    statement(table, ("insert-one", fields), build, conn.dialect).run(conn, record)


def plain_insert(table: sa.Table) -> sa.Insert:
    """`INSERT INTO table`, built once per table (kept in `table.info`, so it goes with the table
    when a catalog change replaces it): no clause construction or cache-key generation per row."""
    stmt = table.info.get(_PLAIN_INSERT)
    if stmt is None:
        stmt = table.info.setdefault(_PLAIN_INSERT, sa.insert(table))
    return stmt  # type: ignore[no-any-return]


_PLAIN_INSERT = "autonumber.plain_insert"
RECORD_SAVEPOINT = "autonumber_record"
"""The savepoint records are written in within a caller's transaction that holds their numbers."""


class Records:
    """insert / insert_many / get / list / update for the objects of the catalog."""

    def __init__(
        self,
        db: sa.Engine,
        catalog: Catalog,
        engine: Engine,
        events: EventBus,
        *,
        group_commit: bool = False,
        group_writer: HeldConnection | None = None,
    ) -> None:
        self._db = db
        self.catalog = catalog
        self.engine = engine
        self.events = events
        if not engine.dialect.reserve_on_caller_when_written:
            watch(db)  # SQLite reserves in the caller's transaction: nothing is detached there
        self._group_writer = group_writer or db
        self.group_commit: GroupCommit | None = None
        if group_commit:
            self.group_commit = GroupCommit(self._write_own, final=self._lost_races, retry=self._write_own)

    @contextmanager
    def _txn(
        self, conn: Connection | None, db: sa.Engine | HeldConnection | None = None
    ) -> Iterator[Connection]:
        if conn is not None:
            yield conn
            return
        with (db or self._db).begin() as own:
            yield own

    @contextmanager
    def _writing(
        self,
        object_name: str,
        table: sa.Table,
        records: Sequence[Mapping[str, Any]],
        conn: Connection | None,
        db: sa.Engine | HeldConnection | None = None,
    ) -> Iterator[Connection]:
        """The transaction `records` are written in: the caller's `conn`, or one of our own that
        commits on exit. A lost connection raises DatabaseUnavailable while nothing can have
        committed (the caller owns its own COMMIT); our COMMIT failing other than on a lost race
        (which rolled back) raises CommitOutcomeUnknown naming the records' Ids."""
        committing = False
        try:
            if conn is not None:
                declare(conn)  # a caller's connection from another pool: the writer fence's declaration
            with self._txn(conn, db) as c:
                yield c
                committing = conn is None
        except sa.exc.SQLAlchemyError as exc:
            raise_if_refused(exc)
            dialect = self.engine.dialect
            if committing and not dialect.is_retryable(exc):
                ids = [str(r.get(key_column(table).name)) for r in records]
                raise CommitOutcomeUnknown(object_name, ids, _first_line(exc)) from exc
            # on a live caller's connection, PendingRollbackError says its transaction failed before
            failed_before = (
                isinstance(exc, sa.exc.PendingRollbackError) and conn is not None and not conn.invalidated
            )
            if dialect.is_unavailable(exc) and not failed_before:
                raise DatabaseUnavailable(f"writing {object_name} records", exc) from exc
            raise

    def insert(
        self,
        object_name: str,
        data: Mapping[str, Any],
        conn: Connection | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Insert one record; return it as stored, autonumbers included.

        With `idempotency_key`, a repeat of the same request returns the record stored the first
        time (IdempotencyConflict when the key came with different values).
        Without a transaction of the caller's or an idempotency key, the checked row may share one
        transaction with concurrent inserts of the same object (group commit) when the platform
        turned it on.
        """
        snapshot = self.catalog.current()
        # an adopted table's key comes from its own database, so its rows are written one by one
        grouped = conn is None and idempotency_key is None and not snapshot.is_adopted(object_name)
        if grouped and self.group_commit is not None:
            table = snapshot.table(object_name)
            record = self._checked(snapshot, object_name, table, data, f"{object_name} record #1")
            self._refuse_quarantined(snapshot, object_name)
            try:
                return self.group_commit.insert(object_name, record)
            except sa.exc.DBAPIError as exc:
                raise_if_refused(exc)
                raise
        return self.insert_many(object_name, [data], conn, idempotency_key=idempotency_key)[0]

    def insert_many(
        self,
        object_name: str,
        rows: Iterable[Mapping[str, Any]],
        conn: Connection | None = None,
        *,
        idempotency_key: str | None = None,
        batch_size: int | None = None,
    ) -> list[dict[str, Any]]:
        """Insert many records of one object in one transaction; return them as stored.

        A list (or other sequence) without `batch_size` is one batch: every value is checked before
        any number is reserved. Any other iterable, or a `batch_size`, is streamed through
        `insert_stream` in batches of that size (checked batch by batch; a bad row rolls back the
        whole transaction). When our own COMMIT fails, the records are looked for (they are
        returned if it landed); when the database cannot tell, CommitOutcomeUnknown names the Ids
        to look up (a streamed insert: its last Id, stored exactly when every row is). A connection
        lost before COMMIT (ours or the caller's) raises
        DatabaseUnavailable.
        """
        if idempotency_key is None and (batch_size is not None or not isinstance(rows, Sequence)):
            numbered = ((f"{object_name} record #{i}", row) for i, row in enumerate(rows, 1))
            stored: list[dict[str, Any]] = []
            for batch in self.insert_stream(object_name, numbered, conn, batch_size=batch_size or BATCH_SIZE):
                stored += batch.records()
            return stored
        rows = list(rows)
        snapshot = self.catalog.current()
        table = snapshot.table(object_name)
        records = [
            self._checked(snapshot, object_name, table, row, f"{object_name} record #{i + 1}")
            for i, row in enumerate(rows)
        ]
        if not records:
            return []
        self._refuse_quarantined(snapshot, object_name)
        key = idempotency.check_key(idempotency_key) if idempotency_key is not None else None
        request = idempotency.digest(object_name, rows) if key is not None else ""
        if key is not None:
            idempotency.ensure_table(self._db)
        skips = self.skip_tries()
        while True:
            try:
                with self._writing(object_name, table, records, conn) as c:
                    earlier = idempotency.claim(c, key, object_name, request) if key is not None else None
                    if earlier is not None:
                        return self._by_ids(c, object_name, table, earlier)
                    self._write(snapshot, object_name, table, records, c)
                    if key is not None:
                        idempotency.remember(c, key, [str(r.get(key_column(table).name)) for r in records])
            except CommitOutcomeUnknown:  # settled when the database can say the rows are there
                landed = None if snapshot.is_adopted(object_name) else self._landed(object_name, records)
                if landed is None:
                    raise
                stored = landed
            except sa.exc.DBAPIError as exc:
                if self.skipped_stored(exc, object_name, records, conn, skips.again()):
                    continue  # a number was already stored: its counter moved past, new numbers
                raise
            except CounterMissing as exc:
                if conn is None and self._counter_moved(exc):
                    snapshot = self.catalog.current()
                    continue
                raise
            else:
                stored = _stored_form(table, records)
            break
        metrics.records_created(object_name).inc(len(records))
        return stored

    def insert_stream(
        self,
        object_name: str,
        rows: Iterable[tuple[Any, Mapping[str, Any]]],
        conn: Connection | None = None,
        *,
        batch_size: int = BATCH_SIZE,
        commit_each: bool = False,
        rejected: Rejected | None = None,
        before_commit: Callable[[Batch], None] | None = None,
    ) -> Iterator[Batch]:
        """Insert `(label, values)` pairs from any iterable in batches, holding one batch at a time.

        Each batch is checked (errors name `str(label)`), its cross-record tokens resolved once,
        one reservation made per counter, and its rows written by the backend's bulk path. By
        default every batch goes into ONE transaction (the caller's `conn`, or ours, committed when
        the iterator is exhausted; closing it early rolls everything back). `commit_each`: each
        batch is its own transaction with its numbers reserved inside it, so a kill leaves whole
        batches; `before_commit` hears each batch just before its COMMIT (progress records).
        `rejected`: a row refused by the checks is reported there and skipped instead of raising.
        A COMMIT of ours that fails is settled by a locking read of the batch's (or the import's)
        last Id; when the database cannot tell, CommitOutcomeUnknown names that one Id.
        """
        if batch_size < 1:
            raise RecordError(f"batch size must be at least 1, got {batch_size}")
        table = self.catalog.current().table(object_name)  # UnknownObject before reading a row
        batches = self._checked_batches(object_name, table, rows, batch_size, rejected)
        if not commit_each:
            probe: list[dict[str, Any]] = []  # the last row written: stored iff the import is
            writing: list[dict[str, Any]] = []  # the batches on their way
            try:
                with self._writing(object_name, table, probe, conn) as c, BatchSender() as sender:
                    sent: Batch | None = None  # written, and sent once the next batch is written
                    ours = sender if conn is None else None  # a caller may use its conn between batches
                    for labels, records in batches:  # read and checked while `sent` is on its way
                        writing = [*(sent.rows if sent is not None else ()), *records]  # a failure's suspects
                        batch = self._write_batch(object_name, labels, records, c, inside=False, sender=ours)
                        if sent is not None:
                            probe[:] = sent.rows[-1:]
                            yield sent
                        sent = batch
                    sender.settle()
                    if sent is not None:
                        probe[:] = sent.rows[-1:]
                        yield sent
            except CommitOutcomeUnknown:
                if not probe or self._landed(object_name, probe) is None:
                    raise
            except sa.exc.DBAPIError as exc:
                # one transaction for the whole stream: its rows cannot be written again from here
                rerun = "the import's transaction rolled back: run it again"
                self.skipped_stored(exc, object_name, writing, conn, False, rerun)
                raise
            return
        if conn is not None:
            raise RecordError("commit_each commits batches itself: it cannot run in a caller's transaction")
        for labels, records in batches:
            skips = self.skip_tries()
            while True:
                try:
                    with self._writing(object_name, table, records[-1:], None) as c:
                        batch = self._write_batch(object_name, labels, records, c, inside=True)
                        if before_commit is not None:
                            before_commit(batch)
                except CommitOutcomeUnknown:
                    if self._landed(object_name, records[-1:]) is None:
                        raise
                except sa.exc.DBAPIError as exc:
                    if self.skipped_stored(exc, object_name, records, None, skips.again()):
                        continue
                    raise
                break
            yield batch

    def _checked_batches(
        self,
        object_name: str,
        table: sa.Table,
        rows: Iterable[tuple[Any, Mapping[str, Any]]],
        batch_size: int,
        rejected: Rejected | None,
    ) -> Iterator[tuple[list[Any], list[dict[str, Any]]]]:
        """Batches of up to `batch_size` accepted rows, each checked against the catalog as it is
        when its batch starts."""
        chunks = PairChunks(rows)
        while True:
            labels: list[Any] = []
            records: list[dict[str, Any]] = []
            self._row_check(object_name, table).fill(chunks, labels, records, batch_size, rejected)
            if records:
                yield labels, self._with_ids(object_name, records)
            if len(records) < batch_size:  # the rows ended
                return

    def _row_check(self, object_name: str, table: sa.Table) -> RowCheck:
        """The row check of a batch, against the catalog as it is now."""
        snapshot = self.catalog.current()
        writable = frozenset(table.c.keys()) - snapshot.autonumber_field_set(object_name)
        if not snapshot.is_adopted(object_name):
            writable -= frozenset(SYSTEM_COLUMNS)

        def full(data: Mapping[str, Any], label: Any) -> dict[str, Any]:
            return self._checked(snapshot, object_name, table, data, label)

        return RowCheck(table, writable, full)

    def _with_ids(self, object_name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A batch's records with their Ids, in index order (an adopted table's come from it)."""
        if not self.catalog.current().is_adopted(object_name):
            for record, record_id in zip(records, ordered_ids(len(records)), strict=True):
                record["Id"] = record_id
        return records

    def _write_batch(
        self,
        object_name: str,
        labels: list[Any],
        records: list[dict[str, Any]],
        c: Connection,
        *,
        inside: bool,
        sender: BatchSender | None = None,
    ) -> Batch:
        """Write one batch in `c`'s transaction; with `sender`, the batch before it is settled
        first (its error raised here) and this one's rows may still be on their way when this
        returns (settle the sender before using `c` again)."""
        snapshot = self.catalog.current()
        self._refuse_quarantined(snapshot, object_name)
        table = snapshot.table(object_name)
        self._write(snapshot, object_name, table, records, c, inside=inside, bulk=True, sender=sender)
        metrics.records_created(object_name).inc(len(records))
        return Batch(labels, records, table)

    def _write_own(
        self, object_name: str, records: list[dict[str, Any]], after: BaseException | None = None
    ) -> list[dict[str, Any]]:
        """Write checked records in a short transaction of their own (the group-commit writer);
        `after`: the error of an earlier write of these same records (a member's group).

        Its numbers are reserved in that transaction and commit or roll back with the rows. When
        the COMMIT's outcome is unknown (the connection died during it), the rows are written again
        under the same Ids once, and if that is refused as a duplicate Id the first COMMIT did land
        — the stored records are returned. A connection lost before COMMIT stored nothing: it is
        tried again once. A lost race (deadlock, serialization or Galera certification failure, at
        a statement or at COMMIT; a reservation out of retries) rolled everything back, numbers
        included: it is retried under the retry policy's group budget and time window
        (docs/engine.md, "Retry policy"). Once some COMMIT's outcome was unknown, giving up raises
        CommitOutcomeUnknown with the Ids, never an error that says "nothing stored". Never a
        record stored twice, never a number reused."""
        reserver = self.engine.reserver
        tries = reserver.policy.tries(reserver.policy.group_attempts, reserver.sleep)
        unknown = isinstance(after, CommitOutcomeUnknown)
        reconnected = False
        skips = self.skip_tries()
        while True:
            attempt = [dict(r) for r in records]
            try:
                return self._write_alone(object_name, attempt)
            except Exception as exc:
                unknown = unknown or isinstance(exc, CommitOutcomeUnknown)
                duplicate = isinstance(exc, sa.exc.DBAPIError) and self.engine.dialect.is_duplicate_key(exc)
                if unknown or duplicate:
                    landed = self._landed(object_name, records)
                    if landed is not None:
                        return landed
                if (
                    isinstance(exc, sa.exc.DBAPIError)
                    and duplicate
                    and self.skipped_stored(exc, object_name, attempt, None, skips.again())
                ):
                    continue
                if isinstance(exc, CounterMissing) and self._counter_moved(exc):
                    continue
                if isinstance(exc, (CommitOutcomeUnknown, DatabaseUnavailable)) and not reconnected:
                    reconnected = True
                    continue
                if self._lost_races(exc) and tries.again():
                    continue
                if not unknown or isinstance(exc, CommitOutcomeUnknown):
                    raise
                root = exc.__cause__ if isinstance(exc, DatabaseUnavailable) and exc.__cause__ else exc
                cause = f"then {type(root).__name__}: {_first_line(root)}"
                raise CommitOutcomeUnknown(object_name, _record_ids(records), cause) from exc

    def _counter_moved(self, exc: CounterMissing) -> bool:
        """Whether the write met a counter its field no longer draws from (it joined or left a shared
        counter after this process read the rule): the catalog is read again, and the write can be
        tried again, nothing of it stored, with the rule as it is now."""
        try:
            return self.catalog.refresh().rule(exc.field_id).counter_id != exc.counter_id
        except AutonumberError:
            return False

    def skip_tries(self) -> Tries:
        """How often one write may meet numbers already stored and try again (the retry policy's
        attempts: one skip moves a counter past every stored value, so more is rare)."""
        policy = self.engine.reserver.policy
        return policy.tries(policy.attempts, lambda _: None, windowed=False)

    def skipped_stored(
        self,
        exc: sa.exc.DBAPIError,
        object_name: str,
        records: list[dict[str, Any]],
        conn: Connection | None,
        again: bool,
        rerun: str = "it kept meeting stored values: run it again",
    ) -> bool:
        """After `records`' write failed with `exc`: whether a number of theirs was already stored
        by a row written outside the product — its counter then moved past (engine/skip.py) and the
        write may be tried again with new numbers (`again`: the tries are not spent). False when
        `exc` is something else; NumberAlreadyStored (saying `rerun`) when the write cannot be
        tried again: the tries are spent, or the caller's transaction did not survive the error
        (PostgreSQL)."""
        dialect = self.engine.dialect
        if not dialect.is_duplicate_key(exc):
            return False
        in_place = conn is not None and not dialect.error_aborts_transaction
        snapshot = self.catalog.current()
        # the caller's transaction may hold its own uncommitted rows, or the counter row's lock
        # (SQLite's write lock, a gapless rule): the skip then reads and moves on its connection
        held = conn is not None and _holds_counters(self.engine, snapshot, object_name, conn)
        on = conn if in_place and held else None
        reader = conn if in_place else None
        taken, moved = skip_stored(self.engine.reserver, snapshot, object_name, records, reader, on)
        if not (taken or moved):
            return False
        if conn is not None and not in_place:
            raise NumberAlreadyStored(
                object_name, taken, "the database rolled back your transaction: run it again"
            ) from exc
        if not again:
            raise NumberAlreadyStored(object_name, taken, rerun) from exc
        return True

    def _lost_races(self, exc: BaseException) -> bool:
        """`_write_own` gave up on lost races (its retry budget and window are spent)."""
        return isinstance(exc, ReservationFailed) or (
            isinstance(exc, sa.exc.DBAPIError) and self.engine.dialect.is_retryable(exc)
        )

    def _landed(self, object_name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The records as stored when an earlier COMMIT of theirs did land (Ids are fresh, with 74
        random bits each, so finding every one means that), else None — also when the database
        cannot be asked.

        A locking read: it waits for a COMMIT the server is still running (MariaDB's KILL closes the
        socket while the killed session goes on committing), where a plain read would miss it."""
        try:
            stored = self._stored(object_name, [r["Id"] for r in records], lock=True)
        except (sa.exc.SQLAlchemyError, AutonumberError):
            return None
        return stored if len(stored) == len(records) else None

    def exists(self, object_name: str, record_id: str) -> bool:
        """Whether a record with this Id is stored (a resumed import asks about its last batch)."""
        return bool(self._stored(object_name, [record_id]))

    def _stored(self, object_name: str, ids: Sequence[str], *, lock: bool = False) -> list[dict[str, Any]]:
        """The stored records with these Ids, in that order (those found); `lock`: a shared-lock read."""
        table = self.catalog.current().table(object_name)
        stmt = sa.select(table).where(table.c.Id.in_(ids))
        if lock:
            stmt = stmt.with_for_update(read=True)
        with self._db.connect() as conn:
            rows = {r["Id"]: _plain(r) for r in conn.execute(stmt).mappings()}
        return [rows[i] for i in ids if i in rows]

    def _write_alone(self, object_name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One attempt of the group writer, in a short transaction of its own."""
        snapshot = self.catalog.current()
        self._refuse_quarantined(snapshot, object_name)
        table = snapshot.table(object_name)
        with self._writing(object_name, table, records, None, self._group_writer) as c:
            self._write(
                snapshot, object_name, table, records, c, inside=self._reserve_inside(records), alone=True
            )
        metrics.records_created(object_name).inc(len(records))
        return _stored_form(table, records)

    def _reserve_inside(self, records: list[dict[str, Any]]) -> bool:
        """Whether a group reserves its numbers in its own transaction.

        A small group does: one COMMIT instead of two, and its multi-row INSERT adds little to the
        time the counter row stays locked. A larger group reserves first, in a reservation
        transaction of its own, so the counter row is not locked while its many rows are written:
        the group writers of other processes overlap instead of queueing on that lock. SQLite has
        one writer at a time, so it always reserves inside."""
        return len(records) <= INSIDE_UP_TO or self.engine.dialect.reserve_on_caller_when_written

    def _write(
        self,
        snapshot: CatalogSnapshot,
        object_name: str,
        table: sa.Table,
        records: list[dict[str, Any]],
        c: Connection,
        *,
        inside: bool = False,
        bulk: bool = False,
        alone: bool = False,
        sender: BatchSender | None = None,
    ) -> None:
        """Assign the numbers, publish RecordBeforeCreate, insert the rows in `c`'s transaction;
        `inside`: the numbers are reserved in that transaction itself (the group writer);
        `bulk`: the rows go by the backend's bulk path (COPY on PostgreSQL), without RETURNING;
        `alone`: the transaction is ours and holds nothing else (the group writer's), so where its
        whole work is one statement, that statement may commit it (`_insert_numbered`);
        `sender`: bulk rows the backend can send from another thread are sent there.

        In a caller's transaction that its numbers are reserved in (SQLite), the records are
        written in a savepoint of it: rows the database refuses take their numbers back with them,
        and the caller's transaction can go on without a gap."""
        on_caller = not (inside or bulk) and self.engine.reserves_on_caller(c)
        with savepoint(c, RECORD_SAVEPOINT) if on_caller else nullcontext():
            adopted = snapshot.is_adopted(object_name)
            rules = _lock_order(snapshot.rules_of(object_name), inside)
            if sender is not None and not self._leaves_alone(snapshot, object_name, rules, c):
                sender.settle()  # this batch reads or writes on `c` before its rows: the last one first
            elif sender is not None:
                sender.settle_if_done()
            read = check_lookups(c, snapshot, object_name, records)  # before any number is reserved
            at = None
            # the numbered insert runs on the driver's cursor: in a caller's transaction, only where
            # nothing listens to its statements
            numbered_here = inside or (on_caller and not watched(c))
            if numbered_here and not (adopted or bulk) and self._skips_clock_read(rules):
                number = self.engine.numbered_by_insert(rules[0], c)
                if number is not None and len(by_fields(records)) == 1:  # one INSERT … SELECT writes all
                    commit = alone and not read and self.engine.dialect.commits_alone(c)
                    stored = self._insert_numbered(object_name, c, table, rules[0], records, number, commit)
                    for record, (value, created) in zip(records, stored, strict=True):
                        record[number.column], record[number.created] = value, created
                    return
                if inside and len(records) == 1 and self.engine.stamps_later(rules[0], c):
                    self._write_stamped(c, table, rules[0], records[0])
                    return
            # Every token resolves before any reservation: one that fails closed consumes no number.
            crosses = [self.engine.resolve(rule.field_id, records, c) for rule in rules]
            for rule in rules:  # so are the records' own dates of the rules dated by one
                self.engine.check_dates(rule.field_id, records)
            held: list[Pending] = []
            for rule, cross in zip(rules, crosses, strict=True):
                assigned = self.engine.assign(
                    rule.field_id, records, c, cross=cross, inside=inside, stored_by=True
                )
                held.append(self._hold(c, assigned.detached))
                at = assigned.assigned_at
                for record, value in zip(records, assigned.values, strict=True):
                    record[rule.field_name] = value
            if not adopted:
                created = at if at is not None else self.engine.dialect.utc_now(c)
                for record in records:
                    record["CreatedDate"] = created
            self.events.publish(RecordBeforeCreate(object_name, records, c))
            dialect = self.engine.dialect
            send = dialect.bulk_sender(c, table, records) if bulk and sender and not adopted else None
            if sender is not None:
                if send is not None:
                    sender.start(lambda handed: _failing_gaps(lambda: send(handed), held))
                    return
                sender.settle()
            if adopted:
                numbered = {rule.field_name for rule in rules}
                _failing_gaps(lambda: _insert_adopted(c, object_name, table, records, numbered), held)
            elif bulk:
                _failing_gaps(lambda: dialect.bulk_insert(c, table, records), held)
            else:
                _failing_gaps(lambda: insert_rows(c, table, records, dialect), held)

    def _leaves_alone(
        self, snapshot: CatalogSnapshot, object_name: str, rules: list[Rule], c: Connection
    ) -> bool:
        """Whether `_write` sends nothing on `c` before its rows: a rule's reservation gives the
        CreatedDate (with no rule the clock is read on `c`), no lookup to check, no token read in
        the caller's transaction, no gapless rule or reservation on the caller's connection, and
        no RecordBeforeCreate handler (one may use the event's connection)."""
        return bool(rules) and not (
            checked_lookups(snapshot, object_name)
            or self.engine.reserves_on_caller(c)
            or self.events.has_subscribers(RecordBeforeCreate)
            or any(
                rule.gapless or any(ref.readStrategy == "caller_txn" for ref in rule.token_refs)
                for rule in rules
            )
        )

    def _insert_numbered(
        self,
        object_name: str,
        c: Connection,
        table: sa.Table,
        rule: Rule,
        records: list[dict[str, Any]],
        number: Numbered,
        commit: bool,
    ) -> list[tuple[str, datetime]]:
        """Engine.insert_numbered; with `commit` the statement commits by itself (no BEGIN or
        COMMIT round trip of its own), so a connection lost while it runs leaves the COMMIT's
        outcome unknown: CommitOutcomeUnknown naming the records' Ids (`_write_own` then looks)."""
        try:
            return self.engine.insert_numbered(rule, c, table, records, number, commit=commit)
        except sa.exc.DBAPIError as exc:
            if commit and self.engine.dialect.is_unavailable(exc):
                raise CommitOutcomeUnknown(object_name, _record_ids(records), _first_line(exc)) from exc
            raise

    def _skips_clock_read(self, rules: Sequence[Rule]) -> bool:
        """Whether the group writer's records may be numbered without the clock sample read first
        (`_write_stamped`, Engine.insert_numbered): one rule, and no RecordBeforeCreate subscriber
        (it is shown the records, CreatedDate included, before the INSERT)."""
        return len(rules) == 1 and not self.events.has_subscribers(RecordBeforeCreate)

    def _write_stamped(self, c: Connection, table: sa.Table, rule: Rule, record: dict[str, Any]) -> None:
        """The number reserved without reading the clock back, then the row INSERTed with its
        CreatedDate read from the counter row this transaction stamped and holds locked, returned
        by the INSERT itself: UPDATE, INSERT … RETURNING, COMMIT on MariaDB instead of UPDATE,
        SELECT, INSERT, COMMIT. CreatedDate is the reservation's one clock sample, as elsewhere."""
        record[rule.field_name] = self.engine.assign_stamped(rule, c)
        created = self.engine.dialect.insert_stamped(
            c, table, record, "CreatedDate", STAMPED_AT, stamp_params(rule)
        )
        if created is None:  # the stamped counter row is gone: never store a record without its date
            raise CounterMissing(rule.field_id, "", rule.counter_id)
        record["CreatedDate"] = created

    def _by_ids(
        self, c: Connection, object_name: str, table: sa.Table, ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The records an earlier request with the same idempotency key stored, in its order."""
        found = {}
        for record_id in ids:
            stmt = sa.select(table).where(_key_equals(table, object_name, record_id))
            row = c.execute(stmt).mappings().first()
            if row is None:
                raise RecordNotFound(object_name, record_id)
            found[record_id] = _plain(row)
        return [found[i] for i in ids]

    def _hold(self, conn: Connection, ranges: list[Range]) -> Pending:
        """Journal these values as given back if the caller's transaction rolls back."""
        pending = Pending(self.engine.reserver.journal, self.engine.reserver.db, ranges)
        track(conn, pending)
        return pending

    def check(self, object_name: str, data: Mapping[str, Any], where: str) -> None:
        """Validate one record without writing; a RecordError names `where` (e.g. `file.jsonl:3`)."""
        snapshot = self.catalog.current()
        self._checked(snapshot, object_name, snapshot.table(object_name), data, where)

    def _refuse_quarantined(self, snapshot: CatalogSnapshot, object_name: str) -> None:
        for row in snapshot.fields.get(object_name, ()):
            if row.field_id in snapshot.quarantined:
                raise RuleQuarantined(row.field_id, snapshot.quarantined[row.field_id])

    def _checked(
        self,
        snapshot: CatalogSnapshot,
        object_name: str,
        table: sa.Table,
        data: Mapping[str, Any],
        where: object,
        *,
        allow_id: bool = False,
    ) -> dict[str, Any]:
        """The record to write; `where` (text, or a label whose str() is) is formatted only into an
        error, so a streamed import does not build one string per row."""
        if not isinstance(data, Mapping):
            raise RecordError(f"{where}: expected a JSON object of field values, got {type(data).__name__}")
        autonumbers = snapshot.autonumber_field_set(object_name)
        adopted = snapshot.is_adopted(object_name)
        columns = _shape(table).columns
        record: dict[str, Any] = {}
        for key, value in data.items():
            if key in autonumbers:
                raise RecordError(
                    f"{where}: {object_name}.{key} is an autonumber field; it is assigned on insert "
                    "and cannot be supplied"
                )
            if not adopted and key in SYSTEM_COLUMNS and not (allow_id and key == "Id"):
                raise RecordError(f"{where}: {key} is set by the platform and cannot be supplied")
            column = columns.get(key)
            if column is None:
                raise RecordError(f"{where}: {object_name} has no field {key!r}")
            record[key] = checked_value(where, object_name, column, value)
        if not adopted:
            record["Id"] = new_id()
        return record

    def get(self, object_name: str, record_id: str, conn: Connection | None = None) -> dict[str, Any]:
        """One record by Id, or RecordNotFound."""
        table = self.catalog.current().table(object_name)
        if text_problem(record_id):
            raise RecordNotFound(object_name, record_id)
        stmt = sa.select(table).where(_key_equals(table, object_name, record_id))
        if conn is not None:
            row = conn.execute(stmt).mappings().first()
        else:
            with self._db.connect() as own:
                row = own.execute(stmt).mappings().first()
        if row is None:
            raise RecordNotFound(object_name, record_id)
        return _plain(row)

    def list(self, object_name: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """A page of records, newest first."""
        table = self.catalog.current().table(object_name)
        if not (0 < limit <= MAX_LIMIT and 0 <= offset <= MAX_OFFSET):
            raise RecordError(
                f"paging out of range: limit must be 1..{MAX_LIMIT} and offset 0..{MAX_OFFSET}, "
                f"got limit={limit}, offset={offset}"
            )
        key = key_column(table)
        newest = (table.c.CreatedDate.desc(), key) if "CreatedDate" in table.c else (key.desc(),)
        stmt = sa.select(table).order_by(*newest).limit(limit).offset(offset)
        with self._db.connect() as conn:
            return [_plain(r) for r in conn.execute(stmt).mappings()]

    def count(self, object_name: str) -> int:
        """How many records an object has."""
        table = self.catalog.current().table(object_name)
        with self._db.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())

    def update(
        self,
        object_name: str,
        record_id: str,
        changes: Mapping[str, Any],
        conn: Connection | None = None,
    ) -> dict[str, Any]:
        """Change ordinary fields; an autonumber field is refused (locked after create)."""
        snapshot = self.catalog.current()
        table = snapshot.table(object_name)
        checked = self._checked(snapshot, object_name, table, changes, f"{object_name} {record_id!r}")
        checked.pop("Id", None)
        checked.pop(key_column(table).name, None)
        if text_problem(record_id):
            raise RecordNotFound(object_name, record_id)
        if not checked:
            return self.get(object_name, record_id, conn)
        with self._txn(conn) as c:
            check_lookups(c, snapshot, object_name, [checked])
            where = _key_equals(table, object_name, record_id)
            result = c.execute(sa.update(table).where(where).values(checked))
            if result.rowcount == 0:
                raise RecordNotFound(object_name, record_id)
            return self.get(object_name, record_id, c)


def _holds_counters(engine: Engine, snapshot: CatalogSnapshot, object_name: str, conn: Connection) -> bool:
    """Whether `conn`'s transaction may hold the object's counter rows: it reserves on the caller
    (SQLite), or a gapless rule reserved in it."""
    return engine.reserves_on_caller(conn) or any(r.gapless for r in snapshot.rules_of(object_name))


def _lock_order(rules: Sequence[Rule], inside: bool) -> list[Rule]:
    """The order a write takes its numbers in, so that no wait for a connection closes a cycle.

    A caller's transaction reserves its standard fields (each on a reservation connection) before
    it locks a gapless counter row: holding that lock it never waits for the reservation pool
    whose connections may be waiting on the lock. The group writer locks its gapless rows first
    and its standard rows last: once it holds a standard counter row, it waits on nobody."""
    return sorted(rules, key=lambda rule: rule.gapless != inside)


def _key_equals(table: sa.Table, object_name: str, record_id: str) -> sa.ColumnElement[bool]:
    """`key = record_id`, the Id given as text converted to an integer key (adopted tables)."""
    key = key_column(table)
    value: Any = record_id
    if isinstance(key.type, sa.Integer):
        try:
            value = int(record_id)
        except ValueError:
            raise RecordNotFound(object_name, record_id) from None
    condition: sa.ColumnElement[bool] = key == value
    return condition


def _insert_adopted(
    conn: Connection, object_name: str, table: sa.Table, records: list[dict[str, Any]], numbered: set[str]
) -> None:
    """Insert into an application's own table row by row, keeping the key its database generated;
    a value its column type refuses is a RecordError naming the field (values.refused_value)."""
    key = key_column(table).name
    for i, record in enumerate(records, 1):
        try:
            result = conn.execute(sa.insert(table), record)
        except sa.exc.StatementError as exc:
            where = f"{object_name} record #{i}"
            given = [name for name in record if name not in numbered]
            refused = refused_value(exc, where, object_name, record, given)
            if refused is None:
                raise
            raise refused from exc
        if record.get(key) is None and result.inserted_primary_key is not None:
            record[key] = result.inserted_primary_key[0]
