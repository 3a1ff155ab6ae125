"""A rolling deploy: a process of each earlier release (0.1.0, 0.2.0, 0.3.0; its code taken from git
into a temporary directory) keeps inserting Cases (global counter) and Contracts (per_prefix) while
this release's `db upgrade` runs. At its next write after the upgrade it either goes on writing
correct numbers or stops with the writer fence's error, never writing a counter key this release
misreads: afterwards every number it was given is stored once, verify is green, and this
release's Contracts go on from the last number of their prefix."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from upgrade_support import COUNTRIES, RELEASES, load

import autonumber
from autonumber.commands import setup
from autonumber.db import create_engine
from autonumber.db.fence import MARKER, SQLITE_FUNCTION
from autonumber.db.tables import system_object, system_record_type
from autonumber.defaults import SCHEMA_VERSION

COMMITS = {"0.1.0": "2bc4f5c", "0.2.0": "aff42aa", "0.3.0": "15c7baa"}
"""Each release's commit (CHANGELOG.md)."""
assert set(COMMITS) == set(RELEASES)
ROOT = Path(__file__).resolve().parents[2]
WAIT = 300.0
"""A safety net for a hung writer, never a timed assertion."""

WRITER = """
import sys
from pathlib import Path
import autonumber
assert autonumber.__file__.startswith(sys.argv[2]), autonumber.__file__  # the old release's code
stop, record_type, countries = Path(sys.argv[3]), sys.argv[4], sys.argv[5].split(",")
p = autonumber.connect(sys.argv[1])
try:
    accounts = [
        (code, p.records.insert("Account", {"Name": f"Acme {code}", "BillingCountryCode": code})["Id"])
        for code in countries
    ]
    i = 0
    while not stop.exists():
        code, account = accounts[i % len(accounts)]
        i += 1
        print("Case", p.records.insert("Case", {"Subject": "old release"})["CaseNumber"], flush=True)
        row = {"AccountId": account, "RecordTypeId": record_type, "Account_Country_Code__c": code}
        print("Contract", p.records.insert("Contract", row)["Contract_Number__c"], flush=True)
except Exception as exc:
    print("ERROR", type(exc).__name__, " ".join(str(exc).split()), flush=True)
    sys.exit(3)
finally:
    p.close()
"""


@pytest.fixture(scope="session")
def release_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each earlier release's `src` directory, from git (never this work tree), made once a run."""
    out = tmp_path_factory.mktemp("releases")
    sources: dict[str, Path] = {}
    for release, commit in COMMITS.items():
        if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", commit], check=False).returncode:
            pytest.skip(f"commit {commit} ({release}) is not in this clone's history")
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "src"], check=True, capture_output=True
        )
        (out / release).mkdir()
        subprocess.run(["tar", "-x", "-C", str(out / release)], input=archive.stdout, check=True)
        sources[release] = out / release / "src"
    return sources


class Writer:
    """The old release's process: its output lines arrive on a queue as they are printed."""

    def __init__(self, url: str, src: Path, stop: Path, record_type: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        argv = [sys.executable, "-c", WRITER, url, str(src), str(stop), record_type, ",".join(COUNTRIES)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.numbers: dict[str, list[str]] = {"Case": [], "Contract": []}
        self.error: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)  # the process closed its output

    def _next(self) -> str | None:
        line = self.lines.get(timeout=WAIT)
        if line is not None and not line.startswith("ERROR"):
            kind, value = line.split()
            self.numbers[kind].append(value)
        return line

    def take(self, n: int) -> None:
        """Wait until `n` more numbers were printed; an error or an exit fails the test."""
        for _ in range(n):
            line = self._next()
            assert line is not None and not line.startswith("ERROR"), line

    def stopped(self) -> None:
        """Wait for the process to stop on an error: every number it printed before is taken, and
        nothing comes after the error."""
        while True:
            line = self._next()
            assert line is not None, "the old release's process ended without an error"
            if line.startswith("ERROR"):
                self.error = line
                assert self.proc.wait(timeout=WAIT) == 3
                assert self.lines.get(timeout=WAIT) is None
                return


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


@pytest.fixture(params=RELEASES)
def writer(
    request: pytest.FixtureRequest, db_url: str, release_sources: dict[str, Path], tmp_path: Path
) -> Iterator[Writer]:
    release = str(request.param)
    load(release, db_url)
    w = Writer(db_url, release_sources[release], tmp_path / "stop", _contract_record_type(db_url))
    yield w
    if w.proc.poll() is None:
        w.proc.kill()
        w.proc.wait()


def _stored(p: autonumber.Platform, object_name: str, column: str) -> list[str]:
    table = sa.Table(object_name, sa.MetaData(), autoload_with=p.db)
    with p.db.connect() as conn:
        return [str(v) for v in conn.execute(sa.select(table.c[column])).scalars() if v is not None]


def _last_of_prefix(values: list[str], prefix: str) -> int:
    return max(int(v.rpartition("-")[2]) for v in values if v.rpartition("-")[0] == prefix)


def test_an_earlier_release_kept_running_stops_at_its_next_write(writer: Writer, db_url: str) -> None:
    writer.take(12)  # the old release is writing Cases and Contracts
    changes = setup.upgrade_schema(db_url)
    assert changes and changes[-1].startswith(f"schema version {SCHEMA_VERSION}")
    writer.stopped()  # its writes before the fence went up are taken, then it stops
    assert writer.error is not None
    assert MARKER in writer.error or SQLITE_FUNCTION in writer.error, writer.error

    with autonumber.connect(db_url) as p:
        for object_name, column in (("Case", "CaseNumber"), ("Contract", "Contract_Number__c")):
            stored = _stored(p, object_name, column)
            seen = writer.numbers[object_name]
            assert len(seen) == len(set(seen)) and set(seen) <= set(stored)  # none twice, none lost
            assert len(stored) == len(set(stored))
        case = p.records.insert("Case", {"Subject": "new release"})["CaseNumber"]
        assert int(case) == max(int(v) for v in _stored(p, "Case", "CaseNumber") if v != case) + 1
        record_type = _contract_record_type(db_url)
        for code in COUNTRIES:  # the per_prefix field goes on from each prefix's last number
            before = _stored(p, "Contract", "Contract_Number__c")
            account = p.records.insert("Account", {"Name": f"Acme {code}", "BillingCountryCode": code})
            row = {"AccountId": account["Id"], "RecordTypeId": record_type, "Account_Country_Code__c": code}
            number = p.records.insert("Contract", row)["Contract_Number__c"]
            prefix, _, counter = number.rpartition("-")
            assert int(counter) == _last_of_prefix(before, prefix) + 1, (number, sorted(before))
    assert setup.verify_setup(db_url) == []
