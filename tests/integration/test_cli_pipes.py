"""In a pipe, a table is one tab-separated line per row: `autonumber field list | grep CaseNumber`
finds the whole row, however long."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support import bootstrap_url


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["field", "list"], "Case.CaseNumber\t{00000000}\tglobal\t"),
        (["counter", "show", "Case.CaseNumber"], "global\t1\t00000001\t"),
        (["db", "status"], "backend\tsqlite"),
    ],
)
def test_a_table_in_a_pipe_is_one_line_per_row(db_url: str, argv: list[str], wanted: str) -> None:
    bootstrap_url(db_url)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "autonumber"), *argv, "--db", db_url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if wanted in line]
    assert len(lines) == 1, done.stdout
    assert not any(ch in done.stdout for ch in "│┃━─"), done.stdout
