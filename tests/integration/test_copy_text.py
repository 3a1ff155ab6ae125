"""The import's COPY text on PostgreSQL (`delimited` with `_copy_text`) stores exactly what
psycopg's own row formatting stores, for any text, NULL, integer and datetime."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.copy import Copy, FileWriter

from autonumber.db.bulk import NotDelimitable, delimited
from autonumber.db.postgresql import _copy_text

SPECIAL = st.sampled_from(["\\", "\t", "\n", "\r", "\r\n", "\b", "\x0b", "\x0c", "\\N", ".", "é", "✓"])
TEXT = st.lists(
    SPECIAL | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
).map("".join)
STAMP = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
ZONE = st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))])
ROW = st.tuples(st.none() | TEXT, st.none() | st.integers(-(2**63), 2**63 - 1), STAMP, ZONE)


@pytest.fixture
def raw(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    url = sa.engine.make_url(db_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        for name in ("ours", "theirs"):
            conn.execute(
                f"CREATE TEMP TABLE {name} (i int, t text, n bigint, stamp timestamp, zoned timestamptz)"
            )
        yield conn


def _stored(conn: psycopg.Connection[Any], table: str, data: bytes) -> list[tuple[Any, ...]]:
    conn.execute(f"TRUNCATE {table}")
    with conn.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN") as copy:
        copy.write(data)
    return conn.execute(f"SELECT * FROM {table} ORDER BY i").fetchall()


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=1, max_size=8))
def test_delimited_copy_text_stores_what_psycopg_stores(
    raw: psycopg.Connection[Any], rows: list[Any]
) -> None:
    tuples = [
        (i, text, number, stamp.replace(tzinfo=None), stamp.replace(tzinfo=zone or UTC))
        for i, (text, number, stamp, zone) in enumerate(rows)
    ]
    theirs = io.BytesIO()
    with raw.cursor() as cursor, Copy(cursor, binary=False, writer=FileWriter(theirs)) as formatter:
        for values in tuples:
            formatter.write_row(values)
    columns = [list(column) for column in zip(*tuples, strict=True)]
    assert _stored(raw, "ours", delimited(columns, _copy_text)) == _stored(raw, "theirs", theirs.getvalue())


def test_nul_and_other_types_take_psycopgs_path() -> None:
    for value in ("a\x00b", 1.5, b"bytes", True):
        with pytest.raises(NotDelimitable):
            delimited([[value]], _copy_text)
