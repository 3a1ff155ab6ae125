"""Statements run on a transaction's own driver cursor, for the hottest path only (the group
writer's numbered insert, on every backend): compiled once for the dialect, bound through
SQLAlchemy's own type processors, and a driver error raised exactly as SQLAlchemy raises it. What
it skips is SQLAlchemy's execute path (compile-cache lookup, execution context, cursor events,
result wrapping), which costs more than SQLite's own work for a one-row statement and a good part
of the client's CPU on the servers. SQLAlchemy's cursor events do not see these statements; the
COMMIT still goes through SQLAlchemy."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.compiler import SQLCompiler


class DriverStatement:
    """A Core statement compiled once for one dialect, its bind parameters in the driver's order."""

    def __init__(self, stmt: sa.ClauseElement, dialect: sa.Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler):
            raise TypeError(f"not a SQL statement: {stmt!r}")
        self.sql = compiled.string
        positions = compiled.positiontup
        self._positional = positions is not None
        self._names: tuple[str, ...] = tuple(positions if positions is not None else compiled.params)
        self._defaults = compiled.params  # the values fixed in the statement (function arguments)
        kinds = {name: compiled.binds[name].type.dialect_impl(dialect) for name in self._names}
        processors = {name: kind.bind_processor(dialect) for name, kind in kinds.items()}
        self._processors = {name: process for name, process in processors.items() if process is not None}

    def args(self, params: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        """The driver's parameters for `params` (names of the statement's bind parameters)."""
        values = {name: params[name] if name in params else self._defaults[name] for name in self._names}
        for name, process in self._processors.items():
            values[name] = process(values[name])
        return tuple(values[name] for name in self._names) if self._positional else values

    def run(self, conn: Connection, params: Mapping[str, Any]) -> Ran:
        """Run it in `conn`'s transaction."""
        return execute(conn, self.sql, self.args(params))


def statement(
    table: sa.Table, key: tuple[Any, ...], build: Callable[[], sa.ClauseElement], dialect: sa.Dialect
) -> DriverStatement:
    """`build()` compiled for `dialect`, once per key (kept in `table.info`, so it goes with the
    table when a catalog change replaces it)."""
    full = ("autonumber.driver", dialect.name, dialect.driver, *key)
    return kept(table, full, lambda: DriverStatement(build(), dialect))


T = TypeVar("T")


def kept(table: sa.Table, key: tuple[Any, ...], make: Callable[[], T]) -> T:
    """`make()` once per key, kept in `table.info` (it goes with the table when a catalog change
    replaces it): what a hot path builds from a table and would otherwise build on every call."""
    found = table.info.get(key)
    if found is None:
        found = table.info.setdefault(key, make())
    return found  # type: ignore[no-any-return]


def plain_insert(table: sa.Table) -> sa.Insert:
    """`INSERT INTO table`, built once per table (`kept`): no clause construction or cache-key
    generation per row."""
    return kept(table, ("autonumber.plain_insert",), lambda: sa.insert(table))


@dataclass(frozen=True)
class Ran:
    """What a statement run on the driver's cursor gave back."""

    rows: list[Any]
    rowcount: int
    lastrowid: int | None


def execute(conn: Connection, sql: str, args: Any, *, many: bool = False) -> Ran:
    """Run `sql` on `conn`'s driver cursor (`many`: executemany over a sequence of parameters).
    A driver error goes through SQLAlchemy's own handler: wrapped as `execute` wraps it, the
    connection invalidated when the driver says it is gone."""
    cursor = conn.connection.cursor()
    try:
        if many:
            cursor.executemany(sql, args)
        else:
            cursor.execute(sql, args)
        return _result(cursor)
    except Exception as exc:
        conn._handle_dbapi_exception(exc, sql, args, cursor, None)  # always raises
        raise
    finally:
        cursor.close()


def execute_batch(conn: Connection, sql: str, args: Any) -> list[Ran]:
    """Run several statements sent as one text (a connection opened to take them), their results
    in order. The server stops at the first that fails; that error is raised as `execute` raises
    it, and the caller's transaction rolls back what the statements before it did."""
    cursor = conn.connection.cursor()
    results: list[Ran] = []
    try:
        cursor.execute(sql, args)
        while True:
            results.append(_result(cursor))
            if not cursor.nextset():
                return results
    except Exception as exc:
        conn._handle_dbapi_exception(exc, sql, args, cursor, None)  # always raises
        raise
    finally:
        cursor.close()


def _result(cursor: Any) -> Ran:
    rows = list(cursor.fetchall()) if cursor.description else []
    return Ran(rows, cursor.rowcount, getattr(cursor, "lastrowid", None))  # psycopg has none


def execute_rows(conn: Connection, sql: str, rows: Sequence[Any]) -> None:
    """INSERT-style `sql` for each of `rows` (driver parameters): one execute for one row."""
    if len(rows) == 1:
        execute(conn, sql, rows[0])
    else:
        execute(conn, sql, rows, many=True)


_BLIND: set[Callable[..., Any]] = set()


def blind(listener: Callable[..., T]) -> Callable[..., T]:
    """Mark a statement listener of autonumber's own that need not see the statements sent on the
    driver's cursor (`watched` leaves it out). It must be registered as it is: SQLAlchemy wraps a
    `before_execute` or `before_cursor_execute` listener that is not registered with `retval`."""
    _BLIND.add(listener)
    return listener


def watched(conn: Connection) -> bool:
    """Whether anything listens to `conn`'s statements (a caller's tracing or logging): then they
    go through SQLAlchemy, so that it sees them, not on the driver's cursor. SQLAlchemy's own flags
    answer first: asking each listener collection whether it is empty costs more than the rest."""
    if not (conn._has_events or conn.engine._has_events):
        return False
    # without listeners of its own, a connection hears its engine's: ask the engine's collections,
    # made once, not the joined ones SQLAlchemy builds anew for each connection
    on = conn.dispatch if conn._has_events else conn.engine.dispatch
    for kind in (on.before_execute, on.after_execute, on.before_cursor_execute, on.after_cursor_execute):
        if any(listener not in _BLIND for listener in kind):
            return True
    return False


@contextmanager
def savepoint(conn: Connection, name: str) -> Iterator[None]:
    """A savepoint of `conn`'s transaction, its statements sent on the driver's cursor (SQLAlchemy's
    `begin_nested` where they are `watched`): rolled back to (and released) when the block raises,
    released when it ends. `begin_nested` compiles its SAVEPOINT and RELEASE on every call, a third
    of a caller's one-row insert on SQLite. `name` is a fixed identifier of ours, never metadata."""
    if watched(conn):
        with conn.begin_nested():
            yield
        return
    execute(conn, f"SAVEPOINT {name}", ())
    try:
        yield
    except BaseException:
        try:
            execute(conn, f"ROLLBACK TO SAVEPOINT {name}", ())
            execute(conn, f"RELEASE SAVEPOINT {name}", ())
        except sa.exc.DBAPIError:
            pass  # the connection is gone or its transaction aborted: the error below says why
        raise
    execute(conn, f"RELEASE SAVEPOINT {name}", ())
