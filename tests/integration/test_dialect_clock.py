"""The database clock: UTC, aware, microseconds where the backend has them.

MariaDB samples `UTC_TIMESTAMP(6)` and PostgreSQL `clock_timestamp() AT TIME ZONE 'UTC'`, both with
microsecond resolution. SQLite's `strftime('%Y-%m-%d %H:%M:%f','now')` has only MILLISECOND
resolution (`%f` is SS.SSS), so on SQLite every sample's microsecond field is a multiple of 1000;
the test asserts exactly that instead of microseconds.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from autonumber.db import create_engine, dialect_for
from autonumber.db.schema import reconcile_system_schema
from autonumber.db.tables import counter_table

SAMPLES = 1000


def _samples(engine: Engine) -> tuple[datetime, list[datetime], datetime]:
    dialect = dialect_for(engine)
    with engine.connect() as conn:
        before = datetime.now(UTC)
        values = [dialect.utc_now(conn) for _ in range(SAMPLES)]
        after = datetime.now(UTC)
    return before, values, after


def test_clock_is_aware_utc_and_close_to_machine_time(engine: Engine) -> None:
    before, values, after = _samples(engine)
    slack = timedelta(seconds=3)
    for value in values:
        assert isinstance(value, datetime)
        assert value.tzinfo is not None
        assert value.utcoffset() == timedelta(0)
        assert value.tzinfo == UTC
        assert before - slack <= value <= after + slack, (before, value, after)


def test_clock_resolution(engine: Engine) -> None:
    _, values, _ = _samples(engine)
    sub_millisecond = [v for v in values if v.microsecond % 1000 != 0]
    if dialect_for(engine).name == "sqlite":
        # strftime('%f') is milliseconds: documented limitation of the embedded backend.
        assert sub_millisecond == []
        assert any(v.microsecond != 0 for v in values), "expected millisecond digits"
    else:
        assert len(sub_millisecond) > SAMPLES // 10, f"only {len(sub_millisecond)} sub-ms samples"


def test_clock_does_not_go_backwards(engine: Engine) -> None:
    _, values, _ = _samples(engine)
    backwards = [(a, b) for a, b in itertools.pairwise(values) if b < a]
    assert backwards == []
    assert values[-1] > values[0]


LOCAL_ZONE_CONNECT_ARGS: dict[str, dict[str, Any]] = {
    # What a server whose default time zone is not UTC gives every new session.
    "mysql": {"init_command": "SET time_zone = '+05:30'"},
    "postgresql": {"options": "-c timezone=Asia/Kolkata"},
    "sqlite": {},  # strftime('now') is always UTC
}


def test_stored_timestamps_are_utc_when_the_server_zone_is_not(db_url: str) -> None:
    """Column defaults (CURRENT_TIMESTAMP) and bound aware datetimes land in the table as UTC."""
    backend = make_url(db_url).get_backend_name()
    engine = create_engine(db_url, connect_args=LOCAL_ZONE_CONNECT_ARGS[backend])
    try:
        reconcile_system_schema(engine)
        dialect = dialect_for(engine)
        bound = datetime(2026, 4, 18, 12, 30, 15, 123000, tzinfo=UTC)
        with engine.begin() as conn:
            conn.execute(sa.insert(counter_table).values(field_id="defaults", scope_key="", next_value=1))
            conn.execute(
                sa.insert(counter_table).values(
                    field_id="bound",
                    scope_key="",
                    next_value=1,
                    created_date=bound,
                    last_modified_date=bound,
                )
            )
            now = dialect.utc_now(conn)
        with engine.connect() as conn:
            rows = {
                row.field_id: row
                for row in conn.execute(sa.select(counter_table.c.field_id, counter_table.c.created_date))
            }
    finally:
        engine.dispose()
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=3)
    default = rows["defaults"].created_date.replace(tzinfo=UTC)
    assert abs(default - now) < timedelta(seconds=3), (default, now)
    assert rows["bound"].created_date.replace(tzinfo=UTC) == bound
