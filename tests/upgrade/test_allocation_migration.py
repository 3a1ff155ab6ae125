"""Migration 3 (block allocation): `db upgrade` adds `_System_Field.auto_number_allocation`, `single`
on every existing rule, to a database of the last release (0.2.0) and to one at schema version 2;
after it `field set --allocation blocks:N` works and numbers continue without a repeat."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from upgrade_support import load

import autonumber
from autonumber.commands import setup
from autonumber.db import create_engine
from autonumber.db.tables import schema_version_table, system_field
from support import make_platform, number, run_cli

COLUMN = "auto_number_allocation"


def _allocations(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert COLUMN in {c["name"] for c in sa.inspect(conn).get_columns(system_field.name)}
            stmt = sa.select(system_field.c[COLUMN]).where(system_field.c.auto_number_format.is_not(None))
            return set(conn.execute(stmt).scalars())
    finally:
        engine.dispose()


def _back_to_version_2(url: str) -> None:
    """A database as schema version 2 left it: no allocation column, versions above 2 unrecorded."""
    make_platform(url).close()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            table = conn.dialect.identifier_preparer.quote(system_field.name)
            conn.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {COLUMN}"))
            conn.execute(sa.delete(schema_version_table).where(schema_version_table.c.version > 2))
    finally:
        engine.dispose()


@pytest.mark.parametrize("start", ["0.2.0", "version 2"])
def test_upgrade_adds_allocation_and_blocks_then_work(
    db_url: str, start: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if start == "0.2.0":
        assert load("0.2.0", db_url) > 0
    else:
        _back_to_version_2(db_url)
    changes = setup.upgrade_schema(db_url)
    assert f"added column _System_Field.{COLUMN}" in changes
    assert "schema version 3: block allocation: _System_Field.auto_number_allocation" in changes
    assert _allocations(db_url) == {"single"}
    assert setup.upgrade_schema(db_url) == []
    assert setup.verify_setup(db_url) == []

    with autonumber.connect(db_url) as p:
        before = number(p.records.insert("Case", {"Subject": "before"})["CaseNumber"])
    code, out = run_cli(
        [
            "field",
            "set",
            "Case",
            "CaseNumber",
            "--format",
            "{00000000}",
            "--allocation",
            "blocks:5",
            "--db",
            db_url,
        ],
        capsys,
    )
    assert code == 0, out
    with autonumber.connect(db_url) as p:
        after = [number(p.records.insert("Case", {"Subject": "after"})["CaseNumber"]) for _ in range(7)]
    assert after == list(range(before + 1, before + 8))
    assert _allocations(db_url) >= {"blocks:5"}
    assert setup.verify_setup(db_url) == []
