"""Several statements in one text on PyMySQL (MULTI_STATEMENTS): the parameters they share, and
whether a connection takes such texts."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy.engine import Connection

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
