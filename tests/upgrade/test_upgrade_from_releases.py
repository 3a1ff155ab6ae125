"""A database made by each earlier release, on each backend, upgraded by `autonumber db upgrade`:
refused with one line before, then verify green with the UNIQUE index, numbers continuing in every
scope, a raw duplicate refused, an idempotent second run, and a killed run that resumes."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from upgrade_support import COUNTRIES, RELEASES, SCHEMA_OF, backend_of, load, numbers, today

import autonumber
from autonumber.cli import main
from autonumber.commands import setup
from autonumber.db import create_engine
from autonumber.db.tables import idempotency_table, system_object, system_record_type
from autonumber.defaults import SCHEMA_VERSION
from autonumber.errors import SchemaTooOld
from autonumber.setup.upgrade import current_version


@pytest.fixture(params=RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def old_db(release: str, db_url: str) -> Iterator[str]:
    """`db_url` holding the release's database."""
    assert load(release, db_url) > 0, "the fixture's per_prefix day was not found"
    yield db_url


def _cli(argv: list[str]) -> int | str | None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def _contract_record_type(url: str) -> str:
    engine = create_engine(url)
    r, o = system_record_type, system_object
    stmt = (
        sa.select(r.c.Id)
        .join(o, o.c.Id == r.c.ObjectId)
        .where(o.c.ApiName == "Contract", r.c.RecordTypeCode.is_not(None))
        .order_by(r.c.Id)
    )
    try:
        with engine.connect() as conn:
            return str(conn.execute(stmt).scalars().first())
    finally:
        engine.dispose()


def test_before_the_upgrade_one_line_and_exit_2(
    release: str, old_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SchemaTooOld) as info:
        autonumber.connect(old_db)
    line = str(info.value)
    assert "\n" not in line
    assert f"schema version {SCHEMA_OF[release]} is older than this release's {SCHEMA_VERSION}" in line
    assert line.endswith("run autonumber db upgrade")
    capsys.readouterr()
    for argv in (["setup", "verify"], ["records", "insert", "Case", "--data", '{"Subject": "x"}']):
        assert _cli([*argv, "--db", old_db]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and line in err, err


@pytest.mark.slow
def test_upgrade_then_verify_numbers_duplicates_and_a_second_run(release: str, old_db: str) -> None:
    backend = backend_of(old_db)
    old = numbers(release, backend)
    changes = setup.upgrade_schema(old_db)
    assert changes[-1].startswith(f"schema version {SCHEMA_VERSION}:")
    if release == "0.1.0":  # the first release had no index: the upgrade makes them
        assert any(line.startswith("unique index ux_Case_CaseNumber") for line in changes)

    assert setup.verify_setup(old_db) == []
    assert setup.upgrade_schema(old_db) == []  # a second run is a no-op

    rt = _contract_record_type(old_db)
    with autonumber.connect(old_db) as p:
        case = p.records.insert("Case", {"Subject": "after the upgrade"})
        assert int(case["CaseNumber"]) == max(int(n) for n in old["Case"]) + 1
        for code, previous in zip(COUNTRIES, old["Contract"], strict=True):
            account = p.records.insert("Account", {"Name": f"Acme {code}", "BillingCountryCode": code})
            contract = p.records.insert(
                "Contract", {"AccountId": account["Id"], "RecordTypeId": rt, "Account_Country_Code__c": code}
            )
            prefix, _, counter = previous.rpartition("-")
            moved = prefix[: -len(today())] + today()  # the fixture's day, moved to today by load()
            assert contract["Contract_Number__c"] == f"{moved}-{int(counter) + 1:02d}", previous

        table = sa.Table("Case", sa.MetaData(), autoload_with=p.db)
        with pytest.raises(sa.exc.IntegrityError), p.db.begin() as conn:
            conn.execute(sa.insert(table).values(Id=uuid.uuid4().hex[:18], CaseNumber=old["Case"][0]))
        keys = ["order-CaseKey", "order-casekey", "order-ÇaseKey", "order-CaseKey "]
        with p.db.begin() as conn:  # migration 2: distinct keys stay distinct on every backend
            conn.execute(
                sa.insert(idempotency_table),
                [
                    {"idempotency_key": k, "object_name": "Case", "request_digest": "d", "record_ids": "[]"}
                    for k in keys
                ],
            )
    assert setup.verify_setup(old_db) == []


KILL_AFTER_ONE_INDEX = """
import os, sys
from contextlib import contextmanager
from autonumber.commands import setup
from autonumber.progress import NullReporter

class KillAfterFirstIndex(NullReporter):
    @contextmanager
    def task(self, description, total):
        def advance(n):
            os._exit(9)  # a hard kill, lock held, right after the first index
        yield advance

setup.upgrade_schema(sys.argv[1], KillAfterFirstIndex())
"""


@pytest.mark.slow
@pytest.mark.parametrize(  # the releases whose upgrade builds indexes (migration 1), where it is killed
    "release", [r for r in RELEASES if SCHEMA_OF[r] == 0], indirect=True
)
def test_a_killed_upgrade_resumes(release: str, old_db: str, tmp_path: Path) -> None:
    script = tmp_path / "kill.py"
    script.write_text(KILL_AFTER_ONE_INDEX)
    done = subprocess.run([sys.executable, str(script), old_db], check=False)
    assert done.returncode == 9
    engine = create_engine(old_db)
    try:
        assert current_version(engine) == 0  # not stamped: the migration did not finish
    finally:
        engine.dispose()
    assert _cli(["db", "upgrade", "--db", old_db]) in (0, None)
    assert setup.verify_setup(old_db) == []
    assert setup.upgrade_schema(old_db) == []
