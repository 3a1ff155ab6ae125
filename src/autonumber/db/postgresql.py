"""PostgreSQL (and CockroachDB where the primitives exist): advisory locks, UPDATE … RETURNING."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection, Engine

from autonumber.errors import LockTimeout

from .base import Counter, Dialect, Numbered, TransactionalDDL, lock_key
from .bulk import Handed, NotDelimitable, Send, by_fields, delimited, row_columns, text_datetimes
from .driver import plain_insert, statement
from .fence import INFO_KEY, PG_SETTING, schema_version
from .fence_sql import PostgreSQLFence
from .guard import MESSAGE, TRIGGER
from .guard import PG_SETTING as GUARD_SETTING
from .lease import lease_lock
from .replies import driver_code, server_flag, to_utc
from .tables import AUTONUMBER_COLUMNS, counter_table

UNREACHABLE = frozenset({"08001", "08006", "53300", "57P01", "57P03"})
"""Cannot connect, connection failure, too many connections, shutting down, starting up."""
BUSY = ("starting up", "shutting down", "too many clients", "connection slots")
"""What a server that answered a connect says when it is there but cannot serve one now."""
RETRYABLE = {"40001", "40P01", "55P03"}
"""Serialization failure, deadlock, lock not available."""


TRANSACTION_IDLE = 0
"""psycopg.pq.TransactionStatus.IDLE (psycopg is imported only where a connection needs it)."""


_DEFER_FLUSH = sa.func.set_config(
    sa.literal_column("'synchronous_commit'"), sa.literal_column("'off'"), sa.true()
)
"""synchronous_commit off until the end of the current transaction."""


CONNECT_TIMEOUT_S = 10
"""Seconds a new connection may take before it is an error (PyMySQL's own default, for both)."""


class PostgreSQLDialect(TransactionalDDL, PostgreSQLFence, Dialect):
    """PostgreSQL: session advisory locks keyed by a stable hash of the lock name."""

    name = "postgresql"
    error_aborts_transaction = True

    def insert_many(self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """One executemany of one cached statement: psycopg 3 pipelines its rows in one round trip,
        where a multi-row INSERT's text would change with the number of rows."""
        conn.execute(plain_insert(table), rows)

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
        """With `line`: `WITH bumped AS (UPDATE … RETURNING …), line AS (INSERT … SELECT … FROM
        bumped) SELECT … FROM bumped` — increment, clock sample and line in one round trip; the
        line exists exactly when the increment changed a row. Run on the driver's cursor
        (db/driver.py): the reservation of every caller's-transaction insert and `assign_one`.
        `defer`: the statement also sets `synchronous_commit` off for its own transaction, which it
        is in autocommit (`defer_flush`)."""
        if line is None or params is None:
            return super().atomic_increment_clocked(
                conn, table, where, column, n, clock_column, guard, params
            )
        defer = defer and _defers(conn)

        def build() -> sa.ClauseElement:
            bumped = (
                sa.update(table)
                .where(where if guard is None else sa.and_(where, guard))
                .values({column: table.c[column] + n, clock_column: self.utc_now_expr()})
                .returning(table.c[column], table.c[clock_column])
                .cte("bumped")
            )
            folded = sa.select(bumped.c[column], bumped.c[clock_column]).add_cte(line(bumped).cte("line"))
            if not defer:
                return folded
            # a volatile function in a joined CTE runs once, before the statement's implicit COMMIT
            deferred = sa.select(_DEFER_FLUSH.label("deferred")).cte("deferred")
            return folded.join_from(bumped, deferred, sa.true())

        key = ("folded", where, column, n, clock_column, guard, line, defer)
        rows = statement(table, key, build, conn.dialect).run(conn, params).rows
        return (int(rows[0][0]), to_utc(rows[0][1])) if rows else None

    def folds_line(self, conn: Connection) -> bool:
        return True

    def defer_flush(self, conn: Connection) -> None:
        """`set_config(…, true)`: the setting ends with the transaction, so the pooled connection's
        next user commits as it always does. Nothing on CockroachDB (`_defers`)."""
        if not _defers(conn):
            return
        flush = statement(counter_table, ("defer-flush",), lambda: sa.select(_DEFER_FLUSH), conn.dialect)
        flush.run(conn, {})

    def commits_alone(self, conn: Connection) -> bool:
        """While the driver's connection has no transaction open: psycopg switches to autocommit
        only then (a server probe may have opened one on the group writer's connection)."""
        raw: Any = conn.connection.dbapi_connection
        return bool(raw.info.transaction_status == TRANSACTION_IDLE)

    @contextmanager
    def autocommitted(self, conn: Connection) -> Iterator[None]:
        """psycopg's autocommit: it then sends no BEGIN before a statement, and its commit and
        rollback (SQLAlchemy's, at the end of the connection's use) send nothing on an idle
        connection. Restored before the connection goes back to its pool."""
        raw: Any = conn.connection.dbapi_connection
        raw.autocommit = True
        try:
            yield
        finally:
            if not raw.closed:
                raw.autocommit = False

    def numbers_on_insert(self, conn: Connection) -> bool:
        return not is_cockroach(conn.engine, conn)

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
        """`WITH reserved AS (UPDATE counter … RETURNING value, stamp) INSERT INTO t (…, number,
        created) SELECT v.…, before || lpad(value - n + v.ord, width, '0') || after, stamp FROM
        reserved, (SELECT … 0 AS ord UNION ALL SELECT … 1 …) v RETURNING key, number, created`:
        one round trip for what takes three otherwise, run on the driver's cursor (db/driver.py).
        Each given value is CAST to its column's type (text for text: a cast to VARCHAR(n) would
        cut a value the INSERT must refuse). The counter's guard keeps the values inside `width`
        digits, so lpad never cuts one. `commit`: run in psycopg's autocommit (`autocommitted`),
        the statement is its own transaction — no BEGIN before it, no COMMIT after it."""
        fields = number.given(rows[0])

        def build() -> sa.ClauseElement:
            return _numbered_insert(self, counter, table, fields, number, len(rows))

        key = ("numbered", counter, number.column, number.created, number.key, fields, len(rows))
        stmt = statement(table, key, build, conn.dialect)
        values = {f"r{i}_{j}": row[k] for i, row in enumerate(rows) for j, k in enumerate(fields)}
        shown = {"n_before": number.before, "n_width": number.width, "n_after": number.after}
        with self.autocommitted(conn) if commit else nullcontext():
            ran = stmt.run(conn, {**params, **values, **shown})
        got = {r[0]: (str(r[1]), to_utc(r[2])) for r in ran.rows}
        if not got:
            return None
        return [got[row[number.key]] for row in rows]

    def insert(self, table: sa.Table) -> Any:
        return pg_insert(table)

    def bulk_sender(
        self, conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
    ) -> Send | None:
        """COPY … FROM STDIN on the transaction's own psycopg connection: the server's bulk path.
        The rows are formatted now, into memory: text, None, integers and datetimes as
        `delimited` text a column at a time, any other value by psycopg; the call returned sends
        them, one COPY per set of fields, handed over once the last one's data is written (its
        end and the server's answer still to come), and raises a refusal as SQLAlchemy's
        DBAPIError, as `execute` does. Names are quoted by psycopg's `Identifier` (validated API
        names already)."""
        import psycopg
        from psycopg import sql
        from psycopg.copy import Copy, FileWriter

        raw = conn.connection.dbapi_connection
        if not isinstance(raw, psycopg.Connection) or is_cockroach(conn.engine, conn):
            return None
        name = sql.Identifier(table.schema, table.name) if table.schema else sql.Identifier(table.name)
        utf8 = raw.info.encoding == "utf-8"
        copies: list[tuple[sql.Composed, bytes]] = []
        for fields, group in by_fields(rows).items():
            columns = sql.SQL(", ").join(sql.Identifier(f) for f in fields)
            values_of = row_columns(group, fields)
            try:
                if not utf8:
                    raise NotDelimitable(raw.info.encoding)
                data = delimited(values_of, _copy_text)
            except NotDelimitable:
                out = io.BytesIO()
                with raw.cursor() as cursor, Copy(cursor, binary=False, writer=FileWriter(out)) as formatter:
                    for values in text_datetimes(table, fields, values_of):
                        formatter.write_row(values)
                data = out.getvalue()
            copies.append((sql.SQL("COPY {} ({}) FROM STDIN").format(name, columns), data))

        def send(handed: Handed) -> None:
            for k, (copy_in, data) in enumerate(copies):
                try:
                    with raw.cursor() as cursor, cursor.copy(copy_in) as copy:
                        copy.write(data)
                        if k == len(copies) - 1:
                            handed()
                except psycopg.Error as exc:
                    text = copy_in.as_string(raw)
                    raise sa.exc.DBAPIError.instance(text, None, exc, psycopg.Error) from exc

        return send

    def configure_engine(self, engine: Engine, *, statement_batches: bool = False) -> None:
        version = schema_version()

        @event.listens_for(engine, "do_connect")
        def _bounded_connect(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
            # libpq waits for an answer without end by default: a server (or proxy) that accepts and
            # then says nothing would hold the caller forever. The URL's own value wins.
            cparams.setdefault("connect_timeout", CONNECT_TIMEOUT_S)

        @event.listens_for(engine, "connect")
        def _utc_session(dbapi_connection: Any, record: Any) -> None:
            # CURRENT_TIMESTAMP defaults and aware datetimes bound to TIMESTAMP columns are converted
            # with the session TimeZone: pin it to UTC (committed, as SET is transactional). The
            # same round trip declares the schema version the writer fence checks (db/fence.py).
            with dbapi_connection.cursor() as cursor:
                cursor.execute(f"SET TIME ZONE 'UTC'; SET {PG_SETTING} = '{int(version)}'")
            dbapi_connection.commit()
            record.info[INFO_KEY] = version

    def utc_now_expr(self) -> sa.ColumnElement[Any]:
        return sa.func.timezone("UTC", sa.func.clock_timestamp())

    def named_lock(self, engine: Engine, name: str, timeout: float) -> AbstractContextManager[None]:
        if is_cockroach(engine):
            return lease_lock(self, engine, name, timeout)
        return self._advisory_lock(engine, name, timeout)

    @contextmanager
    def _advisory_lock(self, engine: Engine, name: str, timeout: float) -> Iterator[None]:
        key = lock_key(name)
        deadline = time.monotonic() + timeout
        with engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            while not conn.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar():
                if time.monotonic() >= deadline:
                    raise LockTimeout(name, timeout)
                time.sleep(0.05)
            try:
                yield
            finally:
                conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))

    def guard_install_sql(self) -> list[str]:
        changed = " OR ".join(f"OLD.{c}::text IS DISTINCT FROM NEW.{c}::text" for c in AUTONUMBER_COLUMNS)
        return [
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger AS $$ BEGIN "
            f"IF ({changed}) AND coalesce(current_setting('{GUARD_SETTING}', true), '') <> '1' "
            f"THEN RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'P0001'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql",
            f'DROP TRIGGER IF EXISTS {TRIGGER} ON "_System_Field"',
            f'CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON "_System_Field" '
            f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER}()",
        ]

    def guard_installed(self, conn: Connection) -> bool:
        stmt = sa.text("SELECT COUNT(*) FROM pg_trigger WHERE tgname = :t AND NOT tgisinternal")
        return bool(conn.execute(stmt, {"t": TRIGGER}).scalar())

    def guard_drop_sql(self) -> list[str]:
        return [
            f'DROP TRIGGER IF EXISTS {TRIGGER} ON "_System_Field"',
            f"DROP FUNCTION IF EXISTS {TRIGGER}()",
        ]

    @contextmanager
    def guard_authorized(self, conn: Connection) -> Iterator[None]:
        """A transaction-local setting: it ends with the transaction whatever happens, and is
        cleared after the block so later statements of that transaction are not authorized (no
        `finally`: a failed transaction refuses every further statement)."""
        conn.execute(sa.text(f"SELECT set_config('{GUARD_SETTING}', '1', true)"))
        yield
        conn.execute(sa.text(f"SELECT set_config('{GUARD_SETTING}', '', true)"))

    def is_retryable(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) in RETRYABLE)

    def is_duplicate_key(self, exc: BaseException) -> bool:
        return bool(driver_code(exc) == "23505")

    def is_unreachable(self, exc: BaseException) -> bool:
        # libpq's connect errors carry no SQLSTATE: a refused socket has no server message at all,
        # a server that answered says FATAL (a wrong role or database, or busy: starting, full)
        if not isinstance(exc, sa.exc.OperationalError):
            return False
        orig = getattr(exc, "orig", None)
        if getattr(orig, "sqlstate", None) in UNREACHABLE:
            return True
        text = str(orig)
        return "FATAL:" not in text or any(busy in text for busy in BUSY)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value: Any) -> str:
    """One value in COPY's text format as psycopg would send it (a datetime's text is `str()`,
    psycopg's own); NotDelimitable for NUL (never valid text here) and other types."""
    kind = type(value)
    if kind is str and "\x00" not in value:
        escaped: str = value.translate(_COPY_ESCAPES)
        return escaped
    if value is None:
        return "\\N"
    if kind is int or kind is datetime:
        return str(value)
    raise NotDelimitable(kind.__name__)


def _defers(conn: Connection) -> bool:
    """Whether a transaction may set `synchronous_commit`: not on CockroachDB, whose commits are
    replicated by consensus with no such setting."""
    return not is_cockroach(conn.engine, conn)


def is_cockroach(engine: Engine, conn: Connection | None = None) -> bool:
    """Whether the server is CockroachDB (no advisory locks there: a lease row instead); probed on
    `conn` when given, so a caller holding a connection never waits for a second one."""

    def probe(conn: Connection) -> bool:
        return "cockroachdb" in str(conn.execute(sa.select(sa.func.version())).scalar()).lower()

    return server_flag(engine, "cockroach", probe, conn)


def _numbered_insert(
    dialect: Dialect, counter: Counter, table: sa.Table, fields: Sequence[str], number: Numbered, rows: int
) -> sa.Insert:
    """The statement of `insert_numbered` for `rows` rows holding `fields` (bound as r<row>_<field>)."""
    reserved = dialect.counter_update(counter).cte("reserved")

    def given(i: int) -> sa.Select[Any]:
        cast = [_unbounded(table.c[k].type) for k in fields]
        values = [
            sa.cast(sa.bindparam(f"r{i}_{j}", type_=table.c[k].type), cast[j]) for j, k in enumerate(fields)
        ]
        return sa.select(
            *(v.label(f"f{j}") for j, v in enumerate(values)), sa.literal_column(str(i)).label("ord")
        )

    v = (given(0) if rows == 1 else sa.union_all(*(given(i) for i in range(rows)))).subquery("v")
    digits = sa.func.lpad(
        sa.cast(reserved.c[counter.column] - counter.n + v.c.ord, sa.Text),
        sa.bindparam("n_width", type_=sa.Integer),
        "0",
    )
    value = sa.func.concat(
        sa.bindparam("n_before", type_=sa.Text), digits, sa.bindparam("n_after", type_=sa.Text)
    )
    source = sa.select(
        *(v.c[f"f{j}"] for j in range(len(fields))), value, reserved.c[counter.clock_column]
    ).select_from(reserved.join(v, sa.true()))
    return (
        sa.insert(table)
        .from_select([*fields, number.column, number.created], source)
        .returning(table.c[number.key], table.c[number.column], table.c[number.created])
    )


def _unbounded(kind: sa.types.TypeEngine[Any]) -> sa.types.TypeEngine[Any]:
    """The type a given value is cast to: the column's, but text for a text column of any length."""
    return sa.Text() if isinstance(kind, sa.String) else kind
