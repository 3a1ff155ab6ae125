"""The PyMySQL connection the MySQL-family engines open: a handshake bounded by `connect_timeout`,
and one "preferred" TLS context per process instead of one per connection.

PyMySQL bounds only the TCP connect by `connect_timeout`: the server's handshake is then read with
`read_timeout`, unbounded by default, so a server (or a proxy) that accepts the connection and then
says nothing would hold the caller forever. Here the handshake is read with `connect_timeout` too
(10 s unless the URL says otherwise) and `read_timeout` applies from the first statement on.

Given no TLS option, PyMySQL 1.2 connects with TLS when the server offers it and in the clear when
not. For that it builds a context in every connection's constructor, loading the system's
certificate authorities: about 18 ms of CPU per connect on the machines measured, under Python's
lock, whether or not the server offers TLS (docs/performance.md). That context checks no
certificate (no CA was given), so one made once serves every such connection the same. A URL's
own TLS options keep PyMySQL's handling; a PyMySQL without the hook keeps its own behaviour.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

from pymysql.connections import Connection
from sqlalchemy.engine import Engine

_lock = threading.Lock()
_preferred: ssl.SSLContext | None = None


class BoundedConnection(Connection):  # type: ignore[misc]
    """A PyMySQL connection whose handshake is bounded and whose "preferred" TLS context is the
    process's one."""

    def connect(self, sock: Any = None) -> None:
        statements: float | None = self._read_timeout  # type: ignore[has-type]
        if statements is None:
            self._read_timeout = self.connect_timeout  # the handshake's reads
        try:
            super().connect(sock)
        finally:
            self._read_timeout = statements  # set on the socket at the next read

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        global _preferred
        if sslp != {}:  # TLS options of the URL's own: a context of their own, as PyMySQL makes it
            return super()._create_ssl_ctx(sslp)  # type: ignore[no-any-return]
        with _lock:
            if _preferred is None:
                _preferred = super()._create_ssl_ctx(sslp)
            return _preferred


def use_bounded_connections(engine: Engine) -> None:
    """Make `engine` open its PyMySQL connections as BoundedConnection."""

    def connect(*cargs: Any, **cparams: Any) -> Any:
        return BoundedConnection(*cargs, **cparams)

    engine.dialect.connect = connect  # type: ignore[method-assign]
