"""Several statements in one text on PyMySQL (MULTI_STATEMENTS), and the one SQLAlchemy internal
it needs: a COMMIT not sent after a text that committed by itself. Kept in this one module so
that the patch of the dialect's `do_commit`/`do_rollback` sits beside the only texts that need it."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy.engine import Connection, Engine

SERVER_STATUS_IN_TRANS = 1
"""The server-status flag of an OK packet that says a transaction is open (MySQL protocol)."""


def merged(*named: tuple[Any, ...] | dict[str, Any]) -> dict[str, Any]:
    """The driver parameters of statements sent as one text: one mapping, a name shared by two of
    them holding one value (they are filled from the same parameters)."""
    merged: dict[str, Any] = {}
    for args in named:
        if not isinstance(args, dict):
            raise TypeError("statements sent as one text need the driver's named (pyformat) parameters")
        for name, value in args.items():
            if merged.setdefault(name, value) != value:
                raise ValueError(f"statements sent as one text bind {name!r} to two values")
    return merged


TEXT_COMMITTED = "autonumber_text_committed"
"""Set on a PyMySQL connection whose transaction a text of ours ended with its own COMMIT."""


def no_commit_after_text(engine: Engine) -> None:
    """SQLAlchemy's COMMIT not sent after a text that ended its transaction with its own COMMIT
    (`insert_numbered`'s `commit`): that would be a round trip that commits nothing and, when the
    server dies right then, fails and turns a known outcome into CommitOutcomeUnknown (kept for
    that, not for speed: the job bench measured no difference, 28 MariaDB cells). Skipped only
    when the text said so (TEXT_COMMITTED) and the server's last status agrees that no transaction
    is open; the mark is cleared by either end of the transaction. The engine's dialect is its own
    (create_engine makes one per engine), so only the pools that run such texts are touched."""
    dialect = engine.dialect
    commit, rollback = dialect.do_commit, dialect.do_rollback

    def do_commit(dbapi_connection: Any) -> None:
        raw = driver_connection(dbapi_connection)
        if not getattr(raw, TEXT_COMMITTED, False):
            commit(dbapi_connection)
            return
        setattr(raw, TEXT_COMMITTED, False)
        if raw.server_status & SERVER_STATUS_IN_TRANS:
            commit(dbapi_connection)

    def do_rollback(dbapi_connection: Any) -> None:
        raw = driver_connection(dbapi_connection)
        if getattr(raw, TEXT_COMMITTED, False):
            setattr(raw, TEXT_COMMITTED, False)
        rollback(dbapi_connection)

    setattr(dialect, "do_commit", do_commit)  # noqa: B010 (this instance's method, not the class's)
    setattr(dialect, "do_rollback", do_rollback)  # noqa: B010


def driver_connection(connection: Any) -> Any:
    """The driver's own connection behind SQLAlchemy's pool proxy (the mark is set on it)."""
    return getattr(connection, "dbapi_connection", connection)


def takes_batches(conn: Connection) -> bool:
    """Whether `conn` was opened with the capability of several statements in one text (PyMySQL's
    MULTI_STATEMENTS, asked for by `statement_batches`)."""
    if conn.dialect.driver != "pymysql":
        return False
    return bool(getattr(conn.connection.dbapi_connection, "client_flag", 0) & multi_statements())


@cache
def multi_statements() -> int:
    """PyMySQL's MULTI_STATEMENTS client flag, imported once (it is read on every reservation)."""
    from pymysql.constants import CLIENT

    return int(CLIENT.MULTI_STATEMENTS)
