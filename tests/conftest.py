"""Backends for the behaviour suite: every test that takes `db_url` runs on SQLite, MariaDB and
PostgreSQL. Under CI=true an unreachable server FAILS the test; elsewhere it skips with a reason."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

MYSQL_URL = os.environ.get("AUTONUMBER_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/autonumber_test")
PG_URL = os.environ.get(
    "AUTONUMBER_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/autonumber_test"
)
SERVER_URLS = {"mysql": MYSQL_URL, "postgresql": PG_URL}
IN_CI = os.environ.get("CI", "").lower() == "true"
_unreachable: dict[str, str] = {}


def _unavailable(backend: str, reason: str) -> None:
    message = f"{backend} is not reachable at {SERVER_URLS[backend]}: {reason}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: server tests must run, not skip)")
    pytest.skip(message)


def wipe_database(url: str) -> None:
    """Drop every table (and view, trigger, sequence) in the test database."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            names = sa.inspect(conn).get_table_names()
            if conn.dialect.name == "postgresql":
                for name in names:
                    conn.execute(sa.text(f'DROP TABLE IF EXISTS "{name}" CASCADE'))
                for (seq,) in conn.execute(
                    sa.text(
                        "SELECT sequence_name FROM information_schema.sequences "
                        "WHERE sequence_schema = 'public'"
                    )
                ):
                    conn.execute(sa.text(f'DROP SEQUENCE IF EXISTS "{seq}" CASCADE'))
            else:
                conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=0"))
                for name in names:
                    conn.execute(sa.text(f"DROP TABLE IF EXISTS `{name}`"))
                conn.execute(sa.text("SET FOREIGN_KEY_CHECKS=1"))
    finally:
        engine.dispose()


def server_url(backend: str) -> str:
    """A wiped server database URL, or skip/fail when the server is unreachable."""
    if backend in _unreachable:
        _unavailable(backend, _unreachable[backend])
    url = SERVER_URLS[backend]
    try:
        wipe_database(url)
    except sa.exc.OperationalError as exc:
        _unreachable[backend] = str(exc.orig).splitlines()[0]
        _unavailable(backend, _unreachable[backend])
    return url


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
def sqlite_url(tmp_path: Path) -> str:
    """An empty SQLite database file."""
    return f"sqlite:///{tmp_path / 'autonumber.db'}"
