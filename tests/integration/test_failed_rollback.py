"""A connection whose ROLLBACK fails (a Galera node answering 1047 while it rejoins; here the
driver's rollback made to fail once) goes back to the pool at once, invalidated: the pool is not
short of it, and the next caller gets a working connection."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine


def failing_once(engine: sa.Engine, error: BaseException) -> list[int]:
    """Make the driver's next ROLLBACK raise `error`; the list counts the failures."""
    failed: list[int] = []
    dialect = engine.dialect
    original = dialect.do_rollback

    def do_rollback(dbapi_connection: Any) -> None:
        if not failed:
            failed.append(1)
            raise error
        original(dbapi_connection)

    dialect.do_rollback = do_rollback  # type: ignore[method-assign]
    return failed


def driver_error(engine: sa.Engine) -> BaseException:
    """The error the backend's driver raises for a server that refuses the command."""
    name = engine.dialect.name
    dbapi = engine.dialect.loaded_dbapi
    if name in ("mysql", "mariadb"):
        return dbapi.OperationalError(1047, "WSREP has not yet prepared node for application use")
    return dbapi.OperationalError("the server refused ROLLBACK")


def test_a_failed_rollback_gives_its_connection_back_at_once(db_url: str) -> None:
    engine = create_engine(db_url, pool_size=2)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        failed = failing_once(engine, driver_error(engine))
        with pytest.raises(sa.exc.DBAPIError), engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))  # the block's end rolls back: it fails
        assert failed == [1]
        assert engine.pool.checkedout() == 0, "the connection whose ROLLBACK failed is still out"
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT 2")).scalar() == 2
    finally:
        engine.dispose()
