"""PyMySQL's "preferred" TLS context made once per process (src/autonumber/db/pymysql_tls.py), on
the real MariaDB server: every connection of every engine shares it and still works, while TLS
options of the URL's own get a context of their own, as PyMySQL makes it."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine
from autonumber.db.pymysql_tls import SharedContextConnection

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
            assert all(isinstance(d, SharedContextConnection) for d in drivers)
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
    preferred = [SharedContextConnection(**params) for _ in range(2)]
    assert preferred[0].ctx is preferred[1].ctx
    own = SharedContextConnection(**params, ssl_verify_cert=True)
    assert own.ctx is not preferred[0].ctx
    assert own._ssl_required  # PyMySQL's own handling: TLS asked for is TLS required
