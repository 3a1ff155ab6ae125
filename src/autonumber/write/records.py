"""Record persistence: numbers are assigned, `RecordBeforeCreate` is published, then the row is
inserted (docs/engine.md). Autonumber fields cannot be supplied by the caller nor changed later."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog.cache import Catalog, CatalogSnapshot, Rule
from ..db.driver import savepoint, watched
from ..db.fence import raise_if_refused
from ..db.held import HeldConnection
from ..db.objects import key_column
from ..engine import Engine, metrics
from ..engine.journal import Pending, Range, track, watch
from ..errors import (
    AutonumberError,
    CommitOutcomeUnknown,
    CounterMissing,
    DatabaseUnavailable,
    RecordError,
    RecordNotFound,
    ReservationFailed,
    WriteConflict,
)
from ..events import EventBus, RecordBeforeCreate
from . import idempotency
from .batch_sender import BatchSender
from .bulk_rows import PairChunks, Rejected, RowCheck, ordered_ids
from .checks import checked, refuse_quarantined
from .fast_paths import insert_numbered, write_stamped
from .group_commit import GroupCommit
from .lookups import check_lookups, checked_lookups
from .reads import RecordReads
from .rows import (
    RECORD_SAVEPOINT,
    SYSTEM_COLUMNS,
    Batch,
    failing_gaps,
    first_line,
    insert_adopted,
    insert_rows,
    key_equals,
    record_ids,
    stored_form,
)
from .skips import skip_tries, skipped_stored
from .strategy import Call, Numbering, choose_call, choose_numbering, reserve_inside
from .transaction import own_or_callers, writing
from .values import text_problem

BATCH_SIZE = 5_000
"""Rows per batch of a streamed insert: one reservation per batch and counter, one bulk write.
Two batches are alive at once (one on its way while the next is checked): at 20,000 a 1M-row
SQLite import peaked at 111 MB RSS, at 5,000 at 81 MB, 0.4 s (10 %) slower (bench/bench_import.py)."""


class Records(RecordReads):
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
        engine.dialect.journal_outcomes(db, watch)
        self._group_writer = group_writer or db
        self.group_commit: GroupCommit | None = None
        if group_commit:
            self.group_commit = GroupCommit(self._write_own, final=self._lost_races, retry=self._write_own)

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
        call = choose_call(
            conn=conn,
            idempotent=idempotency_key is not None,
            adopted=snapshot.is_adopted(object_name),
            grouping=self.group_commit is not None,
            one=True,
        )
        if call is Call.GROUPED and self.group_commit is not None:
            table = snapshot.table(object_name)
            record = checked(snapshot, object_name, table, data, f"{object_name} record #1")
            refuse_quarantined(snapshot, object_name)
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
        call = choose_call(
            conn=conn,
            idempotent=idempotency_key is not None,
            adopted=False,
            grouping=False,
            streamed=batch_size is not None or not isinstance(rows, Sequence),
        )
        if call is Call.STREAMED:
            numbered = ((f"{object_name} record #{i}", row) for i, row in enumerate(rows, 1))
            stored: list[dict[str, Any]] = []
            for batch in self.insert_stream(object_name, numbered, conn, batch_size=batch_size or BATCH_SIZE):
                stored += batch.records()
            return stored
        rows = list(rows)
        snapshot = self.catalog.current()
        table = snapshot.table(object_name)
        records = [
            checked(snapshot, object_name, table, row, f"{object_name} record #{i + 1}")
            for i, row in enumerate(rows)
        ]
        if not records:
            return []
        refuse_quarantined(snapshot, object_name)
        key = idempotency.check_key(idempotency_key) if idempotency_key is not None else None
        request = idempotency.digest(object_name, rows) if key is not None else ""
        if key is not None:
            idempotency.ensure_table(self._db)
        skips = skip_tries(self.engine)
        while True:
            try:
                with writing(self.engine, self._db, object_name, table, records, conn) as c:
                    earlier = idempotency.claim(c, key, object_name, request) if key is not None else None
                    if earlier is not None:
                        return self._by_ids(c, object_name, table, earlier)
                    self._write(snapshot, object_name, table, records, c)
                    if key is not None:
                        idempotency.remember(c, key, [str(r.get(key_column(table).name)) for r in records])
            except CommitOutcomeUnknown:  # settled when the database can say the rows are there
                landed = None if snapshot.is_adopted(object_name) else self.landed(object_name, records)
                if landed is None:
                    raise
                stored = landed
            except sa.exc.DBAPIError as exc:
                if skipped_stored(self.engine, self.catalog, exc, object_name, records, conn, skips.again()):
                    continue  # a number was already stored: its counter moved past, new numbers
                raise
            except CounterMissing as exc:
                if conn is None and self._counter_moved(exc):
                    snapshot = self.catalog.current()
                    continue
                raise
            else:
                stored = stored_form(table, records)
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
        call = choose_call(
            conn=conn, idempotent=False, adopted=False, grouping=False, streamed=True, commit_each=commit_each
        )
        if call is Call.STREAMED:
            probe: list[dict[str, Any]] = []  # the last row written: stored iff the import is
            suspects: list[dict[str, Any]] = []  # the batches on their way
            try:
                with (
                    writing(self.engine, self._db, object_name, table, probe, conn) as c,
                    BatchSender() as sender,
                ):
                    sent: Batch | None = None  # written, and sent once the next batch is written
                    ours = sender if conn is None else None  # a caller may use its conn between batches
                    for labels, records in batches:  # read and checked while `sent` is on its way
                        suspects = [*(sent.rows if sent is not None else ()), *records]  # on their way
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
                if not probe or self.landed(object_name, probe) is None:
                    raise
            except sa.exc.DBAPIError as exc:
                # one transaction for the whole stream: its rows cannot be written again from here
                rerun = "the import's transaction rolled back: run it again"
                skipped_stored(self.engine, self.catalog, exc, object_name, suspects, conn, False, rerun)
                raise
            return
        if conn is not None:
            raise RecordError("commit_each commits batches itself: it cannot run in a caller's transaction")
        for labels, records in batches:
            skips = skip_tries(self.engine)
            while True:
                try:
                    with writing(self.engine, self._db, object_name, table, records[-1:], None) as c:
                        batch = self._write_batch(object_name, labels, records, c, inside=True)
                        if before_commit is not None:
                            before_commit(batch)
                except CommitOutcomeUnknown:
                    if self.landed(object_name, records[-1:]) is None:
                        raise
                except sa.exc.DBAPIError as exc:
                    if skipped_stored(
                        self.engine, self.catalog, exc, object_name, records, None, skips.again()
                    ):
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
            return checked(snapshot, object_name, table, data, label)

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
        refuse_quarantined(snapshot, object_name)
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
        skips = skip_tries(self.engine)
        while True:
            attempt = [dict(r) for r in records]
            try:
                return self._write_alone(object_name, attempt)
            except Exception as exc:
                unknown = unknown or isinstance(exc, CommitOutcomeUnknown)
                duplicate = isinstance(exc, sa.exc.DBAPIError) and self.engine.dialect.is_duplicate_key(exc)
                if unknown or duplicate:
                    landed = self.landed(object_name, records)
                    if landed is not None:
                        return landed
                if (
                    isinstance(exc, sa.exc.DBAPIError)
                    and duplicate
                    and skipped_stored(
                        self.engine, self.catalog, exc, object_name, attempt, None, skips.again()
                    )
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
                cause = f"then {type(root).__name__}: {first_line(root)}"
                raise CommitOutcomeUnknown(object_name, record_ids(records), cause) from exc

    def _counter_moved(self, exc: CounterMissing) -> bool:
        """Whether the write met a counter its field no longer draws from (it joined or left a shared
        counter after this process read the rule): the catalog is read again, and the write can be
        tried again, nothing of it stored, with the rule as it is now."""
        try:
            return self.catalog.refresh().rule(exc.field_id).counter_id != exc.counter_id
        except AutonumberError:
            return False

    def _lost_races(self, exc: BaseException) -> bool:
        """`_write_own` gave up on lost races (its retry budget and window are spent)."""
        return isinstance(exc, (ReservationFailed, WriteConflict)) or (
            isinstance(exc, sa.exc.DBAPIError) and self.engine.dialect.is_retryable(exc)
        )

    def check(self, object_name: str, data: Mapping[str, Any], where: str) -> None:
        """Validate one record without writing; a RecordError names `where` (e.g. `file.jsonl:3`)."""
        snapshot = self.catalog.current()
        checked(snapshot, object_name, snapshot.table(object_name), data, where)

    def _write_alone(self, object_name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One attempt of the group writer, in a short transaction of its own."""
        snapshot = self.catalog.current()
        refuse_quarantined(snapshot, object_name)
        table = snapshot.table(object_name)
        with writing(self.engine, self._group_writer, object_name, table, records, None) as c:
            inside = reserve_inside(self.engine, records, c)
            self._write(snapshot, object_name, table, records, c, inside=inside, alone=True)
        metrics.records_created(object_name).inc(len(records))
        return stored_form(table, records)

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
        """Assign the numbers, publish RecordBeforeCreate, insert the rows in `c`'s transaction, by
        the path `choose_numbering` picks (write/strategy.py);
        `inside`: the numbers are reserved in that transaction itself (the group writer);
        `bulk`: the rows go by the backend's bulk path (COPY on PostgreSQL), without RETURNING;
        `alone`: the transaction is ours and holds nothing else (the group writer's), so where its
        whole work is one statement, that statement may commit it (`_insert_numbered`);
        `sender`: bulk rows the backend can send from another thread are sent there.

        In a caller's transaction that its numbers are reserved in (SQLite), the records are
        written in a savepoint of it: rows the database refuses take their numbers back with them,
        and the caller's transaction can go on without a gap."""
        adopted = snapshot.is_adopted(object_name)
        rules = _lock_order(snapshot.rules_of(object_name), inside)
        choice = choose_numbering(
            self.engine,
            rules,
            records,
            c,
            inside=inside,
            bulk=bulk,
            adopted=adopted,
            statements_watched=watched(c),
            event_listeners=self.events.has_subscribers(RecordBeforeCreate),
        )
        with savepoint(c, RECORD_SAVEPOINT) if choice.savepoint else nullcontext():
            if sender is not None and not self._leaves_alone(snapshot, object_name, rules, c):
                sender.settle()  # this batch reads or writes on `c` before its rows: the last one first
            elif sender is not None:
                sender.settle_if_done()
            read = check_lookups(c, snapshot, object_name, records)  # before any number is reserved
            if choice.numbering is Numbering.NUMBERED_INSERT:
                assert choice.number is not None
                commit = alone and not read and self.engine.dialect.commits_alone(c)
                number = choice.number
                stored = insert_numbered(
                    self.engine, object_name, c, table, rules[0], records, number, commit
                )
                for record, (value, created) in zip(records, stored, strict=True):
                    record[number.column], record[number.created] = value, created
                return
            if choice.numbering is Numbering.STAMPED:
                write_stamped(self.engine, c, table, rules[0], records[0])
                return
            self._write_reserved(object_name, table, rules, records, c, inside, adopted, bulk, sender)

    def _write_reserved(
        self,
        object_name: str,
        table: sa.Table,
        rules: list[Rule],
        records: list[dict[str, Any]],
        c: Connection,
        inside: bool,
        adopted: bool,
        bulk: bool,
        sender: BatchSender | None,
    ) -> None:
        """Numbering.RESERVED: tokens resolved, numbers reserved per rule and rendered, then the rows
        inserted: an adopted table's row by row, streamed batches by the bulk path (sent from
        `sender`'s thread where the backend can), others by one INSERT."""
        at = None
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
                sender.start(lambda handed: failing_gaps(lambda: send(handed), held))
                return
            sender.settle()
        if adopted:
            numbered = {rule.field_name for rule in rules}
            failing_gaps(lambda: insert_adopted(c, object_name, table, records, numbered), held)
        elif bulk:
            failing_gaps(lambda: dialect.bulk_insert(c, table, records), held)
        else:
            failing_gaps(lambda: insert_rows(c, table, records, dialect), held)

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

    def _hold(self, conn: Connection, ranges: list[Range]) -> Pending:
        """Journal these values as given back if the caller's transaction rolls back."""
        pending = Pending(self.engine.reserver.journal, self.engine.reserver.db, ranges)
        track(conn, pending)
        return pending

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
        values = checked(snapshot, object_name, table, changes, f"{object_name} {record_id!r}")
        values.pop("Id", None)
        values.pop(key_column(table).name, None)
        if text_problem(record_id):
            raise RecordNotFound(object_name, record_id)
        if not values:
            return self.get(object_name, record_id, conn)
        with own_or_callers(conn, self._db) as c:
            check_lookups(c, snapshot, object_name, [values])
            where = key_equals(table, object_name, record_id)
            result = c.execute(sa.update(table).where(where).values(values))
            if result.rowcount == 0:
                raise RecordNotFound(object_name, record_id)
            return self.get(object_name, record_id, c)


def _lock_order(rules: Sequence[Rule], inside: bool) -> list[Rule]:
    """The order a write takes its numbers in, so that no wait for a connection closes a cycle.

    A caller's transaction reserves its standard fields (each on a reservation connection) before
    it locks a gapless counter row: holding that lock it never waits for the reservation pool
    whose connections may be waiting on the lock. The group writer locks its gapless rows first
    and its standard rows last: once it holds a standard counter row, it waits on nobody."""
    return sorted(rules, key=lambda rule: rule.gapless != inside)
