"""PyMySQL's "preferred" TLS with one `ssl` context per process instead of one per connection.

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


class SharedContextConnection(Connection):  # type: ignore[misc]
    """A PyMySQL connection whose "preferred" TLS context is the process's one."""

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        global _preferred
        if sslp != {}:  # TLS options of the URL's own: a context of their own, as PyMySQL makes it
            return super()._create_ssl_ctx(sslp)  # type: ignore[no-any-return]
        with _lock:
            if _preferred is None:
                _preferred = super()._create_ssl_ctx(sslp)
            return _preferred


def share_preferred_context(engine: Engine) -> None:
    """Make `engine`'s PyMySQL connections share the "preferred" TLS context (nothing when this
    PyMySQL builds its context some other way)."""
    if not callable(getattr(Connection, "_create_ssl_ctx", None)):
        return

    def connect(*cargs: Any, **cparams: Any) -> Any:
        return SharedContextConnection(*cargs, **cparams)

    engine.dialect.connect = connect  # type: ignore[method-assign]
