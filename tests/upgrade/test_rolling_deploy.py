"""A rolling deploy: a process running the previous release's code (0.2.0, commit aff42aa, taken
from git into a temporary directory) keeps inserting Cases while this release's `db upgrade` runs.
It keeps working; every number it was given is stored once, none is lost, none is doubled."""

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
from upgrade_support import load

import autonumber
from autonumber.commands import setup
from autonumber.db.version import SCHEMA_VERSION

PREVIOUS = "aff42aa"
ROOT = Path(__file__).resolve().parents[2]
WAIT = 300.0
"""A safety net for a hung writer, never a timed assertion."""

WRITER = """
import sys
from pathlib import Path
import autonumber
assert autonumber.__file__.startswith(sys.argv[2]), autonumber.__file__  # the old release's code
stop = Path(sys.argv[3])
p = autonumber.connect(sys.argv[1])
try:
    while not stop.exists():
        print(p.records.insert("Case", {"Subject": "old release"})["CaseNumber"], flush=True)
except Exception as exc:
    print(f"ERROR {type(exc).__name__}: {exc}", flush=True)
    sys.exit(3)
finally:
    p.close()
"""


@pytest.fixture
def previous_release(tmp_path: Path) -> Path:
    """The previous release's `src` directory, from git (never this work tree)."""
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", PREVIOUS], check=False).returncode:
        pytest.skip(f"commit {PREVIOUS} (0.2.0) is not in this clone's history")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PREVIOUS, "src"], check=True, capture_output=True
    )
    out = tmp_path / "previous"
    out.mkdir()
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"


class Writer:
    """The old release's process: its output lines arrive on a queue as they are printed."""

    def __init__(self, url: str, src: Path, stop: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(src), str(stop)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def take(self, n: int) -> None:
        """Wait until `n` more numbers were printed; an error line fails the test."""
        for _ in range(n):
            line = self.lines.get(timeout=WAIT)
            assert not line.startswith("ERROR"), line
            self.seen.append(line)

    def finish(self) -> int:
        code = self.proc.wait(timeout=WAIT)
        while not self.lines.empty():
            line = self.lines.get()
            assert not line.startswith("ERROR"), line
            self.seen.append(line)
        return code


@pytest.fixture
def writer(db_url: str, previous_release: Path, tmp_path: Path) -> Iterator[Writer]:
    load("0.2.0", db_url)
    w = Writer(db_url, previous_release, tmp_path / "stop")
    yield w
    if w.proc.poll() is None:
        w.proc.kill()
        w.proc.wait()


def test_the_previous_release_keeps_inserting_while_db_upgrade_runs(
    writer: Writer, db_url: str, tmp_path: Path
) -> None:
    writer.take(10)  # the old release is writing
    changes = setup.upgrade_schema(db_url)
    assert changes and changes[-1].startswith(f"schema version {SCHEMA_VERSION}")
    writer.take(10)  # and keeps writing after the upgrade
    (tmp_path / "stop").touch()
    assert writer.finish() == 0

    with autonumber.connect(db_url) as p:
        table = sa.Table("Case", sa.MetaData(), autoload_with=p.db)
        with p.db.connect() as conn:
            stored = [str(v) for v in conn.execute(sa.select(table.c.CaseNumber)).scalars()]
        assert len(writer.seen) == len(set(writer.seen)) >= 20  # never a number twice
        assert set(writer.seen) <= set(stored)  # never a lost record
        assert len(stored) == len(set(stored)) == 3 + len(writer.seen)
        after = p.records.insert("Case", {"Subject": "new release"})["CaseNumber"]
        assert int(after) == max(int(v) for v in stored) + 1
    assert setup.verify_setup(db_url) == []
