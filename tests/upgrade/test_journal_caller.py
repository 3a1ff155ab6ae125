"""Migration 4: the reservation journal's `caller` column. A 0.2.0 database upgraded by `db upgrade`
gets it, and a database at schema 2 (0.3.0: the column missing, version 2 recorded) gets it from
migration 4 alone; then every journal line names the application's label, and the gap audit shows
who reserved each gap."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from upgrade_support import load

import autonumber
from autonumber.audit import audit_gaps
from autonumber.commands import setup
from autonumber.db import create_engine
from autonumber.db.tables import reservation_journal, schema_version_table
from autonumber.db.version import stamp
from autonumber.defaults import SCHEMA_VERSION
from support import bootstrap_url

J = reservation_journal


@pytest.fixture
def at_version_3(db_url: str) -> Iterator[str]:
    """A database at schema version 3 (block allocation): no `caller` column on the journal."""
    bootstrap_url(db_url)
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.delete(schema_version_table))
            stamp(conn, 3, "block allocation: _System_Field.auto_number_allocation")
            quoted = conn.dialect.identifier_preparer.quote
            conn.execute(sa.text(f"ALTER TABLE {quoted(J.name)} DROP COLUMN {quoted('caller')}"))
    finally:
        engine.dispose()
    yield db_url


def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(J.name)}
    finally:
        engine.dispose()


def _label_is_kept_and_shown(url: str) -> None:
    """A number handed out and never stored is a gap the audit says who reserved."""
    process = f"{socket.gethostname()[:80]}:{os.getpid()}"
    with autonumber.connect(url, caller="billing-api") as p:
        p.records.insert("Case", {"Subject": "kept"})
        lost = p.engine.assign_one("Case.CaseNumber", {"Subject": "never stored"})
        p.records.insert("Case", {"Subject": "kept"})
        with p.db.connect() as conn:
            callers = set(conn.execute(sa.select(J.c.caller).where(J.c.caller.is_not(None))).scalars())
        assert callers == {"billing-api"}
        [gap] = audit_gaps(p, "Case.CaseNumber").gaps
    assert gap.numbers == lost and gap.reason.startswith("reserved by a running process")
    assert gap.caller == f"billing-api ({process})"


def test_migration_4_alone_adds_the_caller_column(at_version_3: str) -> None:
    assert "caller" not in _columns(at_version_3)
    changes = setup.upgrade_schema(at_version_3)
    assert changes[0].startswith("writer fence ")  # up before the first step (test_writer_fence.py)
    assert changes[1:3] == [f"added column {J.name}.caller", f"schema version {CALLER}: {_name()}"]
    assert changes[-1].startswith(f"schema version {SCHEMA_VERSION}: ")
    assert "caller" in _columns(at_version_3)
    assert setup.upgrade_schema(at_version_3) == []  # a second run is a no-op
    _label_is_kept_and_shown(at_version_3)


def test_a_0_2_0_database_upgraded_names_the_caller(db_url: str) -> None:
    assert load("0.2.0", db_url) > 0
    changes = setup.upgrade_schema(db_url)
    assert f"schema version {CALLER}: {_name()}" in changes
    assert "caller" in _columns(db_url)
    _label_is_kept_and_shown(db_url)


def test_without_a_label_the_process_is_named(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTONUMBER_CALLER", raising=False)
    bootstrap_url(db_url)
    with autonumber.connect(db_url) as p:
        p.engine.assign_one("Case.CaseNumber", {"Subject": "never stored"})
        p.records.insert("Case", {"Subject": "kept"})
        [gap] = audit_gaps(p, "Case.CaseNumber").gaps
    assert gap.caller == f"{socket.gethostname()[:80]}:{os.getpid()}"


CALLER = 4
"""The migration this file tests."""


def _name() -> str:
    from autonumber.setup.upgrade import MIGRATIONS

    return next(m.name for m in MIGRATIONS if m.number == CALLER)
