"""`testdb.restore_state`: a state is built once per key and backend in the run, and every later
copy holds the same tables, rows and sequence positions as the database it was built in."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

import testdb
from autonumber.db import create_engine

NOTES = sa.Table(
    "selftest_notes",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("body", sa.String(40), nullable=False),
)


@pytest.fixture
def own_url(db_url: str) -> Iterator[str]:
    """`db_url`, or on a server a database of this worker's own for these tests (`…_states`): a
    thread a timed-out test left behind may still write to the worker's database, and these tests
    count every build."""
    if make_url(db_url).get_backend_name() == "sqlite":
        yield db_url
        return
    worker = make_url(db_url)
    url = worker.set(database=f"{worker.database}_states").render_as_string(hide_password=False)
    testdb.ensure_database(url)
    testdb.manage(url)
    testdb.make_empty(url)
    yield url
    testdb.make_empty(url)


def _build(url: str, built: list[str]) -> None:
    built.append(url)
    engine = create_engine(url)
    try:
        NOTES.metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(NOTES), [{"body": f"note {i}"} for i in range(3)])
    finally:
        engine.dispose()


def _rows_and_next_id(url: str) -> tuple[list[Any], int]:
    """The rows, then the id the database gives the next row (the sequence position came along)."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            rows = [tuple(r) for r in conn.execute(sa.select(NOTES).order_by(NOTES.c.id))]
            next_id = conn.execute(sa.insert(NOTES).values(body="after")).inserted_primary_key
        assert next_id is not None
        return rows, int(next_id[0])
    finally:
        engine.dispose()


def _empty(url: str) -> None:
    if make_url(url).get_backend_name() == "sqlite":
        Path(make_url(url).database or "").unlink()
    else:
        testdb.make_empty(url)


def test_a_state_is_built_once_and_every_copy_has_its_rows_and_sequence(own_url: str) -> None:
    key = f"selftest_{uuid.uuid4().hex[:12]}"
    built: list[str] = []
    testdb.restore_state(own_url, key, lambda url: _build(url, built))
    first = _rows_and_next_id(own_url)
    assert first == ([(1, "note 0"), (2, "note 1"), (3, "note 2")], 4)
    for _ in range(2):
        _empty(own_url)
        testdb.restore_state(own_url, key, lambda url: _build(url, built))
        assert _rows_and_next_id(own_url) == first
    assert built == [own_url]


def test_a_database_that_is_not_empty_gets_build_itself(own_url: str) -> None:
    key = f"selftest_{uuid.uuid4().hex[:12]}"
    built: list[str] = []
    testdb.restore_state(own_url, key, lambda url: _build(url, built))
    testdb.restore_state(own_url, key, lambda url: _build(url, built))  # not empty: no copy over it
    rows, _ = _rows_and_next_id(own_url)
    assert built == [own_url, own_url] and len(rows) == 6
