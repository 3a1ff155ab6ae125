"""A database that was never initialised, or lost some system tables: every command says so in one
line with exit 2 (not a driver's `no such table`), and `db init` / `db upgrade` create them."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.db import create_engine
from autonumber.db.tables import lock_table, web_session_table
from autonumber.errors import SchemaMissing, SystemTablesMissing
from support import run_cli

LINE = "the database has no autonumber schema: run autonumber db init (or autonumber setup apply)"
COMMANDS = [
    ["field", "add", "Case", "Ticket__c", "--format", "T-{0000}"],
    ["field", "set", "Case", "CaseNumber", "--format", "{00000000}", "--start", "5"],
    ["field", "list"],
    ["records", "insert", "Case", "--data", '{"Subject": "x"}'],
    ["audit", "gaps", "Case.CaseNumber"],
    ["setup", "verify"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_a_command_on_an_empty_database_names_db_init(
    db_url: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli([*argv, "--db", db_url], capsys)
    assert code == 2, out
    assert out.strip().count("\n") == 0 and LINE in out, out
    engine = create_engine(db_url)
    try:
        assert sa.inspect(engine).get_table_names() == []  # nothing half-made
    finally:
        engine.dispose()


def test_connect_refuses_and_db_init_creates(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SchemaMissing, match="run autonumber db init"):
        autonumber.connect(db_url)
    code, out = run_cli(["db", "init", "--db", db_url], capsys)
    assert code == 0, out
    autonumber.connect(db_url).close()


def test_a_dropped_system_table_is_named_and_db_upgrade_recreates_it(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["db", "init", "--db", db_url], capsys)
    assert code == 0, out
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            lock_table.drop(conn)
            web_session_table.drop(conn)
    finally:
        engine.dispose()
    with pytest.raises(SystemTablesMissing) as refused:
        autonumber.connect(db_url)
    assert refused.value.tables == ("_System_Lock", "_System_WebSession")
    code, out = run_cli(["field", "list", "--db", db_url], capsys)
    assert code == 2 and out.strip().count("\n") == 0, out
    assert "autonumber's table(s) _System_Lock, _System_WebSession are missing" in out, out
    assert "run autonumber db upgrade to recreate them" in out, out
    code, out = run_cli(["db", "upgrade", "--db", db_url], capsys)
    assert code == 0 and "created table _System_WebSession" in out, out
    autonumber.connect(db_url).close()
