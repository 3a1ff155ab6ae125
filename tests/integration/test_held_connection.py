"""The group writer's held connection (db/held.py): one connection, lent to one writer at a time,
kept between transactions, replaced once it is unusable, given back on close."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from autonumber.db import create_engine
from autonumber.db.held import HeldConnection
from autonumber.errors import ConnectionBudgetExhausted

THINGS = sa.Table("held_things", sa.MetaData(), sa.Column("n", sa.Integer, primary_key=True))


@pytest.fixture
def held(db_url: str) -> Iterator[HeldConnection]:
    db = create_engine(db_url, pool_size=1, max_overflow=0)
    THINGS.drop(db, checkfirst=True)
    THINGS.create(db)
    writer = HeldConnection(db, timeout=0.5, name="group")
    yield writer
    writer.close()
    THINGS.drop(db)
    db.dispose()


def stored(held: HeldConnection) -> list[int]:
    with held.begin() as conn:
        return list(conn.execute(sa.select(THINGS.c.n).order_by(THINGS.c.n)).scalars())


def test_transactions_commit_or_roll_back_on_one_connection_kept_from_the_pool(
    held: HeldConnection,
) -> None:
    with held.begin() as conn:
        first = conn.connection.dbapi_connection
        conn.execute(sa.insert(THINGS), [{"n": 1}])
    with pytest.raises(RuntimeError), held.begin() as conn:
        conn.execute(sa.insert(THINGS), [{"n": 2}])
        raise RuntimeError("the writer failed")
    with held.begin() as conn:
        assert conn.connection.dbapi_connection is first
    assert stored(held) == [1]
    assert held.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    held.close()
    assert held.engine.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_a_failed_statement_leaves_the_next_transaction_a_usable_connection(held: HeldConnection) -> None:
    with held.begin() as conn:
        conn.execute(sa.insert(THINGS), [{"n": 1}])
    with pytest.raises(sa.exc.IntegrityError), held.begin() as conn:
        conn.execute(sa.insert(THINGS), [{"n": 1}])
    with held.begin() as conn:
        conn.execute(sa.insert(THINGS), [{"n": 2}])
    assert stored(held) == [1, 2]


def test_an_invalidated_connection_is_replaced(held: HeldConnection) -> None:
    """As after a driver error that says the connection is lost (SQLAlchemy invalidates it)."""
    with pytest.raises(RuntimeError), held.begin() as conn:
        first = conn.connection.dbapi_connection
        conn.invalidate()
        raise RuntimeError("the connection was lost")
    with held.begin() as conn:
        assert conn.connection.dbapi_connection is not first
        conn.execute(sa.insert(THINGS), [{"n": 3}])
    assert stored(held) == [3]


def test_writers_take_turns_and_one_that_waits_too_long_names_the_pool(held: HeldConnection) -> None:
    inside, order = threading.Event(), []

    def slow() -> None:
        with held.begin() as conn:
            inside.set()
            time.sleep(0.2)
            conn.execute(sa.insert(THINGS), [{"n": 1}])
            order.append("slow")

    worker = threading.Thread(target=slow)
    worker.start()
    inside.wait()
    with held.begin() as conn:  # waits its turn (0.2 s of the 0.5 s allowed)
        conn.execute(sa.insert(THINGS), [{"n": 2}])
        order.append("next")
    worker.join()
    assert order == ["slow", "next"] and stored(held) == [1, 2]

    inside.clear()
    release = threading.Event()

    def hold() -> None:
        with held.begin():
            inside.set()
            release.wait()

    worker = threading.Thread(target=hold)
    worker.start()
    inside.wait()
    try:
        with pytest.raises(ConnectionBudgetExhausted, match="'group' pool"), held.begin():
            pass
    finally:
        release.set()
        worker.join()
