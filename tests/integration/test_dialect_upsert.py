"""Insert-or-raise-to-GREATEST: the upsert never lowers a value, alone or under
8 concurrent writers. Lost races the backend reports (deadlocks) are retried and counted."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import create_engine, dialect_for
from autonumber.db.schema import reconcile_system_schema
from autonumber.db.tables import counter_table as counter

KEY = {"field_id": "fld_upsert", "scope_key": ""}
THREADS = 8
PER_THREAD = 60


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = create_engine(db_url, pool_size=THREADS)
    reconcile_system_schema(eng)
    yield eng
    eng.dispose()


def _value(engine: Engine, key: dict[str, str] = KEY) -> int | None:
    with engine.connect() as conn:
        return conn.execute(
            sa.select(counter.c.next_value).where(
                counter.c.field_id == key["field_id"], counter.c.scope_key == key["scope_key"]
            )
        ).scalar_one_or_none()


def _upsert(engine: Engine, value: int, key: dict[str, str] = KEY, **extra: object) -> None:
    dialect = dialect_for(engine)
    with engine.begin() as conn:
        dialect.upsert_greatest(conn, counter, key, "next_value", value, extra or None)


def test_upsert_never_lowers_a_value(engine: Engine) -> None:
    assert _value(engine) is None
    expected: list[int] = []
    for value in [5, 3, 9, 9, 1, 0, 10, 2, 1_000_000_000_000, 7]:
        _upsert(engine, value)
        expected.append(max(expected[-1] if expected else value, value))
        assert _value(engine) == expected[-1]
    assert _value(engine) == 1_000_000_000_000

    other = {"field_id": "fld_upsert", "scope_key": "2026"}
    _upsert(engine, 4, other)
    assert _value(engine, other) == 4
    assert _value(engine) == 1_000_000_000_000
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(counter)).scalar_one() == 2


def test_upsert_updates_extra_columns_but_keeps_created_date(engine: Engine) -> None:
    t0, t1, t2 = datetime(2026, 1, 1, 0, 0, 0, 1), datetime(2026, 2, 1), datetime(2026, 3, 1)
    _upsert(engine, 5, created_date=t0, last_modified_date=t0)
    _upsert(engine, 3, created_date=t1, last_modified_date=t1)
    _upsert(engine, 8, created_date=t2, last_modified_date=t2)
    with engine.connect() as conn:
        row = conn.execute(sa.select(counter)).one()
    assert row.next_value == 8
    assert row.created_date == t0
    assert row.last_modified_date == t2


def test_upsert_under_concurrent_writers_keeps_the_maximum(engine: Engine) -> None:
    dialect = dialect_for(engine)
    rng = random.Random(20260418)
    plans = [[rng.randrange(1, 10_000_000) for _ in range(PER_THREAD)] for _ in range(THREADS)]
    retries = 0
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def writer(values: list[int]) -> list[int]:
        nonlocal retries
        start.wait(timeout=30)
        written = []
        for value in values:
            for _attempt in range(50):
                try:
                    _upsert(engine, value)
                    break
                except sa.exc.DBAPIError as exc:
                    if not dialect.is_retryable(exc):
                        raise
                    with lock:
                        retries += 1
            else:
                pytest.fail(f"upsert of {value} kept losing races")
            written.append(value)
            # The value never drops below what this writer has committed.
            current = _value(engine)
            assert current is not None and current >= max(written)
        return written

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = list(pool.map(writer, plans))

    written = [v for values in results for v in values]
    assert len(written) == THREADS * PER_THREAD
    print(f"{dialect.name}: {len(written)} concurrent upserts, {retries} retried lost race(s)")
    assert _value(engine) == max(written)
