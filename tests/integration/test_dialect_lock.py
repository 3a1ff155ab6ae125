"""The named exclusive lock: GET_LOCK on MariaDB, advisory locks on PostgreSQL,
a lease row taken under BEGIN IMMEDIATE on SQLite. A second holder (another connection, thread or
process) is kept out and times out cleanly with LockTimeout; after release it gets the lock."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy.engine import Engine

import testdb
from autonumber.db import create_engine, dialect_for
from autonumber.errors import LockTimeout
from testdb import worker_id

NAME = f"autonumber:test:lock:{worker_id()}"
"""MariaDB's GET_LOCK names are server-wide: each xdist worker locks its own name."""
SHORT = 0.5
LONG = 10.0


def _try_lock(engine: Engine, name: str, timeout: float) -> tuple[str, float]:
    """Take and release the lock; report 'acquired' or 'timeout' and how long it took."""
    start = time.monotonic()
    try:
        with dialect_for(engine).named_lock(engine, name, timeout):
            return "acquired", time.monotonic() - start
    except LockTimeout as exc:
        assert exc.name == name
        assert exc.timeout == timeout
        assert name in str(exc)
        return "timeout", time.monotonic() - start


def test_lock_is_free_then_reentrant_after_release(engine: Engine) -> None:
    dialect = dialect_for(engine)
    for _ in range(3):
        with dialect.named_lock(engine, NAME, LONG):
            pass
    assert _try_lock(engine, NAME, SHORT)[0] == "acquired", "the lock stayed held after its release"


def test_second_holder_in_another_thread_times_out(engine: Engine) -> None:
    dialect = dialect_for(engine)
    with ThreadPoolExecutor(max_workers=2) as pool:
        with dialect.named_lock(engine, NAME, LONG):
            outcome, elapsed = pool.submit(_try_lock, engine, NAME, SHORT).result(timeout=30)
            assert outcome == "timeout"
            assert SHORT * 0.8 <= elapsed < SHORT + 20, elapsed  # generous: a loaded machine is slow
            # A different name is not blocked by this one.
            other, _ = pool.submit(_try_lock, engine, NAME + ":other", SHORT).result(timeout=30)
            assert other == "acquired"
        outcome, elapsed = pool.submit(_try_lock, engine, NAME, LONG).result(timeout=30)
    assert outcome == "acquired"
    assert elapsed < LONG, elapsed  # did not wait out its timeout


def test_waiting_holder_gets_the_lock_once_released(engine: Engine) -> None:
    dialect = dialect_for(engine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        with dialect.named_lock(engine, NAME, LONG):
            waiter = pool.submit(_try_lock, engine, NAME, LONG)
            time.sleep(0.5)
            assert not waiter.done()
        outcome, elapsed = waiter.result(timeout=30)
    assert outcome == "acquired"
    assert elapsed < LONG, elapsed  # it waited (not done while held), then got the lock before its timeout


def test_lock_is_released_when_the_body_raises(engine: Engine) -> None:
    dialect = dialect_for(engine)
    with pytest.raises(RuntimeError), dialect.named_lock(engine, NAME, LONG):
        raise RuntimeError("boom")
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(_try_lock, engine, NAME, SHORT).result(timeout=30)[0] == "acquired"


def _child_try_lock(url: str, name: str, timeout: float) -> tuple[str, float]:
    """Runs in a spawned process: a fresh engine, one attempt."""
    engine = create_engine(url, pool_size=1)
    try:
        return _try_lock(engine, name, timeout)
    finally:
        engine.dispose()


def test_second_process_cannot_take_the_lock_while_held(engine: Engine, db_url: str) -> None:
    dialect = dialect_for(engine)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes=1) as pool:
        # Warm the child up (imports) so the timed attempt measures the lock, not the start-up.
        assert pool.apply(_child_try_lock, (db_url, NAME + ":warm", LONG))[0] == "acquired"
        with dialect.named_lock(engine, NAME, LONG):
            outcome, elapsed = pool.apply_async(_child_try_lock, (db_url, NAME, SHORT)).get(30)
            assert outcome == "timeout"
            assert SHORT * 0.8 <= elapsed < SHORT + 20, elapsed  # generous: a loaded machine is slow
        outcome, _ = pool.apply_async(_child_try_lock, (db_url, NAME, LONG)).get(30)
        assert outcome == "acquired"


@pytest.mark.mysql
@pytest.mark.parametrize("db_url", ["mysql"], indirect=True)
def test_mariadb_lock_of_one_database_does_not_hold_up_another(engine: Engine) -> None:
    """GET_LOCK names are server-wide: the set-up lock of one database must not make a set-up of
    another database on the same server wait (the test suite's workers, or two tenants)."""
    other_url = engine.url.set(database=f"{engine.url.database}_lk")
    testdb.ensure_database(other_url.render_as_string(hide_password=False))
    other = create_engine(other_url)
    dialect = dialect_for(engine)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool, dialect.named_lock(engine, NAME, LONG):
            assert pool.submit(_try_lock, other, NAME, SHORT).result(timeout=30)[0] == "acquired"
            assert pool.submit(_try_lock, engine, NAME, SHORT).result(timeout=30)[0] == "timeout"
    finally:
        other.dispose()
