"""The single-statement atomic increment: `UPDATE … RETURNING` on PostgreSQL and
SQLite, `LAST_INSERT_ID(expr)` on the MySQL family. Each call reserves [returned - n, returned - 1];
concurrent callers get distinct, contiguous values."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import create_engine, dialect_for
from autonumber.db.schema import reconcile_system_schema
from autonumber.db.tables import counter_table as counter

FIELD = "fld_increment"
THREADS = 8
CALLS = 200
FIRST = 1000
WHERE = sa.and_(counter.c.field_id == FIELD, counter.c.scope_key == "")


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = create_engine(db_url, pool_size=THREADS)
    reconcile_system_schema(eng)
    yield eng
    eng.dispose()


def _seed(engine: Engine, next_value: int) -> None:
    with engine.begin() as conn:
        conn.execute(sa.insert(counter).values(field_id=FIELD, scope_key="", next_value=next_value))
        # A neighbour row that must not move.
        conn.execute(sa.insert(counter).values(field_id=FIELD, scope_key="other", next_value=7))


def _increment(engine: Engine, n: int, where: sa.ColumnElement[bool] = WHERE) -> int | None:
    dialect = dialect_for(engine)
    retries = 0
    while True:
        try:
            with engine.begin() as conn:
                return dialect.atomic_increment(conn, counter, where, "next_value", n)
        except sa.exc.DBAPIError as exc:
            retries += 1
            if not dialect.is_retryable(exc) or retries > 20:
                raise


def _stored(engine: Engine, scope_key: str = "") -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                sa.select(counter.c.next_value).where(
                    counter.c.field_id == FIELD, counter.c.scope_key == scope_key
                )
            ).scalar_one()
        )


def _run_concurrently(engine: Engine, n: int, calls: int) -> list[list[int]]:
    start = threading.Barrier(THREADS)

    def worker(_: int) -> list[int]:
        start.wait(timeout=30)
        got = []
        for _ in range(calls):
            value = _increment(engine, n)
            assert value is not None
            got.append(value)
        return got

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return list(pool.map(worker, range(THREADS)))


def test_increment_returns_value_after_increment(engine: Engine) -> None:
    _seed(engine, FIRST)
    assert _increment(engine, 1) == FIRST + 1
    assert _increment(engine, 5) == FIRST + 6
    assert _increment(engine, 1) == FIRST + 7
    assert _stored(engine) == FIRST + 7
    assert _stored(engine, "other") == 7


def test_increment_of_missing_row_returns_none(engine: Engine) -> None:
    assert _increment(engine, 1) is None
    _seed(engine, FIRST)
    missing = sa.and_(counter.c.field_id == FIELD, counter.c.scope_key == "nope")
    assert _increment(engine, 1, missing) is None
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(counter)).scalar_one() == 2
    assert _stored(engine) == FIRST


def test_concurrent_increments_hand_out_distinct_contiguous_values(engine: Engine) -> None:
    _seed(engine, FIRST)
    per_thread = _run_concurrently(engine, 1, CALLS)
    reserved = [value - 1 for values in per_thread for value in values]
    assert len(reserved) == THREADS * CALLS
    assert len(set(reserved)) == len(reserved), "a value was handed out twice"
    assert set(reserved) == set(range(FIRST, FIRST + THREADS * CALLS))
    for values in per_thread:  # each caller sees its own values increase
        assert values == sorted(values)
    assert _stored(engine) == FIRST + THREADS * CALLS
    assert _stored(engine, "other") == 7


def test_concurrent_batch_increments_do_not_overlap(engine: Engine) -> None:
    n, calls = 5, 50
    _seed(engine, FIRST)
    per_thread = _run_concurrently(engine, n, calls)
    ranges = sorted((value - n, value - 1) for values in per_thread for value in values)
    assert len(ranges) == THREADS * calls
    for (_, prev_hi), (lo, _) in itertools.pairwise(ranges):
        assert lo == prev_hi + 1, "ranges overlap or leave a gap"
    assert ranges[0][0] == FIRST
    assert ranges[-1][1] == FIRST + THREADS * calls * n - 1
    assert _stored(engine) == FIRST + THREADS * calls * n
