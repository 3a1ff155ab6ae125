"""The PyMySQL connection of the MySQL-family engines (src/autonumber/db/pymysql_connection.py), on
the real MariaDB server: its "preferred" TLS context is made once per process and shared by every
connection of every engine, which still work, while TLS options of the URL's own get a context of
their own, as PyMySQL makes it; and a server that accepts the connection and then says nothing is
an error after `connect_timeout`, never a caller held forever."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine
from autonumber.db.pymysql_connection import BoundedConnection


@contextmanager
def silent_server() -> Iterator[int]:
    """A port on loopback that accepts every connection and never sends a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # the listener closed
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in held:
            conn.close()


pytestmark = pytest.mark.parametrize(
    "db_url", [pytest.param("mysql", id="mysql", marks=pytest.mark.mysql)], indirect=True
)


def _driver(conn: sa.Connection) -> Any:
    return conn.connection.dbapi_connection


def test_connections_of_every_engine_share_one_context_and_work(db_url: str) -> None:
    engines = [create_engine(db_url), create_engine(db_url)]
    try:
        with engines[0].connect() as a, engines[0].connect() as b, engines[1].connect() as c:
            drivers = [_driver(a), _driver(b), _driver(c)]
            assert all(isinstance(d, BoundedConnection) for d in drivers)
            assert drivers[0].ctx is drivers[1].ctx is drivers[2].ctx
            assert [conn.execute(sa.text("SELECT 1")).scalar_one() for conn in (a, b, c)] == [1, 1, 1]
    finally:
        for engine in engines:
            engine.dispose()


def test_tls_options_of_the_urls_own_get_their_own_context(db_url: str) -> None:
    url = sa.make_url(db_url)
    params: dict[str, Any] = {
        "host": url.host,
        "port": url.port or 3306,
        "user": url.username,
        "defer_connect": True,
    }
    preferred = [BoundedConnection(**params) for _ in range(2)]
    assert preferred[0].ctx is preferred[1].ctx
    own = BoundedConnection(**params, ssl_verify_cert=True)
    assert own.ctx is not preferred[0].ctx
    assert own._ssl_required  # PyMySQL's own handling: TLS asked for is TLS required


def test_a_server_that_accepts_and_says_nothing_is_an_error_after_connect_timeout(db_url: str) -> None:
    with silent_server() as port:
        url = sa.make_url(db_url).set(host="127.0.0.1", port=port).update_query_dict({"connect_timeout": "1"})
        engine = create_engine(url, pool_pre_ping=False)
        started = time.monotonic()
        try:
            with pytest.raises(sa.exc.OperationalError, match=r"Lost connection|timed out"):
                engine.connect()
        finally:
            engine.dispose()
    assert time.monotonic() - started < 30, "the handshake was not bounded by connect_timeout"
