"""The writer fence (migration 8, db/fence.py): on every backend a session that declared no schema
version, or an older one, is refused any counter INSERT or UPDATE with a message naming the fix;
this release's connections (and a caller's, once the product writes on it) declare theirs; a
process of this release stops with SchemaUpgradedMeanwhile once a later release upgraded the
database; migration 8 brings a version 7 database to the fence, raised before the first step of
`db upgrade`, and `db upgrade` puts a dropped fence back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

import autonumber
from autonumber.commands import setup
from autonumber.db import create_engine, dialect_for
from autonumber.db.fence import MARKER, MESSAGE, SQLITE_FUNCTION, declare, drop_fence
from autonumber.db.tables import counter_table, schema_version_table
from autonumber.db.version import stamp
from autonumber.defaults import SCHEMA_VERSION
from autonumber.errors import SchemaUpgradedMeanwhile
from autonumber.progress import NullReporter
from autonumber.setup.upgrade import MIGRATIONS, current_version
from support import bootstrap_url

C = counter_table
FIELD = "Case.CaseNumber"
BUMP = sa.update(C).where(C.c.field_id == FIELD, C.c.scope_key == "").values(next_value=C.c.next_value + 1)
NEW_ROW = sa.insert(C).values(field_id=FIELD, scope_key="fence-test", next_value=1)


@pytest.fixture
def url(db_url: str) -> Iterator[str]:
    """The core pack on `db_url`, one Case numbered."""
    bootstrap_url(db_url)
    with autonumber.connect(db_url) as p:
        p.records.insert("Case", {"Subject": "before"})
    yield db_url


@pytest.fixture
def raw(url: str) -> Iterator[sa.Engine]:
    """An engine autonumber did not configure: its sessions declare nothing (another tool's, or a
    process of a release before the fence)."""
    engine = sa.create_engine(url, poolclass=NullPool)
    yield engine
    engine.dispose()


def _next_value(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            stmt = sa.select(C.c.next_value).where(C.c.field_id == FIELD, C.c.scope_key == "")
            return int(conn.execute(stmt).scalar_one())
    finally:
        engine.dispose()


def _refused(engine: sa.Engine, stmt: sa.Executable, declared: int | None = None) -> str:
    """The refusal of `stmt` on a session of `engine` (declaring `declared` first, when given)."""
    with pytest.raises(sa.exc.DBAPIError) as info, engine.begin() as conn:
        if declared is not None:
            dialect_for(conn).declare_on(conn, declared)
        conn.execute(stmt)
    return str(info.value.orig)


def _at_version_7(url: str) -> None:
    """A current database set back to schema version 7: no fence, version 8 unrecorded."""
    engine = create_engine(url)
    with engine.begin() as conn:
        drop_fence(conn)
        conn.execute(sa.delete(schema_version_table))
        for migration in MIGRATIONS[:7]:
            stamp(conn, migration.number, migration.name)
    engine.dispose()


def test_a_session_that_declared_nothing_is_refused(url: str, raw: sa.Engine) -> None:
    before = _next_value(url)
    for stmt in (BUMP, NEW_ROW):
        text = _refused(raw, stmt)
        if url.startswith("sqlite"):  # the connection lacks the function the trigger calls
            assert f"no such function: {SQLITE_FUNCTION}" in text, text
        else:
            assert text.count(MARKER) == 1, text
            assert f"declared schema version none, the database needs at least {SCHEMA_VERSION}" in text
            assert "stop it and start it on the upgraded release" in text
    assert _next_value(url) == before  # nothing written
    with raw.begin() as conn:  # the same tool, declaring this release's version, may write
        declare(conn)
        conn.execute(BUMP)
    assert _next_value(url) == before + 1
    with autonumber.connect(url) as p:  # and the product goes on after the skipped value
        assert int(p.records.insert("Case", {"Subject": "after"})["CaseNumber"]) == before + 1


def test_a_session_that_declared_an_older_version_is_refused(url: str, raw: sa.Engine) -> None:
    for stmt in (BUMP, NEW_ROW):
        text = _refused(raw, stmt, declared=SCHEMA_VERSION - 1)
        if url.startswith("sqlite"):
            assert MESSAGE in text, text
        else:
            assert f"declared schema version {SCHEMA_VERSION - 1}, the database needs" in text, text


def test_this_release_stops_once_a_later_release_upgraded_the_database(url: str) -> None:
    engine = create_engine(url)
    with autonumber.connect(url) as p, autonumber.connect(url, group_commit=False) as alone:
        p.records.insert("Case", {"Subject": "connected before"})
        alone.records.insert("Case", {"Subject": "connected before"})
        with engine.begin() as conn:  # what the later release's upgrade records last
            conn.execute(
                sa.insert(schema_version_table).values(version=SCHEMA_VERSION + 1, name="later", release="9")
            )
        for platform in (p, alone):
            with pytest.raises(SchemaUpgradedMeanwhile, match="restart it on the release that upgraded"):
                platform.records.insert("Case", {"Subject": "after the later upgrade"})
            with pytest.raises(SchemaUpgradedMeanwhile):
                platform.records.insert_many("Case", [{"Subject": "a"}, {"Subject": "b"}])
    engine.dispose()


def test_a_callers_own_connection_is_declared_by_the_product(url: str, raw: sa.Engine) -> None:
    before = _next_value(url)
    with autonumber.connect(url) as p:
        with raw.begin() as conn:  # a transaction of the caller's own engine
            got = p.records.insert("Case", {"Subject": "in the caller's transaction"}, conn)
        assert int(got["CaseNumber"]) == before
        with raw.begin() as conn:
            got = p.records.insert("Case", {"Subject": "again"}, conn)
        assert int(got["CaseNumber"]) == before + 1


def test_migration_8_brings_a_version_7_database_to_the_fence(url: str, raw: sa.Engine) -> None:
    _at_version_7(url)
    engine = create_engine(url)
    assert current_version(engine) == 7
    with raw.begin() as conn:  # no fence yet: the undeclared session writes
        conn.execute(BUMP)
    changes = setup.upgrade_schema(url)
    assert f"schema version 8: {MIGRATIONS[7].name}" in changes, changes
    assert current_version(engine) == SCHEMA_VERSION
    engine.dispose()
    text = _refused(raw, BUMP)
    assert MARKER in text or SQLITE_FUNCTION in text, text
    assert setup.upgrade_schema(url) == []  # a second run changes nothing
    assert setup.verify_setup(url) == []
    with autonumber.connect(url) as p:
        p.records.insert("Case", {"Subject": "after the upgrade"})


class WritesAtEachMigration(NullReporter):
    """Tries a counter write of a session declaring version 7 as each migration begins."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.refused: list[bool] = []

    def note(self, message: str) -> None:
        try:
            with self.engine.begin() as conn:
                dialect_for(conn).declare_on(conn, 7)
                conn.execute(BUMP)
            self.refused.append(False)
        except sa.exc.DBAPIError:
            self.refused.append(True)


def test_the_fence_is_up_before_the_first_migration_step(url: str, raw: sa.Engine) -> None:
    _at_version_7(url)
    before = _next_value(url)
    reporter = WritesAtEachMigration(raw)
    setup.upgrade_schema(url, reporter)
    assert reporter.refused == [True]  # migration 8 had not run its step yet
    assert _next_value(url) == before


def test_db_upgrade_puts_a_dropped_fence_back(url: str, raw: sa.Engine) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        drop_fence(conn)
    engine.dispose()
    with raw.begin() as conn:
        conn.execute(BUMP)
    changes = setup.upgrade_schema(url)
    assert any(line.startswith("writer fence ") for line in changes), changes
    text = _refused(raw, BUMP)
    assert MARKER in text or SQLITE_FUNCTION in text, text
