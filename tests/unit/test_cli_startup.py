"""Commands that need no database start without the database side: `--help`, `--version` and the
`format` commands load neither SQLAlchemy nor the engine nor the web stack (what they would cost
is measured by `python -m bench --only cli`, docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autonumber.defaults import SCHEMA_VERSION, release

HEAVY = ("sqlalchemy", "autonumber.engine", "autonumber.runtime", "fastapi", "uvicorn")

PROBE = """
import json, sys
from autonumber.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def _loaded_by(args: list[str]) -> tuple[str, dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["format", "check", "INV-{YYYY}-{0000}"],
        ["format", "check", "INV-{YYYY}{MM}{DD}-{0000}", "--scope", "per_day"],
        ["format", "preview", "INV-{YYYY}-{0000}", "--counter", "42"],
    ],
    ids=" ".join,
)
def test_a_command_without_a_database_loads_no_database_side(args: list[str]) -> None:
    out, seen = _loaded_by(args)
    assert seen["code"] in (0, None), out
    assert seen["heavy"] == [], f"{' '.join(args)} loaded {seen['heavy']}"


def test_version_names_the_release_and_the_schema_version() -> None:
    out, _ = _loaded_by(["--version"])
    assert out == f"autonumber {release()} (schema version {SCHEMA_VERSION})\n"


def test_a_command_on_sqlite_loads_only_what_it_uses(tmp_path: Path) -> None:
    """`field list` on SQLite imports neither the other backends' dialect modules and drivers nor
    prometheus_client; a platform on it loads its catalog without pydantic (the imports an import
    of a million rows pays for in memory, docs/performance.md)."""
    url = f"sqlite:///{tmp_path}/startup.db"
    init = subprocess.run(
        [sys.executable, "-c", "from autonumber.cli import main; main()", "db", "init", "--db", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    others = ("autonumber.db.mysql", "autonumber.db.postgresql", "pymysql", "psycopg")
    probe = PROBE.format(heavy=(*others, "prometheus_client"))
    done = subprocess.run(
        [sys.executable, "-c", probe, "field", "list", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    assert seen["code"] in (0, None), done.stdout
    assert seen["heavy"] == [], f"field list loaded {seen['heavy']}"
    connect = f"""
import sys, autonumber
p = autonumber.connect({url!r})
p.close()
print([m for m in ("pydantic", *{others!r}) if m in sys.modules])
"""
    loaded = subprocess.run([sys.executable, "-c", connect], capture_output=True, text=True, timeout=60)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]", loaded.stdout
