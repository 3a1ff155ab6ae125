"""The dialect interface: every place where SQLite, the MySQL family and PostgreSQL differ."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.errors import ConfigError
from autonumber.format.model import padded_run

from .bulk import Send, bound_tuples, by_fields, insert_text, nobody_waits
from .driver import kept, plain_insert
from .fence import is_refusal
from .replies import UNAVAILABLE, to_utc

_BUILT: dict[tuple[Any, ...], sa.Executable] = {}
"""Statements over constant expressions, by dialect and expressions (a fixed, small set)."""


def lock_key(name: str) -> int:
    """A stable signed 64-bit key for a lock name (PostgreSQL advisory locks take integers)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


@dataclass(frozen=True)
class Counter:
    """The counter row an increment acts on: constant expressions (their bind parameters come with
    each call), so a statement built from them is built once. `column` grows by `n` while `guard`
    holds; `clock_column` is stamped with the database clock."""

    table: sa.Table
    where: sa.ColumnElement[bool]
    column: str
    n: sa.BindParameter[int]
    clock_column: str
    guard: sa.ColumnElement[bool]


@dataclass(frozen=True)
class Numbered:
    """The number a numbered insert writes into `column`: `before` + the value zero-padded to
    `width` digits + `after`; `created` is the column that gets the counter row's clock sample."""

    column: str
    width: int
    before: str
    after: str
    created: str
    key: str = "Id"
    """The column that tells the rows apart (what RETURNING gives back is matched on it)."""

    def given(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """The fields a row sets itself (all but the number and its CreatedDate), in its order."""
        return tuple(k for k in row if k not in (self.column, self.created))

    def values(self, first: int, count: int) -> list[str]:
        """The values of `count` consecutive numbers from `first`, built outside the database."""
        return padded_run(self.before, self.width, self.after, first, count)


class Dialect:
    """One backend's primitives; domain code calls these and never asks which database it is on.

    There is no "begin a writing transaction" primitive: every transaction is begun with plain
    `.begin()`. Only SQLite needs to know a transaction will write (BEGIN IMMEDIATE, or two
    writers deadlock upgrading their read locks), and it knows from the pool, not the call site:
    `configure_engine` begins every transaction IMMEDIATE except on a connection marked READONLY
    (the fresh-read pool), so a write intent stated per call could only disagree with it.
    """

    name: ClassVar[str] = "generic"
    error_aborts_transaction: ClassVar[bool] = False
    """PostgreSQL only: a failed statement aborts the whole transaction, so a caller's transaction
    cannot try an INSERT again after a duplicate key (elsewhere only the statement rolls back)."""

    def reservation_conn(self, caller: Connection | None) -> Connection | None:
        """The connection numbers for rows written in `caller`'s transaction are reserved on: None,
        a short transaction of the reservation's own (the counter row is held only that long)."""
        return None

    def journal_outcomes(self, engine: Engine, watch: Callable[[Engine], None]) -> None:
        """Install `watch`, which journals the outcome of reservations detached from the
        transactions that use their numbers (given back when those roll back)."""
        watch(engine)

    def insert_many(self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """INSERT `rows` (two or more, one set of fields) in one round trip: a multi-row INSERT
        (SQLAlchemy's "insertmanyvalues", which RETURNING turns on, compiled once and cached), or
        an executemany where there is no RETURNING (MySQL proper; PyMySQL rewrites it as one
        INSERT)."""
        if conn.dialect.insert_executemany_returning:
            conn.execute(kept(table, ("autonumber.insert-many",), lambda: _returning_ids(table)), rows).all()
        else:
            conn.execute(plain_insert(table), rows)

    def engine_options(self, pool_size: int) -> dict[str, Any]:
        """Extra `create_engine` options for this backend."""
        return {"pool_size": pool_size, "max_overflow": pool_size * 2, "pool_recycle": 3600}

    def folds_line(self, conn: Connection) -> bool:
        """Whether `atomic_increment_clocked` on `conn` runs its `line` INSERT in the increment's
        own round trip (PostgreSQL: a data-modifying CTE; MariaDB: one text of statements),
        saving the journal line's round trip."""
        return False

    def defer_flush(self, conn: Connection) -> None:
        """Let the transaction open on `conn` commit without waiting for its log to reach the disk,
        where the backend has such a setting per transaction (PostgreSQL's `synchronous_commit`).
        Only for a reservation whose numbers are stored by a later COMMIT on the same database: that
        COMMIT, after it in the log, makes both durable (docs/engine.md, "A reservation's COMMIT").
        Elsewhere nothing is sent, and `atomic_increment_clocked` ignores its `defer`."""

    def commits_alone(self, conn: Connection) -> bool:
        """Whether one round trip on `conn` (an own connection that has sent nothing in its
        transaction yet) may be that whole transaction and commit by itself: a reservation
        (`autocommitted`), the group writer's numbered insert (`insert_numbered`'s `commit`). No
        BEGIN or COMMIT round trip of its own, and the counter row locked only while that round
        trip runs. True only where `folds_line` is."""
        return False

    @contextmanager
    def autocommitted(self, conn: Connection) -> Iterator[None]:
        """While open, `conn` is in no SQLAlchemy transaction and the reservation's round trip
        commits by itself (`commits_alone`)."""
        raise NotImplementedError(f"{self.name}: no reservation commits by itself here")
        yield

    @contextmanager
    def reservation_transaction(self, own: Connection) -> Iterator[None]:
        """The transaction of a reservation on `own`, an own connection that has sent nothing yet:
        where one round trip can be that whole transaction (`commits_alone`), no BEGIN or COMMIT
        of its own (`autocommitted`); else a plain one."""
        if self.commits_alone(own):
            with self.autocommitted(own):
                yield
        else:
            with own.begin():
                yield

    def configure_engine(self, engine: Engine, *, statement_batches: bool = False) -> None:
        """Install connection hooks (SQLite pragmas); nothing elsewhere. `statement_batches`: the
        pool's connections may take several statements in one text where the backend asks for it
        (MariaDB: `insert_numbered` on the group writer's pool, `atomic_increment_clocked` with its
        journal line on the reservations'); ignored elsewhere."""

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        """The database's UTC clock with microseconds, as a SQL expression."""
        raise NotImplementedError

    def utc_now(self, conn: Connection) -> datetime:
        """Sample the database clock once, as an aware UTC datetime."""
        return to_utc(conn.execute(sa.select(self.utc_now_expr())).scalar_one())

    def page_size(self, conn: Connection) -> int | None:
        """Bytes per page of a database file (`db status`); None where the server sets it."""
        return None

    def named_lock(self, engine: Engine, name: str, timeout: float) -> AbstractContextManager[None]:
        """An exclusive lock across processes, held until the context exits; LockTimeout if not taken."""
        raise NotImplementedError

    # -- DDL in a transaction. Here (the MySQL family) each DDL statement commits at once, so a
    # change that fails after DDL puts back what it changed itself; TransactionalDDL overrides all
    # three where the caller's rollback undoes DDL too.

    @contextmanager
    def undoing_ddl(self, undo: Callable[[], None], what: str) -> Iterator[None]:
        """Run the block; when it fails, `undo` puts back the DDL it committed (the caller's rollback
        cannot). The block's error is what propagates; a failing `undo` is noted on it."""
        try:
            yield
        except BaseException as exc:
            try:
                undo()
            except Exception as failed:
                exc.add_note(f"undoing {what} failed too: {failed}")
            raise

    def rows_after_ddl(self, conn: Connection) -> AbstractContextManager[Any]:
        """Where rows written after committed DDL go: a savepoint, rolled back on failure before
        an `undoing_ddl` undo runs (its DDL would commit them)."""
        return conn.begin_nested()

    def ddl_steps(self, engine: Engine, steps: Sequence[Callable[[Connection], list[str]]]) -> list[str]:
        """Run idempotent `steps`, each in a transaction of its own (its DDL commits anyway): a
        failure leaves the steps before it done, and running them again finishes the rest."""
        out: list[str] = []
        for step in steps:
            with engine.begin() as conn:
                out += step(conn)
        return out

    def insert(self, table: sa.Table) -> Any:
        """The dialect's INSERT construct that has ON CONFLICT (PostgreSQL, SQLite)."""
        raise NotImplementedError

    def greatest(self, a: Any, b: Any) -> sa.ColumnElement[Any]:
        """The larger of two values."""
        return sa.func.greatest(a, b)

    def upsert_greatest(
        self,
        conn: Connection,
        table: sa.Table,
        key: Mapping[str, Any],
        column: str,
        value: int,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Insert the row, or raise `column` to GREATEST(existing, value); never lowers it. The
        other columns but `created_date` take the new row's value on a conflict."""
        row = {**key, column: value, **(extra or {})}
        conn.execute(self.upsert_greatest_stmt(table, list(key), column, list(row)).values(row))

    def upsert_greatest_many(
        self,
        conn: Connection,
        table: sa.Table,
        keys: Sequence[str],
        column: str,
        rows: Sequence[Mapping[str, Any]],
    ) -> None:
        """upsert_greatest for many rows (distinct keys) in one executemany; every row has the same
        columns."""
        if not rows:
            return
        conn.execute(self.upsert_greatest_stmt(table, keys, column, list(rows[0])), list(rows))

    def upsert_greatest_stmt(
        self, table: sa.Table, keys: Sequence[str], column: str, columns: Sequence[str]
    ) -> sa.Insert:
        """The INSERT of upsert_greatest(_many): on a conflict over `keys`, `column` becomes
        GREATEST(existing, new) and the other `columns` but `created_date` the new values.

        INSERT … ON CONFLICT DO UPDATE here (PostgreSQL, SQLite); the MySQL family overrides it
        with ON DUPLICATE KEY UPDATE."""
        stmt = self.insert(table)
        on_update = self._upsert_set(table, keys, column, columns, stmt.excluded)
        upsert: sa.Insert = stmt.on_conflict_do_update(index_elements=list(keys), set_=on_update)
        return upsert

    def _upsert_set(
        self, table: sa.Table, keys: Sequence[str], column: str, columns: Sequence[str], new: Any
    ) -> dict[str, Any]:
        """The SET of an upsert: `column` never lowered, the other non-key columns replaced by `new`
        (the proposed row: `excluded` / `inserted`), `created_date` kept."""
        on_update: dict[str, Any] = {column: self.greatest(table.c[column], new[column])}
        on_update.update({k: new[k] for k in columns if k not in keys and k not in (column, "created_date")})
        return on_update

    def for_update(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        """Lock the selected rows until the transaction ends."""
        return stmt.with_for_update()

    def atomic_increment(
        self,
        conn: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: int | sa.BindParameter[int],
        extra: Mapping[str, Any] | None = None,
        guard: sa.ColumnElement[bool] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> int | None:
        """Add n to `column` in one statement; return the value after the increment, None if no row.

        The caller reserved [returned - n, returned - 1]. `guard` is an extra condition on the row
        (e.g. "the counter still fits"); None when the row is missing or fails it. UPDATE …
        RETURNING here (PostgreSQL, SQLite ≥ 3.35); the MySQL family overrides it with
        LAST_INSERT_ID(expr). `params`: as for atomic_increment_clocked (`extra`'s values constant
        expressions too).
        """

        def build() -> sa.Executable:
            return (
                sa.update(table)
                .where(where if guard is None else sa.and_(where, guard))
                .values({column: table.c[column] + n, **(extra or {})})
                .returning(table.c[column])
            )

        key = (table, where, column, n, tuple(sorted((extra or {}).items())), guard)
        stmt = build() if params is None else self.built(key, build)
        value = conn.execute(stmt, params).scalar_one_or_none()
        return None if value is None else int(value)

    def atomic_increment_clocked(
        self,
        conn: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: int | sa.BindParameter[int],
        clock_column: str,
        guard: sa.ColumnElement[bool] | None = None,
        params: Mapping[str, Any] | None = None,
        line: Callable[[sa.CTE], sa.Insert] | None = None,
        defer: bool = False,
    ) -> tuple[int, datetime] | None:
        """atomic_increment that also stamps `clock_column` with the database clock and returns that
        one sample: the clock rides on the UPDATE (one round trip fewer). None when no row.

        With `params`, `where`, `n` and `guard` are constant expressions whose bind parameters
        `params` fills: the statement is then built once and reused (the hot path). `line`: an
        INSERT built from the increment's returned row, run in the same statement where the
        backend allows it (`folds_line`; a constant function, part of the statement's cache key);
        elsewhere it is ignored and the caller writes its line itself. `defer`: the statement commits
        by itself without waiting for the disk, where the backend can say so in it
        (`defer_flush`)."""

        def build() -> sa.Executable:
            return self.clocked_update(table, where, column, n, clock_column, guard)

        stmt = (
            build() if params is None else self.built((table, where, column, n, clock_column, guard), build)
        )
        row = conn.execute(stmt, params).first()
        return None if row is None else (int(row[0]), to_utc(row[1]))

    def counter_update(self, counter: Counter) -> sa.Update:
        """`clocked_update` of a counter row, its guard included."""
        return self.clocked_update(
            counter.table, counter.where, counter.column, counter.n, counter.clock_column, counter.guard
        )

    def clocked_update(
        self,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: int | sa.BindParameter[int],
        clock_column: str,
        guard: sa.ColumnElement[bool] | None = None,
    ) -> sa.Update:
        """`UPDATE table SET column = column + n, clock_column = <database clock> WHERE where AND
        guard RETURNING column, clock_column`: the increment of `atomic_increment_clocked`."""
        return (
            sa.update(table)
            .where(where if guard is None else sa.and_(where, guard))
            .values({column: table.c[column] + n, clock_column: self.utc_now_expr()})
            .returning(table.c[column], table.c[clock_column])
        )

    def stamp_rides_on_insert(self, conn: Connection) -> bool:
        """Whether the clock sample an increment stamped on its counter row is better read by the
        record's INSERT (`insert_stamped`) than by the increment itself: where the increment cannot
        return it (the MySQL family: no UPDATE … RETURNING) but the INSERT can (MariaDB ≥ 10.5's
        INSERT … RETURNING). Elsewhere the increment returns it at no cost."""
        return False

    def atomic_increment_stamped(
        self,
        conn: Connection,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: sa.BindParameter[int],
        clock_column: str,
        guard: sa.ColumnElement[bool],
        params: Mapping[str, Any],
    ) -> int | None:
        """atomic_increment_clocked that stamps `clock_column` with the database clock but does not
        read it back (its reader is the INSERT of `insert_stamped`, in the same transaction); the
        value after the increment, None when no row. Here: the clocked increment, its sample
        dropped."""
        clocked = self.atomic_increment_clocked(conn, table, where, column, n, clock_column, guard, params)
        return None if clocked is None else clocked[0]

    def numbers_on_insert(self, conn: Connection) -> bool:
        """Whether `insert_numbered` can reserve a number, build its value and insert its row in
        one statement (PostgreSQL's data-modifying CTE). Elsewhere the steps are separate."""
        return False

    def insert_numbered(
        self,
        conn: Connection,
        counter: Counter,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        number: Numbered,
        params: Mapping[str, Any],
        *,
        commit: bool = False,
    ) -> list[tuple[str, datetime]] | None:
        """INSERT `rows` (one set of fields) with `number.column` set to consecutive values of the
        len(rows) numbers reserved on `counter` by the same statement, in row order (`number.before`
        + the zero-padded value + `number.after`), and `number.created` to the clock sample stamped
        on the counter row; return each row's (value, created). None when the increment changed no
        row (the counter is missing or full): then nothing is inserted. Only where
        `numbers_on_insert` says so. `commit` (only where `commits_alone(conn)`, on a transaction
        that has sent nothing yet): this is the whole transaction, and it commits in the same round
        trip; a failure leaves nothing to commit."""
        raise NotImplementedError(f"{self.name}: no single-statement numbered insert")

    def insert_stamped(
        self,
        conn: Connection,
        table: sa.Table,
        row: Mapping[str, Any],
        column: str,
        stamp: sa.ScalarSelect[Any],
        params: Mapping[str, Any],
    ) -> datetime | None:
        """INSERT `row` with `column` set to `stamp` (a read of the clock sample its transaction
        stamped and still holds locked) and return that value: `INSERT … VALUES (…, (SELECT …))
        RETURNING column`, one round trip; None if the stamp read nothing. Built once per table
        (kept in `table.info`, so it goes with the table when a catalog change replaces it)."""
        key = f"autonumber.insert_stamped:{column}"
        stmt = table.info.get(key)
        if stmt is None:
            built = sa.insert(table).values({column: stamp}).returning(table.c[column])
            stmt = table.info.setdefault(key, built)
        bound = {k: v for k, v in row.items() if k != column}  # the stamp, never a value given
        value = conn.execute(stmt, {**bound, **params}).scalar_one()
        return None if value is None else to_utc(value)

    def built(self, key: tuple[Any, ...], build: Callable[[], sa.Executable]) -> sa.Executable:
        """The statement `build` makes for `key` (constant expressions), made once per dialect:
        no clause construction or cache-key generation on each call."""
        full = (type(self), *key)
        stmt = _BUILT.get(full)
        if stmt is None:
            stmt = _BUILT.setdefault(full, build())
        return stmt

    def enforced_length(self, declared: int | None) -> int | None:
        """The width a text column declared `declared` long refuses text beyond (None: none)."""
        return declared

    def guard_install_sql(self) -> list[str]:
        """The statements that create (or replace) the guard trigger (db/guard.py). ConfigError
        here: the trigger needs a session flag to read, which SQLite has not."""
        raise ConfigError(
            "the guard trigger needs MariaDB/MySQL or PostgreSQL; SQLite has no session flag a "
            "trigger can read and relies on quarantine alone"
        )

    def guard_drop_sql(self) -> list[str]:
        """The statements that remove the guard trigger if it exists."""
        return []

    def guard_installed(self, conn: Connection) -> bool:
        """Whether the guard trigger exists in this database (never here)."""
        return False

    @contextmanager
    def guard_authorized(self, conn: Connection) -> Iterator[None]:
        """Raise the session flag the guard trigger reads while the block runs; nothing here."""
        yield

    declaration_outlives_transaction: ClassVar[bool] = True
    """Whether a schema declaration (db/fence.py) made inside a transaction stays after it rolls
    back (SQLite's function, MariaDB's session variable; not PostgreSQL's session setting)."""

    def fence_install_sql(self, floor: int) -> list[str]:
        """The statements that create (or replace) the writer fence (db/fence.py), refusing a
        session that declared less than `floor` or than the database's version."""
        raise NotImplementedError(f"{self.name}: no writer fence")

    def fence_drop_sql(self) -> list[str]:
        """The statements that remove the writer fence if it exists."""
        raise NotImplementedError(f"{self.name}: no writer fence")

    def fence_installed(self, conn: Connection) -> bool:
        """Whether the writer fence exists in this database."""
        raise NotImplementedError(f"{self.name}: no writer fence")

    def declare_on(self, conn: Connection, version: int | None = None) -> None:
        """Declare `version` (default: this release's schema) as the one `conn`'s session writes,
        on a connection the product's connect hook did not open."""
        raise NotImplementedError(f"{self.name}: no writer fence")

    def is_retryable(self, exc: BaseException) -> bool:
        """Whether a database error is a lost race (deadlock, serialization, certification)."""
        return False

    def is_duplicate_key(self, exc: BaseException) -> bool:
        """Whether a database error is a unique/primary-key violation."""
        return False

    def is_unreachable(self, exc: BaseException) -> bool:
        """Whether a failed connect means the server is down, refusing or full (retry later) rather
        than a wrong URL (credentials, database name). Never for a file database."""
        return False

    def is_unavailable(self, exc: BaseException) -> bool:
        """Whether an error says the connection was lost, killed or refused (a lost race is not:
        it is retried as one)."""
        return isinstance(exc, UNAVAILABLE) and not self.is_retryable(exc) and not is_refusal(exc)

    def bulk_insert(self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write many checked rows the fastest way this backend has, in `conn`'s transaction, with
        no RETURNING (an import knows its Ids). Here: one executemany per set of fields of a
        statement made once, with the values as tuples, which PyMySQL rewrites as multi-row INSERTs
        and SQLite runs as one prepared statement. A backend with a `bulk_sender` sends by it."""
        send = self.bulk_sender(conn, table, rows)
        if send is not None:
            send(nobody_waits)
            return
        for fields, group in by_fields(rows).items():
            self.bulk_insert_group(conn, table, fields, group)

    def bulk_sender(
        self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
    ) -> Send | None:
        """`bulk_insert` in two steps, for an import that reads its next batch meanwhile: the part
        that needs the caller's thread is done now, and the call returned sends the rows from
        another thread (it touches only `conn`'s driver connection), calling its argument once
        the rows have left this process. None where the backend has no such split (here): then
        `bulk_insert`."""
        return None

    def bulk_insert_group(
        self, conn: Connection, table: sa.Table, fields: tuple[str, ...], group: Sequence[Mapping[str, Any]]
    ) -> None:
        """`bulk_insert` of rows that all set `fields`: the INSERT made once, the values as tuples."""
        text = insert_text(conn, table, fields)
        if text is None:
            conn.execute(sa.insert(table), group)
        else:
            conn.exec_driver_sql(text, bound_tuples(conn.dialect, table, fields, group))

    def retype_column(self, conn: Connection, column: sa.Column[Any]) -> list[str]:
        """Give an existing system column its declared type where the backend stores a different
        one (a collation); [] when nothing differs. Here nothing can: SQLite and PostgreSQL keep
        the type a column was made with and compare text exactly."""
        return []

    date_ddl: ClassVar[str] = (
        "ALTER TABLE {table} ALTER COLUMN {column} TYPE DATE USING CAST({column} AS DATE)"
    )
    """The DDL that makes a (nullable) date-time column a DATE column, each value keeping its day."""

    def date_column(self, conn: Connection, table_name: str, column: str) -> list[str]:
        """Make a date-time column of one of the platform's own tables a DATE column, each value
        keeping its day (migration 7); [] when it is one already."""
        found = {c["name"]: c["type"] for c in sa.inspect(conn).get_columns(table_name)}.get(column)
        if found is None or isinstance(found, sa.Date):
            return []
        quote = self.quote
        conn.execute(sa.text(self.date_ddl.format(table=quote(conn, table_name), column=quote(conn, column))))
        return [f"column {table_name}.{column}: {found} -> DATE"]

    resize_ddl: ClassVar[str] = "ALTER TABLE {table} ALTER COLUMN {column} TYPE VARCHAR({length})"
    """The DDL that gives a (nullable) text column of a custom object a new length."""

    def resize_text_column(self, conn: Connection, table_name: str, column: str, length: int) -> None:
        """Give a custom object's text column a new length (names validated by the caller)."""
        ddl = self.resize_ddl.format(
            table=self.quote(conn, table_name), column=self.quote(conn, column), length=int(length)
        )
        conn.execute(sa.text(ddl))

    def index_names(self, conn: Connection, table_name: str) -> set[str]:
        """The names of a table's indexes, those SQLAlchemy cannot reflect included."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Skipped unsupported reflection", sa.exc.SAWarning)
            return {str(i["name"]) for i in sa.inspect(conn).get_indexes(table_name)}

    def text_length(self, expr: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
        """The length of a text value in characters."""
        return sa.func.length(expr)

    def drop_table_if_exists(self, conn: Connection, table_name: str) -> None:
        """Drop a table by name when it exists."""
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {self.quote(conn, table_name)}"))

    @staticmethod
    def quote(conn: Connection, name: str) -> str:
        """Quote a validated identifier for this backend."""
        return conn.dialect.identifier_preparer.quote(name)


class TransactionalDDL:
    """DDL inside a transaction rolls back with it (PostgreSQL, SQLite): a failed change is undone
    by the caller's rollback, and steps share one transaction so a failure leaves nothing."""

    @contextmanager
    def undoing_ddl(self, undo: Callable[[], None], what: str) -> Iterator[None]:
        yield

    def rows_after_ddl(self, conn: Connection) -> AbstractContextManager[Any]:
        return nullcontext()

    def ddl_steps(self, engine: Engine, steps: Sequence[Callable[[Connection], list[str]]]) -> list[str]:
        with engine.begin() as conn:
            return [line for step in steps for line in step(conn)]


def _returning_ids(table: sa.Table) -> sa.Insert:
    return sa.insert(table).returning(table.c.Id)
