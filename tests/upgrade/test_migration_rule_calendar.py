"""Migration 5 (the fiscal-year and date-field rule columns): a 0.2.0 database upgraded by
`autonumber db upgrade` gets them with every stored rule at the calendar year and the clock, and
`field set --fiscal-year-start` then works; on a database at version 2 with the guard trigger, the
re-created trigger covers them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from upgrade_support import load

import autonumber
from autonumber.cli import main
from autonumber.commands import setup
from autonumber.db import create_engine, mysql, postgresql
from autonumber.db.guard import install_guard
from autonumber.db.tables import AUTONUMBER_COLUMNS, schema_version_table, system_field
from autonumber.db.version import stamp
from autonumber.setup.upgrade import MIGRATIONS, RULE_CALENDAR_COLUMNS, current_version
from support import bootstrap_url

COLUMN = "auto_number_fiscal_year_start"


def _cli(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def _columns(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(system_field.name)}
    finally:
        engine.dispose()


def test_a_020_database_gets_the_fiscal_year_column(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert load("0.2.0", db_url) > 0
    assert COLUMN not in _columns(db_url)
    changes = setup.upgrade_schema(db_url)
    for name in RULE_CALENDAR_COLUMNS:
        assert f"added column _System_Field.{name}" in changes
        assert name in _columns(db_url)
    engine = create_engine(db_url)
    with engine.connect() as conn:
        starts = conn.execute(
            sa.select(system_field.c[COLUMN]).where(system_field.c.auto_number_format.is_not(None))
        ).scalars()
        assert set(starts) == {1}
    engine.dispose()
    assert setup.upgrade_schema(db_url) == []
    argv = ["field", "set", "Case", "CaseNumber", "--format", "CS/{FYYYY}/{00000}", "--scope", "per_prefix"]
    assert _cli([*argv, "--fiscal-year-start", "4", "--db", db_url]) == 0, capsys.readouterr()
    with autonumber.connect(db_url) as p:
        assert p.engine.rule("Case.CaseNumber").fiscal_year_start == 4
        now = datetime.now(UTC)
        year = now.year + (now.month >= 4)
        assert p.records.insert("Case", {"Subject": "x"})["CaseNumber"] == f"CS/{year}/00001"
    assert setup.verify_setup(db_url) == []


def _at_version_2(url: str) -> None:
    """A current database set back to schema version 2: without migration 5's columns."""
    engine = create_engine(url)
    with engine.begin() as conn:
        table = conn.dialect.identifier_preparer.quote(system_field.name)
        for name in RULE_CALENDAR_COLUMNS:
            conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {name}"))
        conn.execute(sa.delete(schema_version_table))
        for migration in MIGRATIONS:
            if migration.number <= 2:
                stamp(conn, migration.number, migration.name)
    engine.dispose()


def test_the_guard_trigger_covers_the_new_column_after_the_upgrade(
    server_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap_url(server_db_url)
    _at_version_2(server_db_url)
    engine = create_engine(server_db_url)
    older = tuple(c for c in AUTONUMBER_COLUMNS if c not in RULE_CALENDAR_COLUMNS)
    with monkeypatch.context() as m, engine.begin() as conn:
        for module in (mysql, postgresql):  # the trigger an older release installed
            m.setattr(module, "AUTONUMBER_COLUMNS", older)
        install_guard(conn)
    assert current_version(engine) == 2
    changes = setup.upgrade_schema(server_db_url)
    assert any(line.startswith("guard trigger") for line in changes), changes
    assert current_version(engine) >= 4
    with pytest.raises(sa.exc.DBAPIError, match="autonumber spec apply"), engine.begin() as conn:
        conn.execute(
            sa.update(system_field).where(system_field.c.Id == "Case.CaseNumber").values({COLUMN: 7})
        )
    engine.dispose()
