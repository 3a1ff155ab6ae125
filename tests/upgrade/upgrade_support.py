"""Databases made by earlier releases (tests/upgrade/fixtures, scripts/make_upgrade_fixtures.py),
loaded into a test database with the backend's own client, and the numbers they hold."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from scripts.db_clients import client_args

FIXTURES = Path(__file__).parent / "fixtures"
RELEASES = ("0.1.0", "0.2.0", "0.3.0")
SCHEMA_OF = {"0.1.0": 0, "0.2.0": 0, "0.3.0": 2}
"""The schema version each release left its database at (0: unversioned)."""
COUNTRIES = ("SG", "SGT", "US")
_DAY = re.compile(r"-(\d{6})-\d+$")


def backend_of(url: str) -> str:
    """sqlite, mysql or postgresql."""
    name = sa.make_url(url).get_backend_name()
    return "mysql" if name in ("mysql", "mariadb") else name


def numbers(release: str, backend: str) -> dict[str, list[str]]:
    """The numbers the release handed out while the fixture was made (Case, Contract)."""
    data: dict[str, list[str]] = json.loads((FIXTURES / f"{release}-{backend}.json").read_text())
    return data


def fixture_day(release: str, backend: str) -> str:
    """The YYMMDD the fixture's per_prefix Contract numbers were made on."""
    match = _DAY.search(numbers(release, backend)["Contract"][0])
    assert match, numbers(release, backend)
    return match.group(1)


def today() -> str:
    """Today's YYMMDD (UTC, the default time zone of the Contract field)."""
    return datetime.now(UTC).strftime("%y%m%d")


def load(release: str, url: str) -> int:
    """Load the release's dump into the (empty) database at `url`, its per_prefix day moved to
    today so the next Contract continues the same prefix; how many places the day was moved."""
    backend = backend_of(url)
    text = gzip.decompress((FIXTURES / f"{release}-{backend}.sql.gz").read_bytes()).decode()
    day = fixture_day(release, backend)
    # rendered numbers (SG-TCPA-261201-01, 0.2.0 keys) and 0.1.0's token-value keys (SG|TCPA|20261201)
    rendered, keys = re.compile(rf"(?<=-){day}(?=-)"), re.compile(rf"(?<=\|)20{day}\b")
    moved = len(rendered.findall(text)) + len(keys.findall(text))
    text = keys.sub(f"20{today()}", rendered.sub(today(), text))
    parsed = sa.make_url(url)
    if backend == "sqlite":
        with sqlite3.connect(str(parsed.database)) as conn:
            conn.executescript(text)
    elif backend == "mysql":
        subprocess.run(
            ["mariadb", *client_args(url), str(parsed.database)], input=text, text=True, check=True
        )
    else:
        subprocess.run(
            ["psql", "-q", "-v", "ON_ERROR_STOP=1", *client_args(url), "-d", str(parsed.database)],
            input=text,
            text=True,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return moved
