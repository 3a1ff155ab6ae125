"""The MySQL family: MariaDB, MySQL and TiDB (MySQL protocol); MariaDB Galera detected at runtime."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import PoolResetState

from autonumber.errors import LockTimeout

from . import mysql_load, pymysql_connection
from .base import Counter, Dialect, Numbered
from .bulk import (
    Handed,
    NotDelimitable,
    Send,
    bound_columns,
    bound_tuples,
    by_fields,
    insert_text,
    nobody_waits,
)
from .driver import DriverStatement, execute, execute_batch, statement
from .fence import INFO_KEY, MYSQL_VARIABLE, schema_version
from .fence_sql import MySQLFence
from .guard import MESSAGE, TRIGGER
from .guard import MYSQL_VARIABLE as GUARD_VARIABLE
from .lease import lease_lock
from .mysql_numbered import (
    NEXT_VALUE,
    NEXT_VARIABLE,
    STAMP_VARIABLE,
    assigned,
    bumped,
    numbered_insert_text,
    variables,
)
from .mysql_texts import (
    SERVER_STATUS_IN_TRANS,
    TEXT_COMMITTED,
    merged,
    multi_statements,
    no_commit_after_text,
    takes_batches,
)
from .replies import forget_server_flag, server_flag, to_utc
from .tables import AUTONUMBER_COLUMNS

UNREACHABLE = frozenset({1040, 1053, 2002, 2003, 2006, 2013})
"""Too many connections, shutting down, cannot connect (socket, TCP), gone away, lost."""
BROKEN_TABLE_COPY = frozenset({1710, 1711})
"""ER_ERROR_IN_TRIGGER_BODY, ER_ERROR_IN_UNKNOWN_TRIGGER_BODY."""
RETRYABLE = {1213, 1205, 1020, 1180, 1181, 1305, 9007, 8002, 8022}
"""Deadlock / Galera certification failure (1213), lock wait timeout (1205), record changed (1020),
commit/rollback failures (1180/1181), a savepoint the server dropped when a deadlock rolled the whole
transaction back (1305), and TiDB write conflicts (9007, 8002, 8022)."""
MAX_LOCK_NAME = 64
WSREP_ON = "SHOW VARIABLES LIKE 'wsrep_on'"
"""Whether the server is a Galera node: one row, ON there (no row on MySQL, OFF elsewhere)."""
BATCHES_KEY = "autonumber_batches"  # in a connection's `info`: `batches_here`


def database_lock_name(name: str, database: str | None) -> str:
    """`name:database`: GET_LOCK names are server-wide, and a lock that guards one database's
    schema must not make set-ups of every other database on the server wait (a digest of the
    database name when the whole would pass MAX_LOCK_NAME)."""
    if not database:
        return name
    scoped = f"{name}:{database}"
    if len(scoped) <= MAX_LOCK_NAME:
        return scoped
    return f"{name}:{hashlib.blake2b(database.encode(), digest_size=8).hexdigest()}"[:MAX_LOCK_NAME]


class MySQLDialect(MySQLFence, Dialect):
    """MariaDB/MySQL/TiDB: GET_LOCK for named locks, LAST_INSERT_ID(expr) for atomic increments."""

    name = "mysql"
    date_ddl = "ALTER TABLE {table} MODIFY {column} DATE NULL"
    resize_ddl = "ALTER TABLE {table} MODIFY {column} VARCHAR({length}) NULL"

    def text_length(self, expr: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
        return sa.func.char_length(expr)  # LENGTH counts bytes here

    def engine_options(self, pool_size: int) -> dict[str, Any]:
        opts = super().engine_options(pool_size)
        opts["isolation_level"] = "READ COMMITTED"
        opts["pool_reset_on_return"] = None  # _rollback_if_open below does the reset
        return opts

    def configure_engine(self, engine: Engine, *, statement_batches: bool = False) -> None:
        if engine.dialect.driver == "pymysql":
            from pymysql.constants import CLIENT

            # LOCAL_FILES: the capability only, PyMySQL still refuses every file request (mysql_load)
            flags = (CLIENT.LOCAL_FILES if mysql_load.available() else 0) | (
                multi_statements() if statement_batches else 0
            )

            @event.listens_for(engine, "do_connect")
            def _client_flags(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
                cparams["client_flag"] = cparams.get("client_flag", 0) | flags

            pymysql_connection.use_bounded_connections(engine)

        version = schema_version()
        galera: list[bool] = []  # probed on the pool's first connection, where statement batches

        @event.listens_for(engine, "connect")
        def _utc_session(dbapi_connection: Any, record: Any) -> None:
            # CURRENT_TIMESTAMP(6) column defaults use the session time zone: pin it to UTC so a
            # server whose default zone is local time still stores UTC timestamps. The same
            # statement declares the schema version the writer fence checks (db/fence.py).
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(f"SET time_zone = '+00:00', {MYSQL_VARIABLE} = {int(version)}")
                if statement_batches:
                    if not galera:
                        cursor.execute(WSREP_ON)
                        galera.append(wsrep_is_on(cursor.fetchone()))
                    record.info[BATCHES_KEY] = not galera[0]
            finally:
                cursor.close()
            record.info[INFO_KEY] = version

        if statement_batches:
            no_commit_after_text(engine)

        @event.listens_for(engine, "reset")
        def _rollback_if_open(dbapi_connection: Any, _record: Any, state: PoolResetState) -> None:
            # The pool's own reset is a ROLLBACK round trip on every return, also after the COMMIT
            # that ended the transaction: roll back only what the server's last status says is open.
            if state.transaction_was_reset:
                return
            status = getattr(dbapi_connection, "server_status", None)  # PyMySQL's; others: unknown
            if status is None or status & SERVER_STATUS_IN_TRANS:
                dbapi_connection.rollback()

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        return sa.func.utc_timestamp(sa.literal_column("6"))

    def named_lock(self, engine: Engine, name: str, timeout: float) -> AbstractContextManager[None]:
        if is_galera(engine):
            return lease_lock(self, engine, name, timeout)
        return self._get_lock(engine, name, timeout)

    @contextmanager
    def _get_lock(self, engine: Engine, name: str, timeout: float) -> Iterator[None]:
        if len(name) > MAX_LOCK_NAME:
            raise ValueError(f"lock name {name!r} is longer than {MAX_LOCK_NAME} characters")
        held = database_lock_name(name, engine.url.database)
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            # MariaDB honours fractional seconds; MySQL/TiDB wait whole seconds, so round up there
            # (round() made a 0.5 s timeout a non-blocking try).
            wait = max(0.0, timeout)
            if not getattr(conn.dialect, "is_mariadb", False):
                wait = math.ceil(wait)
            got = conn.execute(sa.select(sa.func.get_lock(held, wait))).scalar()
            if got != 1:
                raise LockTimeout(name, timeout)
            try:
                yield
            finally:
                conn.execute(sa.select(sa.func.release_lock(held)))

    def upsert_greatest_stmt(
        self, table: sa.Table, keys: Sequence[str], column: str, columns: Sequence[str]
    ) -> sa.Insert:
        """INSERT … ON DUPLICATE KEY UPDATE `column` = GREATEST(`column`, VALUES(`column`)), …"""
        stmt = mysql_insert(table)
        upsert: sa.Insert = stmt.on_duplicate_key_update(
            self._upsert_set(table, keys, column, columns, stmt.inserted)
        )
        return upsert

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
        def build() -> sa.Executable:
            return (
                sa.update(table)
                .where(where if guard is None else sa.and_(where, guard))
                .values({column: sa.func.last_insert_id(table.c[column] + n), **(extra or {})})
            )

        key = ("bump", table, where, column, n, tuple(sorted((extra or {}).items())), guard)
        stmt = build() if params is None else self.built(key, build)
        result = conn.execute(stmt, params)
        if result.rowcount == 0:
            return None
        return bumped(conn, result.lastrowid)

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
        """No UPDATE … RETURNING here: LAST_INSERT_ID(expr) carries the value, and the stamped clock
        is read back from the row this transaction holds locked. With `line`, on a connection that
        takes statement batches (`folds_line`): increment, line and read in one round trip
        (`_clocked_with_line`)."""
        if (
            line is not None
            and params is not None
            and guard is not None
            and isinstance(n, sa.BindParameter)
            and self.folds_line(conn)
        ):
            counter = Counter(table, where, column, n, clock_column, guard)
            return self._clocked_with_line(conn, counter, line, params)

        def read() -> sa.Executable:
            return sa.select(sa.func.last_insert_id(), table.c[clock_column]).where(where)

        key = (table, where, column, n, clock_column, guard)
        bump = self._clocked_bump(*key)
        update = bump() if params is None else self.built(("bump", *key), bump)
        if conn.execute(update, params).rowcount == 0:
            return None
        select = read() if params is None else self.built(("read", *key), read)
        row = conn.execute(select, params).one()
        return int(row[0]), to_utc(row[1])

    def folds_line(self, conn: Connection) -> bool:
        return bool(getattr(conn.dialect, "is_mariadb", False)) and batches_here(conn)

    def commits_alone(self, conn: Connection) -> bool:
        return self.folds_line(conn)

    @contextmanager
    def autocommitted(self, conn: Connection) -> Iterator[None]:
        """Nothing to switch: `_clocked_with_line` on a connection in no SQLAlchemy transaction
        sends its own START TRANSACTION and COMMIT in the text. What a failure in the text leaves
        open is rolled back by SQLAlchemy's handling of the error, and at the latest when the
        connection goes back to its pool (`_rollback_if_open`)."""
        yield

    def _clocked_with_line(
        self,
        conn: Connection,
        counter: Counter,
        line: Callable[[sa.CTE], sa.Insert],
        params: Mapping[str, Any],
    ) -> tuple[int, datetime] | None:
        """`SET @next = NULL; UPDATE counter … (@next, @stamp); INSERT INTO journal … SELECT … FROM
        (@next, @stamp) WHERE @next IS NOT NULL; SELECT @stamp` as one text: the line exists
        exactly when the increment changed a row (the variable is cleared first, so an UPDATE that
        matched nothing leaves no line of an earlier value), and the clock sample comes back typed.
        On a connection in no transaction (`autocommitted`) the text holds START TRANSACTION before
        the increment and COMMIT last: the whole reservation in one round trip."""
        bump = self._bump_into_variables(conn, counter)
        journal = statement(
            counter.table,
            ("line-from-variables", counter, line),
            lambda: line(variables(counter)),
            conn.dialect,
        )
        stamp = f"SELECT CAST({STAMP_VARIABLE} AS DATETIME(6)), {NEXT_VALUE}"
        args = merged(bump.args(params), journal.args(params))
        if conn.in_transaction():
            sql = f"SET {NEXT_VARIABLE} = NULL; {bump.sql}; {journal.sql}; {stamp}"
            _, bumped, _, read = execute_batch(conn, sql, args)
        else:  # autocommitted: the text is the whole transaction, COMMIT last
            sql = f"SET {NEXT_VARIABLE} = NULL; START TRANSACTION; {bump.sql}; {journal.sql}; {stamp}; COMMIT"
            _, _, bumped, _, read, _ = execute_batch(conn, sql, args)
        if bumped.rowcount == 0:
            return None
        return int(read.rows[0][1]), to_utc(read.rows[0][0])

    def _clocked_bump(
        self,
        table: sa.Table,
        where: sa.ColumnElement[bool],
        column: str,
        n: int | sa.BindParameter[int],
        clock_column: str,
        guard: sa.ColumnElement[bool] | None,
        *,
        into_variables: bool = False,
    ) -> Callable[[], sa.Update]:
        """The builder of the clocked increment's UPDATE: the value goes to LAST_INSERT_ID(expr),
        the database clock to `clock_column`; `into_variables` (MariaDB only: MySQL deprecates it)
        also puts them in the session variables NEXT_VARIABLE and STAMP_VARIABLE, for statements
        sent after it in the same text."""

        def bump() -> sa.Update:
            value: sa.ColumnElement[Any] = table.c[column] + n
            clock = self.utc_now_expr()
            if into_variables:
                value, clock = assigned(NEXT_VARIABLE, value), assigned(STAMP_VARIABLE, clock)
            return (
                sa.update(table)
                .where(where if guard is None else sa.and_(where, guard))
                .values({column: sa.func.last_insert_id(value), clock_column: clock})
            )

        return bump

    def _bump_into_variables(self, conn: Connection, counter: Counter) -> DriverStatement:
        """The counter's clocked increment that also sets the session variables, compiled once."""
        bump = self._clocked_bump(
            counter.table,
            counter.where,
            counter.column,
            counter.n,
            counter.clock_column,
            counter.guard,
            into_variables=True,
        )
        return statement(counter.table, ("bump-into-variables", counter), bump, conn.dialect)

    def stamp_rides_on_insert(self, conn: Connection) -> bool:
        """MariaDB ≥ 10.5 has INSERT … RETURNING (SQLAlchemy says so per server version); MySQL
        and TiDB have not, and read the sample back with a SELECT of its own."""
        return bool(conn.dialect.insert_returning)

    def numbers_on_insert(self, conn: Connection) -> bool:
        """Where the INSERT can return the clock sample (`stamp_rides_on_insert`): the rows' values
        are built from the increment's session variable, so `insert_numbered` needs no read in
        between."""
        return self.stamp_rides_on_insert(conn)

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
        """`UPDATE counter SET value = LAST_INSERT_ID(@next := value + n), stamp = (@stamp := <clock>) …`
        then `INSERT … SELECT …, CONCAT(before,
        LPAD(@next - n + i, width, '0'), after), @stamp … WHERE @next IS NOT NULL RETURNING
        number, created, @next` (`numbered_insert_text`): the values built from the session
        variables the UPDATE set, the counter's value read back on the returned rows (the writer
        fence's trigger keeps it out of the UPDATE's OK packet), so a connection that takes
        statement batches (the group writer's: `statement_batches`) sends both in one round trip,
        and no row reads the counter row. Reading @next on the INSERT's rows rather than by a
        SELECT of its own saves the client a result set to parse per call.
        The text clears @next first, so an UPDATE that matched no row (a missing or full counter)
        inserts nothing. `commit`: the text holds START TRANSACTION before the UPDATE and COMMIT
        last, the whole transaction in one round trip (SQLAlchemy's COMMIT after it is then not
        sent: `configure_engine`); a failure stops the text before its COMMIT, and the transaction
        left open is rolled back. Every returned value is checked against the one built here from
        the UPDATE's value (db/driver.py runs both); with `commit` that check comes after the
        COMMIT."""
        bump = self._bump_into_variables(conn, counter)
        given = number.given(rows[0])
        insert = numbered_insert_text(conn, table, given, number, len(rows))
        named = merged(bump.args(params))
        args = {**named, "autonumber_before": number.before, "autonumber_after": number.after}
        for i, row in enumerate(bound_tuples(conn.dialect, table, given, rows)):
            args.update({f"r{i}_{j}": arg for j, arg in enumerate(row)})
        if commit:
            sql = f"SET {NEXT_VARIABLE} = NULL; START TRANSACTION; {bump.sql}; {insert}; COMMIT"
            _, _, bumped, inserted, _ = execute_batch(conn, sql, args)
            setattr(conn.connection.dbapi_connection, TEXT_COMMITTED, True)
        elif batches_here(conn):
            sql = f"SET {NEXT_VARIABLE} = NULL; {bump.sql}; {insert}"
            _, bumped, inserted = execute_batch(conn, sql, args)
        else:
            bumped = execute(conn, bump.sql, named)
            if not bumped.rowcount:
                return None
            inserted = execute(conn, insert, args)
        if bumped.rowcount == 0 or not inserted.rows:
            return None  # nothing inserted (full or missing counter): the caller raises
        after = int(inserted.rows[0][2])
        expected = number.values(after - len(rows), len(rows))
        got = [value for value, _, _ in inserted.rows]
        if got != expected:
            committed = " (committed)" if commit else ""
            raise RuntimeError(f"{table.name}: the database built {got!r}{committed}, not {expected!r}")
        return [(value, to_utc(created)) for value, created, _ in inserted.rows]

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
        """The clocked increment's UPDATE alone, its value read as LAST_INSERT_ID() (`bumped`);
        no SELECT reads the stamped clock."""
        # the same statement (and cache entry) as atomic_increment_clocked's UPDATE
        key = (table, where, column, n, clock_column, guard)
        update = self.built(("bump", *key), self._clocked_bump(*key))
        result = conn.execute(update, params)
        return None if result.rowcount == 0 else bumped(conn, result.lastrowid)

    def guard_install_sql(self) -> list[str]:
        changed = " OR ".join(f"NOT (OLD.{c} <=> NEW.{c})" for c in AUTONUMBER_COLUMNS)
        return [
            f"DROP TRIGGER IF EXISTS {TRIGGER}",
            f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON `_System_Field` FOR EACH ROW BEGIN "
            f"IF ({changed}) AND COALESCE({GUARD_VARIABLE}, 0) <> 1 THEN "
            f"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{MESSAGE}'; END IF; END",
        ]

    def guard_drop_sql(self) -> list[str]:
        return [f"DROP TRIGGER IF EXISTS {TRIGGER}"]

    def guard_installed(self, conn: Connection) -> bool:
        stmt = sa.text(
            "SELECT COUNT(*) FROM information_schema.TRIGGERS "
            "WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = :t"
        )
        return bool(conn.execute(stmt, {"t": TRIGGER}).scalar())

    @contextmanager
    def guard_authorized(self, conn: Connection) -> Iterator[None]:
        """A session variable: cleared however the block ends (the session outlives it)."""
        conn.execute(sa.text(f"SET {GUARD_VARIABLE} = 1"))
        try:
            yield
        finally:
            conn.execute(sa.text(f"SET {GUARD_VARIABLE} = NULL"))

    def retype_column(self, conn: Connection, column: sa.Column[Any]) -> list[str]:
        """MODIFY a system column whose collation differs from its declared type's (idempotency
        keys made case- and accent-blind by the server's default collation before 0.3.0)."""
        declared = column.type.compile(dialect=conn.dialect)
        table = column.table.name
        stored = conn.execute(
            sa.text(
                "SELECT COLLATION_NAME FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t AND COLUMN_NAME = :c"
            ),
            {"t": table, "c": column.name},
        ).scalar()
        if stored is None or f"COLLATE {stored}" in declared:
            return []
        null = "NULL" if column.nullable else "NOT NULL"
        quoted_table, quoted_column = self.quote(conn, table), self.quote(conn, column.name)
        conn.execute(sa.text(f"ALTER TABLE {quoted_table} MODIFY {quoted_column} {declared} {null}"))
        return [f"column {table}.{column.name}: {stored} -> {declared}"]

    def bulk_insert_group(
        self, conn: Connection, table: sa.Table, fields: tuple[str, ...], group: Sequence[Mapping[str, Any]]
    ) -> None:
        """LOAD DATA LOCAL from memory where `loads_local` says it may run (db/mysql_load.py: it
        fails on any skipped or changed row), else the multi-row INSERT; also when the server has
        refused LOCAL since it was probed, which it does before reading a row."""
        load = self._load(conn, table, fields, group)
        if load is None:
            super().bulk_insert_group(conn, table, fields, group)
        else:
            load(nobody_waits)

    def bulk_sender(
        self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
    ) -> Send | None:
        """Each set of fields' LOAD DATA text made now, the statements sent by the call returned,
        handed over once the last text is written; None when a batch must take the INSERT. It
        only reads what the first batch probed, since the batch before may still be on its way
        on `conn`."""
        loads = []
        for fields, group in by_fields(rows).items():
            load = self._load(conn, table, fields, group)
            if load is None:
                return None
            loads.append(load)

        def send(handed: Handed) -> None:
            for k, load in enumerate(loads):
                load(handed if k == len(loads) - 1 else nobody_waits)

        return send

    def _load(
        self, conn: Connection, table: sa.Table, fields: tuple[str, ...], group: Sequence[Mapping[str, Any]]
    ) -> Send | None:
        """The LOAD DATA of `group`, its text made now; None where it cannot run (`loads_local`,
        a value it does not render exactly as the INSERT would)."""
        text = insert_text(conn, table, fields)
        if text is None or not self.loads_local(conn):
            return None
        columns = bound_columns(conn.dialect, table, fields, group)
        try:
            payload = mysql_load.tsv(columns)
        except NotDelimitable:
            return None

        def load(handed: Handed) -> None:
            try:
                mysql_load.load_local(conn, table, fields, len(group), payload, handed)
            except sa.exc.DBAPIError as exc:
                if mysql_errno(exc) not in mysql_load.NOT_ALLOWED:
                    raise
                forget_server_flag(conn.engine, "local_infile", False)
                conn.exec_driver_sql(text, list(zip(*columns, strict=True)))

        return load

    def loads_local(self, conn: Connection) -> bool:
        """Whether `conn` takes the LOAD DATA path: PyMySQL with the guarded sender and the
        capability on this connection, a MariaDB server (its LOCAL semantics are the ones tested)
        that is not a Galera node (whose `wsrep_load_data_splitting` would commit mid-import),
        and the server's `local_infile` ON."""
        raw = conn.connection.dbapi_connection
        if conn.dialect.driver != "pymysql" or not getattr(conn.dialect, "is_mariadb", False):
            return False
        if not hasattr(raw, "_local_infile") or not mysql_load.available():
            return False
        from pymysql.constants import CLIENT

        if not getattr(raw, "client_flag", 0) & CLIENT.LOCAL_FILES:
            return False
        if server_flag(conn.engine, "galera", galera_on, conn):
            return False
        return server_flag(conn.engine, "local_infile", local_infile_on, conn)

    def is_retryable(self, exc: BaseException) -> bool:
        return mysql_errno(exc) in RETRYABLE

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return mysql_errno(exc) == 1062

    def is_unreachable(self, exc: BaseException) -> bool:
        return mysql_errno(exc) in UNREACHABLE

    def is_unavailable(self, exc: BaseException) -> bool:
        """Also MariaDB's broken table-cache copy of a table with triggers (1710/1711, "… has an
        error in its body"), which a session killed while opening it can leave: every statement
        handed that copy fails, nothing is written, and it lasts until FLUSH TABLES (docs/engine.md,
        "Killed sessions")."""
        return super().is_unavailable(exc) or mysql_errno(exc) in BROKEN_TABLE_COPY


def mysql_errno(exc: BaseException) -> int | None:
    """The server's error number (1213, 1062, …) of a DBAPI error, whatever SQLSTATE it also carries.

    PyMySQL ≥ 1.2 sets `.sqlstate` on its errors (1213 → "40001", 1062 → "23000"), so the generic
    `driver_code`, which prefers SQLSTATE, would never match the MySQL error numbers.
    """
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def local_infile_on(conn: Connection) -> bool:
    """The server's `local_infile`: whether it accepts LOAD DATA LOCAL at all."""
    return bool(conn.execute(sa.text("SELECT @@GLOBAL.local_infile")).scalar())


def wsrep_is_on(row: Any) -> bool:
    return row is not None and str(row[1]).upper() == "ON"


def galera_on(conn: Connection) -> bool:
    """Whether the server is a Galera node (wsrep_on)."""
    return wsrep_is_on(conn.exec_driver_sql(WSREP_ON).first())


def batches_here(conn: Connection) -> bool:
    """Whether several statements may go in one text on `conn`: it was opened with the capability
    and the server is not a Galera node (probed when the pool made its first connection). On Galera
    a transaction aborted in the middle of such a text (another node's writeset won) left its
    caller waiting for the text's next result, for seconds; one statement at a time, the lost race
    comes back at once and is retried."""
    return takes_batches(conn) and bool(conn.connection.info.get(BATCHES_KEY))


def is_galera(engine: Engine) -> bool:
    """Whether the server is a Galera node (wsrep_on): GET_LOCK is node-local there."""
    return server_flag(engine, "galera", galera_on)
