"""Backends for the behaviour suite: every test that takes `db_url` runs on SQLite, MariaDB and
PostgreSQL. Under CI=true an unreachable server FAILS the test; elsewhere it skips with a reason.

Each pytest-xdist worker has its own server databases (the configured name plus `_gw0`, `_gw1`, …,
created when missing). `db_url` empties the database cheaply; `make_platform` (tests/support.py)
then copies a platform bootstrapped once per session (tests/testdb/) instead of bootstrapping."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import settings

import testdb
from autonumber import Platform
from support import make_platform

MYSQL_URL = os.environ.get("AUTONUMBER_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/autonumber_test")
PG_URL = os.environ.get(
    "AUTONUMBER_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_test"
)
SERVER_URLS = {"mysql": MYSQL_URL, "postgresql": PG_URL}
IN_CI = os.environ.get("CI", "").lower() == "true"
_unreachable: dict[str, str] = {}

# Hypothesis' default 200 ms deadline per example is wall-clock luck on a loaded machine.
settings.register_profile("autonumber", deadline=None)
settings.load_profile("autonumber")


def _unavailable(backend: str, reason: str) -> None:
    message = f"{backend} is not reachable at {SERVER_URLS[backend]}: {reason}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: server tests must run, not skip)")
    pytest.skip(message)


def wipe_database(url: str) -> None:
    """Drop every table (and view, trigger, sequence) in the test database."""
    testdb.make_empty(url)


def server_url(backend: str) -> str:
    """This worker's emptied server database URL, or skip/fail when the server is unreachable."""
    if backend in _unreachable:
        _unavailable(backend, _unreachable[backend])
    url = testdb.worker_url(SERVER_URLS[backend])
    try:
        if url not in _created:
            testdb.ensure_database(url)
            _created.add(url)
            testdb.manage(url)
        testdb.make_empty(url)
    except sa.exc.OperationalError as exc:
        _unreachable[backend] = str(exc.orig).splitlines()[0]
        _unavailable(backend, _unreachable[backend])
    return url


_created: set[str] = set()


@pytest.fixture(scope="session", autouse=True)
def _sqlite_snapshot(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where this session keeps its bootstrapped SQLite file, and where the whole run (every xdist
    worker) keeps the dumps of larger states (tests/testdb/ copies them)."""
    testdb.sqlite_snapshot_dir(tmp_path_factory.mktemp("platform"))
    base = tmp_path_factory.getbasetemp()
    testdb.shared_dir(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("mysql", id="mysql", marks=pytest.mark.mysql),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgresql),
]
SERVER_BACKENDS = BACKENDS[1:]


def _url_for(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'autonumber.db'}"
    return server_url(backend)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database on each backend in turn."""
    yield _url_for(request.param, tmp_path)


@pytest.fixture(params=SERVER_BACKENDS)
def server_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty MariaDB or PostgreSQL database."""
    yield _url_for(request.param, tmp_path)


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    """A SQLAlchemy engine on `db_url`, disposed after the test (files that need more override it)."""
    from autonumber.db import create_engine

    eng = create_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    """The core pack on `db_url`, closed after the test (files that need options override it)."""
    p = make_platform(db_url)
    yield p
    p.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """An empty SQLite database file."""
    return f"sqlite:///{tmp_path / 'autonumber.db'}"


# Tests that share one machine-wide resource run in one xdist worker (`--dist loadgroup`): the
# Galera cluster (fixed ports, one data directory) and the browser tests (one Chromium at a time).
_GROUPS = {"galera": "galera", "e2e": "browser"}
SLOW_TIMEOUT = 600
"""pytest-timeout for a `slow` test without its own: a full-spec cut-over on MariaDB takes over the
default 120 s when the machine is loaded (load average 20)."""


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test under tests/galera and tests/e2e its `xdist_group` and the folder's marker
    (so `make check`'s `-m "not galera and not e2e"` leaves out every one of them, whatever its
    module declares), and start the `slow` tests first: xdist hands out tests in this order, so a
    long test begun last would leave every other worker idle while it finishes (the groups go first
    anyway: xdist starts the largest)."""
    for item in items:
        parts = item.path.parts
        for folder, group in _GROUPS.items():
            if folder in parts[-3:-1]:
                item.add_marker(pytest.mark.xdist_group(group))
                item.add_marker(getattr(pytest.mark, folder))
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept within


TIMES = os.environ.get("AUTONUMBER_TEST_TIMES")
"""A file to append every test phase's duration to, one JSON line each (scripts/test_times.py
sums them per worker, file and backend): written by the xdist controller, or the only process."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not TIMES or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    line = {
        "test": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "seconds": round(report.duration, 3),
        "start": round(report.start, 3),
        "worker": getattr(report, "worker_id", None) or "main",
    }
    with open(TIMES, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
