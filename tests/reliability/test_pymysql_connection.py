"""The PyMySQL connection of the MySQL-family engines (src/autonumber/db/pymysql_connection.py): it
works on the real MariaDB server, and a server that accepts the connection and then says nothing is
an error after `connect_timeout`, never a caller held forever."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from fault_proxy import fault_proxy

from autonumber.db import create_engine
from autonumber.db.pymysql_connection import BoundedConnection

pytestmark = pytest.mark.parametrize(
    "db_url", [pytest.param("mysql", id="mysql", marks=pytest.mark.mysql)], indirect=True
)


def test_connections_are_bounded_ones_and_work(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert isinstance(conn.connection.dbapi_connection, BoundedConnection)
            assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1
    finally:
        engine.dispose()


def test_a_server_that_accepts_and_says_nothing_is_an_error_after_connect_timeout(db_url: str) -> None:
    with fault_proxy(db_url) as proxy:
        proxy.stall()  # accepts the connection, then never a byte
        url = sa.make_url(proxy.url(db_url)).update_query_dict({"connect_timeout": "1"})
        engine = create_engine(url, pool_pre_ping=False)
        started = time.monotonic()
        try:
            with pytest.raises(sa.exc.OperationalError, match=r"Lost connection|timed out"):
                engine.connect()
        finally:
            engine.dispose()
    assert time.monotonic() - started < 30, "the handshake was not bounded by connect_timeout"
