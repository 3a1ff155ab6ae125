"""PostgreSQL: the snapshot is a `pg_dump` of the bootstrapped `public` schema, replayed in one
transaction (a per-test `CREATE DATABASE … TEMPLATE` would need a `DROP DATABASE`, which forces a
checkpoint: seconds on a loaded machine)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from autonumber.db import create_engine
from autonumber.setup.bootstrap import bootstrap

from .servers import checked, engine, today


@dataclass
class _Snapshot:
    day: str
    script: str  # the dump of schema `public`, psql meta-commands removed


_snapshots: dict[str, _Snapshot] = {}


def empty(url: str) -> None:
    eng = engine(url)
    try:
        with eng.begin() as conn:
            conn.execute(sa.text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(sa.text("CREATE SCHEMA public"))
    finally:
        eng.dispose()


def is_empty(conn: sa.Connection) -> bool:
    found = conn.execute(
        sa.text(
            "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' LIMIT 1"
        )
    ).first()
    return found is None


def _dump(url: str) -> str | None:
    u = make_url(url)
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return None
    env = {**os.environ, "PGPASSWORD": u.password or ""}
    args = [pg_dump, "--no-owner", "--no-privileges", "--inserts", "--schema=public"]
    args += ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres"]
    done = subprocess.run([*args, checked(u.database)], capture_output=True, text=True, env=env)
    if done.returncode != 0 or "CREATE SCHEMA public;" not in done.stdout:
        return None
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith("\\"))


def restore(url: str) -> bool:
    snap = _snapshots.get(url)
    if snap is None or snap.day != today():
        eng = create_engine(url)
        try:
            with eng.connect() as conn:
                if not is_empty(conn):
                    return False
            bootstrap(eng)
        finally:
            eng.dispose()
        script = _dump(url)
        if script is None:
            return True  # bootstrapped the slow way; no snapshot on this machine
        _snapshots[url] = _Snapshot(today(), script)
        return True
    eng = engine(url)
    try:
        with eng.begin() as conn:
            if not is_empty(conn):
                return False
            conn.execute(sa.text("DROP SCHEMA public CASCADE"))
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            cursor.execute(snap.script)  # several statements: psycopg sends them as one simple query
            cursor.close()
    finally:
        eng.dispose()
    return True
