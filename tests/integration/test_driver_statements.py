"""Statements run on the driver's cursor (db/driver.py, SQLite's numbered insert): bound as
SQLAlchemy binds them, their errors raised as SQLAlchemy raises them, and a numbered insert that
fails leaves the counter and the table as they were."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from engine_support import counter_rows, make_platform, set_next_value
from sqlalchemy.dialects import postgresql

from autonumber.db import create_engine
from autonumber.db.driver import DriverStatement, execute, execute_batch, execute_rows, watched
from autonumber.db.mysql import batches_here, takes_batches

META = sa.MetaData()
THINGS = sa.Table(
    "things",
    META,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(20), unique=True),
    sa.Column("at", sa.DateTime),
)


@pytest.fixture
def engine(tmp_path: Path) -> sa.Engine:
    db = sa.create_engine(f"sqlite:///{tmp_path / 'driver.db'}")
    META.create_all(db)
    return db


def test_parameters_take_the_statements_own_values_and_sqlalchemys_type_processing(engine: sa.Engine) -> None:
    at = datetime(2026, 12, 3, 4, 5, 6, 789000, tzinfo=UTC)
    name, stamp = sa.func.upper(sa.bindparam("n")), sa.bindparam("at", type_=sa.DateTime)
    stmt = sa.insert(THINGS).values(name=name, at=stamp)
    insert = DriverStatement(stmt, engine.dialect)
    args = insert.args({"n": "a", "at": at})
    assert args == ("a", "2026-12-03 04:05:06.789000")  # the DateTime bound as SQLAlchemy's SQLite stores it
    with engine.begin() as conn:
        ran = insert.run(conn, {"n": "a", "at": at})
        assert (ran.rows, ran.rowcount) == ([], 1)
        stored = conn.execute(sa.select(THINGS.c.name, THINGS.c.at)).one()
    assert stored == ("A", at.replace(tzinfo=None))


def test_a_named_paramstyle_gets_a_mapping() -> None:
    stmt = sa.select(sa.literal_column("1")).where(sa.bindparam("x", type_=sa.Integer) > 0)
    assert DriverStatement(stmt, postgresql.psycopg.dialect())  # type: ignore[no-untyped-call].args({"x": 5}) == {"x": 5, "param_1": 0}


def test_one_row_and_many_rows(engine: sa.Engine) -> None:
    sql = "INSERT INTO things (name) VALUES (?)"
    with engine.begin() as conn:
        execute_rows(conn, sql, [("one",)])
        execute_rows(conn, sql, [("two",), ("three",)])
        assert execute(conn, "SELECT name FROM things ORDER BY id", ()).rows == [
            ("one",),
            ("two",),
            ("three",),
        ]


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(engine: sa.Engine) -> None:
    sql = "INSERT INTO things (name) VALUES (?)"
    with pytest.raises(sa.exc.IntegrityError) as raised, engine.begin() as conn:
        execute(conn, sql, ("same",))
        execute(conn, sql, ("same",))
    assert isinstance(raised.value.orig, sqlite3.IntegrityError)
    assert raised.value.statement == sql and raised.value.params == ("same",)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(THINGS)).scalar_one() == 0  # rolled back
    with pytest.raises(sa.exc.OperationalError), engine.begin() as conn:
        execute(conn, "SELECT nothing FROM nowhere", ())


def test_a_numbered_insert_that_collides_is_written_again_above_the_stored_value(db_url: str) -> None:
    """A counter moved behind a stored value (admin surgery): the numbered INSERT is refused, its
    increment rolls back with it, and the write goes again above the stored value (docs/engine.md,
    "Values stored behind the counter's back"): one row more, the counter one past it."""
    p = make_platform(db_url, poll_interval=3600.0)
    try:
        first = p.records.insert("Case", {"Subject": "a"})
        set_next_value(p, "Case.CaseNumber", int(first["CaseNumber"]))
        second = p.records.insert("Case", {"Subject": "b"})
        assert int(second["CaseNumber"]) == int(first["CaseNumber"]) + 1
        assert p.records.count("Case") == 2
        assert counter_rows(p, "Case.CaseNumber") == {"": int(first["CaseNumber"]) + 2}
    finally:
        p.close()


def test_a_row_in_a_callers_transaction_goes_on_the_driver_unless_its_statements_are_watched(
    db_url: str,
) -> None:
    """The caller's INSERT of one row runs on the driver's cursor, stored as SQLAlchemy would store
    it; a listener on the caller's engine (tracing, logging) still sees it, through SQLAlchemy."""
    p = make_platform(db_url, poll_interval=3600.0)
    seen: list[str] = []

    def watch(conn: sa.Connection, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement.split()[0].upper())

    try:
        with p.begin() as conn:
            quiet = p.records.insert("Case", {"Subject": "quiet"}, conn)
        assert p.records.get("Case", quiet["Id"]) == quiet
        sa.event.listen(p.db, "before_cursor_execute", watch)
        try:
            with p.begin() as conn:
                watched = p.records.insert("Case", {"Subject": "watched"}, conn)
        finally:
            sa.event.remove(p.db, "before_cursor_execute", watch)
        assert "INSERT" in seen
        if p.db.dialect.name == "sqlite":  # the record's and the reservation's savepoints too
            assert seen == ["SAVEPOINT", "SAVEPOINT", "UPDATE", "RELEASE", "INSERT", "RELEASE"], seen
        assert p.records.get("Case", watched["Id"]) == watched
        assert datetime.fromisoformat(watched["CreatedDate"]) >= datetime.fromisoformat(quiet["CreatedDate"])
    finally:
        p.close()


@pytest.mark.parametrize("db_url", ["mysql"], indirect=True)
def test_a_batch_gives_each_statements_result_and_stops_at_a_failure(db_url: str) -> None:
    """Several statements in one text (MariaDB, on a pool opened with `statement_batches`): every
    result in order; a failing statement is raised as SQLAlchemy raises it, and the server runs
    nothing after it; only the pool that asked for batches takes them."""
    batches, plain = create_engine(db_url, statement_batches=True), create_engine(db_url)
    try:
        with batches.begin() as conn:
            assert takes_batches(conn) and batches_here(conn)  # and this server is no Galera node
            conn.exec_driver_sql("CREATE TEMPORARY TABLE batched (n INT PRIMARY KEY)")
            ran = execute_batch(
                conn,
                "INSERT INTO batched VALUES (%(a)s), (%(b)s); SELECT n FROM batched ORDER BY n",
                {"a": 1, "b": 2},
            )
            assert [(r.rowcount, r.rows) for r in ran] == [(2, []), (2, [(1,), (2,)])]
            fails = "INSERT INTO batched VALUES (1)"
            with pytest.raises(sa.exc.IntegrityError) as raised:
                execute_batch(conn, f"SELECT 7; {fails}; INSERT INTO batched VALUES (3)", {})
            assert raised.value.statement == f"SELECT 7; {fails}; INSERT INTO batched VALUES (3)"
            assert execute(conn, "SELECT n FROM batched ORDER BY n", {}).rows == [(1,), (2,)]  # not 3
        with plain.connect() as conn:
            assert not takes_batches(conn) and not batches_here(conn)
            with pytest.raises(sa.exc.ProgrammingError):
                conn.exec_driver_sql("SELECT 1; SELECT 2")
    finally:
        batches.dispose()
        plain.dispose()


def test_the_sqlalchemy_integrations_own_listener_does_not_count_as_watching(db_url: str) -> None:
    """Importing autonumber's SQLAlchemy integration puts a `before_execute` listener on every
    engine; it has nothing to say about the rows autonumber writes, so they still go on the
    driver. A listener of the caller's own still sends them through SQLAlchemy."""
    import autonumber.integrations.sqlalchemy  # noqa: F401  (registers its listener)

    p = make_platform(db_url, poll_interval=3600.0)

    def mine(*args: object) -> None:
        pass

    try:
        with p.begin() as conn:
            assert not watched(conn)
        sa.event.listen(p.db, "after_cursor_execute", mine)
        try:
            with p.begin() as conn:
                assert watched(conn)
        finally:
            sa.event.remove(p.db, "after_cursor_execute", mine)
        with p.begin() as conn:  # a listener on the one connection counts too
            sa.event.listen(conn, "before_cursor_execute", mine)
            assert watched(conn)
    finally:
        p.close()


def test_a_listener_on_every_engine_counts_as_watching(engine: sa.Engine) -> None:
    """A tracer registered on the Engine class hears every engine's statements: a connection
    without listeners of its own is asked through its engine's collections."""

    def tracer(*args: object) -> None:
        pass

    with engine.connect() as conn:
        assert not watched(conn)
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", tracer)
    try:
        with engine.connect() as conn:
            assert watched(conn)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", tracer)
    with engine.connect() as conn:
        assert not watched(conn)
