"""Every code block of docs/integrations.md runs, in order, per section, on a fresh database of each
backend: `bash` lines through the CLI (`alembic` lines through Alembic's), `python` blocks as
scripts in their own interpreter (each asserts its own results) or, when the first line names a
file (`# models.py`), written to that file; `yaml` data-spec operations through the spec operation
table."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import make_url

from autonumber.cli import main
from autonumber.db import create_engine
from autonumber.specapply.operations import OPERATIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
SECTIONS = [s for s in re.split(r"^## ", DOC.read_text(), flags=re.M)[1:] if BLOCK.search(s)]


def _run_bash(code: str, cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for line in code.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        argv = shlex.split(line)
        if argv[0] == "alembic":
            _run_alembic(argv[1:], cwd)
            continue
        assert argv[0] == "autonumber", line
        with pytest.raises(SystemExit) as info:
            main(argv[1:])
        out, err = capsys.readouterr()
        assert info.value.code in (0, None), f"{line}\n{out}{err}"


def _run_alembic(args: list[str], cwd: Path) -> None:
    """Alembic's own CLI in its own interpreter (env.py imports the page's `models.py` from cwd)."""
    done = subprocess.run(
        [sys.executable, "-m", "alembic", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"alembic {' '.join(args)}\n{done.stdout}{done.stderr}"


FILE = re.compile(r"# ([\w/]+\.py)\n")
"""A python block whose first line names a file (`# migrations/env.py`) is that file's content."""


def _run_python(code: str, cwd: Path, url: str) -> None:
    named = FILE.match(code)
    if named:
        (cwd / named[1]).parent.mkdir(parents=True, exist_ok=True)
        (cwd / named[1]).write_text(code)
        return
    env = {**os.environ, "AUTONUMBER_DATABASE_URL": url}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{code}\n{done.stdout}{done.stderr}"


def _run_yaml(code: str, url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for item in yaml.safe_load(code):
                args = {k: v for k, v in item.items() if k != "op"}
                OPERATIONS[item["op"]].run(conn, args)
    finally:
        engine.dispose()


@pytest.mark.parametrize("section", SECTIONS, ids=[s.splitlines()[0] for s in SECTIONS])
@pytest.mark.slow
def test_doc_section_runs(
    section: str,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    title = section.splitlines()[0]
    url = db_url  # the Django example too: its settings follow AUTONUMBER_DATABASE_URL
    assert make_url(url)
    monkeypatch.setenv("AUTONUMBER_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    for lang, code in BLOCK.findall(section):
        if lang == "bash":
            _run_bash(code, tmp_path, capsys)
        elif lang == "python":
            _run_python(code, tmp_path, url)
        elif lang == "yaml":
            _run_yaml(code, url)
        else:
            raise AssertionError(f"{title}: a {lang} block is not run by this test")
