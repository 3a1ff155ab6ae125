"""The schema version: a fresh database is created at this release's, a newer one is refused with
one line on every path, and verify reports an autonumber column that lost its UNIQUE index."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import autonumber
from autonumber.cli import main
from autonumber.commands import setup
from autonumber.db import create_engine
from autonumber.db.tables import schema_version_table
from autonumber.defaults import SCHEMA_VERSION
from autonumber.errors import SchemaTooNew
from autonumber.progress import NullReporter
from autonumber.setup.upgrade import current_version


def _cli(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def test_db_init_creates_the_current_version_and_a_second_run_changes_nothing(db_url: str) -> None:
    assert _cli(["db", "init", "--db", db_url]) in (0, None)
    engine = create_engine(db_url)
    try:
        assert current_version(engine) == SCHEMA_VERSION
    finally:
        engine.dispose()
    assert setup.upgrade_schema(db_url) == []
    autonumber.connect(db_url).close()


def test_a_newer_schema_is_refused_with_one_line(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    setup.upgrade_schema(db_url)
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(schema_version_table).values(version=SCHEMA_VERSION + 1, name="later", release="9")
        )
    engine.dispose()
    with pytest.raises(SchemaTooNew) as info:
        autonumber.connect(db_url)
    assert f"schema version {SCHEMA_VERSION + 1} is newer than this release's {SCHEMA_VERSION}" in str(
        info.value
    )
    assert "refusing to write" in str(info.value)
    capsys.readouterr()
    commands = (
        ["db", "upgrade"],
        ["setup", "verify"],
        ["records", "insert", "Case", "--data", "{}"],
        ["serve", "--port", "1"],  # refuses to start: the check runs before it listens
    )
    for argv in commands:
        assert _cli([*argv, "--db", db_url]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "refusing to write" in err, (argv, err)


@pytest.mark.slow
def test_verify_reports_an_autonumber_column_without_its_unique_index(db_url: str) -> None:
    setup.apply_setup(db_url, NullReporter())
    assert setup.verify_setup(db_url) == []
    engine = create_engine(db_url)
    try:
        table = sa.Table("Case", sa.MetaData(), autoload_with=engine)
        index = next(i for i in table.indexes if [c.name for c in i.columns] == ["CaseNumber"])
        with engine.begin() as conn:
            index.drop(conn)
    finally:
        engine.dispose()
    found = setup.verify_setup(db_url)
    assert [f.code for f in found] == ["V7"]
    assert "Case.CaseNumber: column Case.CaseNumber has no UNIQUE index" in found[0].message
    assert setup.upgrade_schema(db_url) == ["unique index ux_Case_CaseNumber on Case.CaseNumber"]
    assert setup.verify_setup(db_url) == []
    assert setup.upgrade_schema(db_url) == []  # nothing left to put back
