"""The optional database guard (docs/changing-rules.md): `setup apply --with-guard-trigger` on MariaDB and
PostgreSQL refuses raw rule edits while the applier's own writes pass; SQLite relies on quarantine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import testdb
from autonumber.cli import main
from autonumber.db import create_engine
from autonumber.db.guard import TRIGGER
from autonumber.db.tables import system_field
from autonumber.rules.store import RuleSpec, store_rule
from autonumber.setup.apply import apply
from autonumber.setup.demo import fill_legacy
from autonumber.setup.generate import default_spec
from autonumber.specapply import apply_spec

ROOT = Path(__file__).resolve().parents[2]
ROLLBACK = ROOT / "data-specs/2026-04-19-autonumber-v2-rollback.md"
FIELD = "Case.CaseNumber"
NEW = "CS-{00000000}"


@pytest.fixture
def guarded(server_db_url: str, capsys: pytest.CaptureFixture[str]) -> Iterator[Engine]:
    """A demo database cut over with the guard trigger: made once per backend in the run, copied
    for each test (tests/testdb/)."""

    def build(url: str) -> None:
        demo = create_engine(url)
        fill_legacy(demo, default_spec(), 10)
        demo.dispose()
        with pytest.raises(SystemExit) as info:
            main(["setup", "apply", "--db", url, "--quiet", "--with-guard-trigger"])
        assert info.value.code == 0, capsys.readouterr().err
        assert f"guard trigger {TRIGGER} installed" in capsys.readouterr().out

    testdb.restore_state(server_db_url, "guarded_cut_over", build)
    engine = create_engine(server_db_url)
    yield engine
    engine.dispose()


def raw_update(engine: Engine, **values: object) -> None:
    with engine.begin() as conn:
        conn.execute(sa.update(system_field).where(system_field.c.Id == FIELD).values(**values))


def stored_format(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(
            conn.execute(
                sa.select(system_field.c.auto_number_format).where(system_field.c.Id == FIELD)
            ).scalar_one()
        )


def test_raw_update_of_a_rule_column_is_refused_by_the_database(guarded: Engine) -> None:
    for values in (
        {"auto_number_format": "garbage {0"},
        {"auto_number_start": 5},
        {"auto_number_token_refs": "[]"},
    ):
        with pytest.raises(sa.exc.DBAPIError, match="autonumber spec apply"):
            raw_update(guarded, **values)
    assert stored_format(guarded) == "{00000000}"
    raw_update(guarded, Label="Case number")  # other columns stay editable


def test_store_rule_and_field_set_pass_the_guard(
    guarded: Engine, server_db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with guarded.begin() as conn:
        store_rule(conn, RuleSpec("Case", "CaseNumber", NEW))
    assert stored_format(guarded) == NEW
    with pytest.raises(SystemExit) as info:
        main(["field", "set", "Case", "CaseNumber", "--format", "{00000000}", "--db", server_db_url])
    assert info.value.code == 0, capsys.readouterr().err
    assert stored_format(guarded) == "{00000000}"


def test_authorization_ends_with_the_applier_block(guarded: Engine) -> None:
    with pytest.raises(sa.exc.DBAPIError, match="autonumber spec apply"), guarded.begin() as conn:
        store_rule(conn, RuleSpec("Case", "CaseNumber", NEW))
        conn.execute(
            sa.update(system_field).where(system_field.c.Id == FIELD).values(auto_number_format="garbage {0")
        )
    assert stored_format(guarded) == "{00000000}"  # the whole transaction rolled back


def trigger_exists(engine: Engine) -> bool:
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            stmt = sa.text("SELECT count(*) FROM pg_trigger WHERE tgname = :n")
        else:
            stmt = sa.text(
                "SELECT count(*) FROM information_schema.triggers WHERE trigger_name = :n "
                "AND trigger_schema = DATABASE()"
            )
        return bool(conn.execute(stmt, {"n": TRIGGER}).scalar_one())


@pytest.mark.slow  # a rollback spec and a full cut-over again: minutes on a loaded server
def test_rollback_drops_the_trigger_with_the_columns(guarded: Engine, tmp_path: Path) -> None:
    assert trigger_exists(guarded)
    text = ROLLBACK.read_text().replace("status: draft-rollback", "status: pending-staging")
    text = text.replace("incident_ticket:\n", "incident_ticket: INC-1\n").replace(
        "approvals: []", 'approvals: [{"name": "a", "role": "engineer"}, {"name": "b", "role": "sre"}]'
    )
    spec = tmp_path / "rollback.md"
    spec.write_text(text)
    assert apply_spec(guarded, spec, "staging").outcome == "applied"
    assert not trigger_exists(guarded)
    raw_update(guarded, Label="after rollback")  # _System_Field is writable again
    apply(guarded, default_spec())  # and the cut-over applies again


def test_sqlite_relies_on_quarantine_alone(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["setup", "apply", "--db", sqlite_url, "--quiet", "--with-guard-trigger"])
    assert info.value.code == 2
    assert "relies on quarantine alone" in capsys.readouterr().err
    engine = sa.create_engine(sqlite_url)
    assert "_System_Field" not in sa.inspect(engine).get_table_names()  # refused before any apply
    engine.dispose()
