"""Migration 6 (`_System_Field.auto_number_shared_counter`): a database at schema version 5 with
numbers handed out gets the column by `autonumber db upgrade`, every stored rule keeps a counter of
its own (NULL), the numbers continue, and `field set --shared-counter` then works; on the servers
the re-created guard trigger covers the new column."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.cli import main
from autonumber.commands import setup
from autonumber.db import create_engine, mysql, postgresql
from autonumber.db.guard import install_guard
from autonumber.db.tables import AUTONUMBER_COLUMNS, schema_version_table, system_field
from autonumber.db.version import stamp
from autonumber.defaults import SCHEMA_VERSION
from autonumber.setup.upgrade import MIGRATIONS, current_version
from support import bootstrap_url

COLUMN = "auto_number_shared_counter"


def _cli(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def _at_version_5(url: str) -> None:
    """A current database set back to schema version 5 (release 0.4.0): without the column."""
    engine = create_engine(url)
    with engine.begin() as conn:
        table = conn.dialect.identifier_preparer.quote(system_field.name)
        conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {COLUMN}"))
        conn.execute(sa.delete(schema_version_table))
        for migration in MIGRATIONS:
            if migration.number <= 5:
                stamp(conn, migration.number, migration.name)
    engine.dispose()


def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(system_field.name)}
    finally:
        engine.dispose()


def test_a_version_5_database_gets_the_column_and_numbers_continue(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap_url(db_url)
    with autonumber.connect(db_url) as p:
        taken = [p.records.insert("Case", {"Subject": f"before {i}"})["CaseNumber"] for i in range(3)]
    _at_version_5(db_url)
    assert COLUMN not in _columns(db_url)
    engine = create_engine(db_url)
    assert current_version(engine) == 5
    with pytest.raises(Exception, match="older than this release"):  # refused until upgraded
        autonumber.connect(db_url)
    changes = setup.upgrade_schema(db_url)
    assert f"added column _System_Field.{COLUMN}" in changes, changes
    assert f"schema version 6: {MIGRATIONS[5].name}" in changes, changes
    assert current_version(engine) == SCHEMA_VERSION
    with engine.connect() as conn:
        shared = conn.execute(
            sa.select(system_field.c[COLUMN]).where(system_field.c.auto_number_format.is_not(None))
        ).scalars()
        assert set(shared) == {None}
    engine.dispose()
    assert setup.upgrade_schema(db_url) == []
    assert setup.verify_setup(db_url) == []
    with autonumber.connect(db_url) as p:
        assert p.records.insert("Case", {"Subject": "after"})["CaseNumber"] == f"{int(taken[-1]) + 1:08d}"
    assert _cli(["object", "add", "Ticket", "--field", "Note:text(20)", "--db", db_url]) == 0
    add = ["field", "add", "Ticket", "TicketNo", "--format", "T-{00000000}", "--shared-counter", "CC"]
    assert _cli([*add, "--db", db_url]) == 0, capsys.readouterr()
    join = ["field", "set", "Case", "CaseNumber", "--format", "{00000000}", "--shared-counter", "CC"]
    assert _cli([*join, "--db", db_url]) == 0, capsys.readouterr()
    with autonumber.connect(db_url) as p:  # the shared counter continues above Case's numbers
        assert p.records.insert("Ticket", {"Note": "after"})["TicketNo"] == f"T-{int(taken[-1]) + 2:08d}"
    assert setup.verify_setup(db_url) == []


def test_the_guard_trigger_covers_the_new_column_after_the_upgrade(
    server_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap_url(server_db_url)
    _at_version_5(server_db_url)
    engine = create_engine(server_db_url)
    older = tuple(c for c in AUTONUMBER_COLUMNS if c != COLUMN)
    with monkeypatch.context() as m, engine.begin() as conn:
        for module in (mysql, postgresql):  # the trigger release 0.4.0 installed
            m.setattr(module, "AUTONUMBER_COLUMNS", older)
        install_guard(conn)
    changes = setup.upgrade_schema(server_db_url)
    assert any(line.startswith("guard trigger") for line in changes), changes
    with pytest.raises(sa.exc.DBAPIError, match="autonumber spec apply"), engine.begin() as conn:
        conn.execute(
            sa.update(system_field).where(system_field.c.Id == "Case.CaseNumber").values({COLUMN: "X"})
        )
    engine.dispose()
