"""The PyMySQL connection the MySQL-family engines open: a handshake bounded by `connect_timeout`.

PyMySQL bounds only the TCP connect by `connect_timeout`: the server's handshake is then read with
`read_timeout`, unbounded by default, so a server (or a proxy) that accepts the connection and then
says nothing would hold the caller forever. Here the handshake is read with `connect_timeout` too
(10 s unless the URL says otherwise) and `read_timeout` applies from the first statement on.
"""

from __future__ import annotations

from typing import Any

from pymysql.connections import Connection
from sqlalchemy.engine import Engine


class BoundedConnection(Connection):  # type: ignore[misc]
    """A PyMySQL connection whose handshake is bounded by `connect_timeout`."""

    def connect(self, sock: Any = None) -> None:
        statements: float | None = self._read_timeout  # type: ignore[has-type]
        if statements is None:
            self._read_timeout = self.connect_timeout  # the handshake's reads
        try:
            super().connect(sock)
        finally:
            self._read_timeout = statements  # set on the socket at the next read


def use_bounded_connections(engine: Engine) -> None:
    """Make `engine` open its PyMySQL connections as BoundedConnection."""

    def connect(*cargs: Any, **cparams: Any) -> Any:
        return BoundedConnection(*cargs, **cparams)

    engine.dialect.connect = connect  # type: ignore[method-assign]
