"""States beyond the platform: built once per run by the first worker that asks, then replayed
from a dump (a database file, `pg_dump`, `mariadb-dump`) in the run's shared temporary directory."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from . import mysql, postgresql
from .servers import checked, engine, managed, today

_shared: dict[str, Path] = {}


def shared_dir(path: Path) -> None:
    """The directory every xdist worker of this run sees (the states' dumps live there)."""
    _shared["dir"] = path


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock between the workers of this run (one builds a state, the others wait)."""
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def restore_state(url: str, key: str, build: Callable[[str], None]) -> None:
    """Give the EMPTY test database `url` the state `build(url)` makes: built once per key, backend
    and UTC day for the whole run, replayed from its dump afterwards. `build` runs itself when `url`
    is not an empty test database of this session, or this machine has no dump tool."""
    backend = make_url(url).get_backend_name()
    if "dir" not in _shared or not _is_empty(url, backend):
        build(url)
        return
    dump = _shared["dir"] / f"state-{checked(key)}-{backend}-{today()}.sql"
    if not dump.exists():
        with _locked(dump.with_suffix(".lock")):
            if not dump.exists():
                build(url)
                _save_state(url, backend, dump)
                return
    _load_state(url, backend, dump)


def _is_empty(url: str, backend: str) -> bool:
    if backend == "sqlite":
        target = Path(make_url(url).database or "")
        return bool(str(target)) and str(target) != ":memory:" and not target.exists()
    if url not in managed:
        return False
    eng = engine(url)
    try:
        with eng.connect() as conn:
            if backend == "postgresql":
                return postgresql.is_empty(conn)
            tables, views = mysql.tables_of(conn, checked(make_url(url).database))
            return not tables and not views
    finally:
        eng.dispose()


def _client_env(url: str) -> tuple[list[str], dict[str, str]]:
    """The connection arguments of `url` for the servers' command-line clients."""
    u = make_url(url)
    host, user = u.host or "127.0.0.1", u.username or "root"
    if u.get_backend_name() == "postgresql":
        args = ["-h", host, "-p", str(u.port or 5432), "-U", user]
        return args, {**os.environ, "PGPASSWORD": u.password or ""}
    args = [f"-h{host}", f"-P{u.port or 3306}", f"-u{user}"]
    return args, {**os.environ, "MYSQL_PWD": u.password or ""}


def _run(argv: list[str], env: dict[str, str], stdin: Path | None = None, stdout: Path | None = None) -> None:
    """Run a database client; its stderr becomes the error when it fails."""
    with contextlib.ExitStack() as files:
        given = files.enter_context(open(stdin, "rb")) if stdin else None
        taken = files.enter_context(open(stdout, "wb")) if stdout else None
        done = subprocess.run(argv, stdin=given, stdout=taken, stderr=subprocess.PIPE, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")


def _save_state(url: str, backend: str, dump: Path) -> None:
    building = dump.with_suffix(".building")
    if backend == "sqlite":
        source = Path(make_url(url).database or "")
        with sqlite3.connect(source) as conn:  # fold the WAL into the file before copying it
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        shutil.copyfile(source, building)
    elif backend == "postgresql":
        args, env = _client_env(url)
        db = checked(make_url(url).database)
        _run(["pg_dump", "--no-owner", "--no-privileges", "--schema=public", *args, db], env, stdout=building)
    else:
        args, env = _client_env(url)
        db = checked(make_url(url).database)
        flags = ["--skip-comments", "--skip-lock-tables", "--skip-add-locks", "--skip-add-drop-table"]
        _run(["mariadb-dump", *flags, "--triggers", "--no-create-db", *args, db], env, stdout=building)
    building.rename(dump)


def _load_state(url: str, backend: str, dump: Path) -> None:
    if backend == "sqlite":
        target = Path(make_url(url).database or "")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dump, target)
        return
    args, env = _client_env(url)
    db = checked(make_url(url).database)
    if backend == "postgresql":
        eng = engine(url)
        try:
            with eng.begin() as conn:
                conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        finally:
            eng.dispose()
        psql = ["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "--single-transaction", *args, "-d", db]
        _run(psql, env, stdin=dump)
    else:
        _run(["mariadb", *args, db], env, stdin=dump)
