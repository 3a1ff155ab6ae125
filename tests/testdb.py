"""Test databases that start in milliseconds: bootstrap once per backend per session, then copy.

Every test that takes `db_url` wants an empty database, and most then bootstrap the core pack;
bootstrapping costs seconds on a server (on MariaDB each DDL commits on its own). So each session
(each pytest-xdist worker) bootstraps once per backend into a snapshot and hands out copies:

- SQLite: the snapshot is a file; a copy is a file copy.
- PostgreSQL: the snapshot is a `pg_dump` of the bootstrapped `public` schema, replayed in one
  transaction (a per-test `CREATE DATABASE … TEMPLATE` would need a `DROP DATABASE`, which forces a
  checkpoint: seconds on a loaded machine).
- MariaDB: the snapshot is a database `<name>_tpl`. Emptying moves the tables of a platform whose
  schema is unchanged into `<name>_spare` (RENAME TABLE, no data copy); the next copy reloads
  their rows from the snapshot (DML only) and renames them back. Anything else is dropped, and a
  copy is then rebuilt from the snapshot's DDL. The snapshot's triggers (the writer fence on the
  counter table) are dropped before the move (a table with triggers cannot change database) and
  made again after it, and a copy from the DDL makes them after the rows are in (the fence would
  refuse the copy's own counter rows: its session declares no schema version).

Each worker uses its own databases, named after the configured one plus the worker id (created
when missing), so `.ci/run` need not know the worker count.

A test that needs more than the platform — a full-spec cut-over takes a minute on MariaDB — asks
`restore_state(url, key, build)`: the first worker to ask builds that state and dumps it to a file
(a database file, `pg_dump`, `mariadb-dump`) in the run's shared temporary directory; every later
test of every worker replays the dump in seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from autonumber.db import create_engine
from autonumber.setup.bootstrap import bootstrap

_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=(\d+)")


def worker_id() -> str:
    """The pytest-xdist worker id (`gw0`, …), or `main` outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def worker_url(base: str) -> str:
    """`base` with its database name suffixed by the xdist worker id (unchanged outside xdist)."""
    url = make_url(base)
    worker = worker_id()
    if worker == "main":
        return base
    return url.set(database=f"{url.database}_{worker}").render_as_string(hide_password=False)


def _checked(name: str | None) -> str:
    if not name or not _NAME.match(name):
        raise ValueError(f"test database name {name!r}: only letters, digits and _ are allowed")
    return name


def _engine(url: str, database: str | None = None, **kw: Any) -> sa.Engine:
    """A pool-less engine on `database` of `url`'s server (MariaDB: no default database when None)."""
    t = make_url(url)
    if database is not None or t.get_backend_name() == "mysql":
        t = sa.URL.create(t.drivername, t.username, t.password, t.host, t.port, database, t.query)
    return sa.create_engine(t, poolclass=NullPool, **kw)


def ensure_database(url: str) -> None:
    """Create the server database of `url` when it does not exist yet."""
    name = _checked(make_url(url).database)
    if make_url(url).get_backend_name() == "postgresql":
        admin = _engine(url, "postgres", isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                found = conn.execute(
                    sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
                ).first()
                if found is None:
                    conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
                _pg_fast_commits(conn, name)
        finally:
            admin.dispose()
    else:
        admin = _engine(url)
        try:
            with admin.begin() as conn:
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{name}`"))
        finally:
            admin.dispose()


def _pg_fast_commits(conn: sa.Connection, name: str) -> None:
    """COMMIT without waiting for the WAL flush in this test database (new sessions): what another
    session sees is unchanged, only a crash of the server could lose the last commits, and no test
    crashes it. Skipped when the test user may not alter the database."""
    with contextlib.suppress(sa.exc.ProgrammingError):
        conn.execute(sa.text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


# ---------------------------------------------------------------- SQLite


_sqlite_snapshot: dict[str, Path] = {}


def sqlite_snapshot_dir(path: Path) -> None:
    """Where this session keeps its bootstrapped SQLite file (a session temp directory)."""
    _sqlite_snapshot["dir"] = path


def _restore_sqlite(url: str) -> bool:
    target = Path(make_url(url).database or "")
    if not str(target) or str(target) == ":memory:" or "dir" not in _sqlite_snapshot:
        return False
    if target.exists() and target.stat().st_size > 0:
        return False
    if any(Path(f"{target}{s}").exists() for s in ("-wal", "-shm", "-journal")):
        return False
    snapshot = _sqlite_snapshot["dir"] / f"platform-{_today()}.db"
    if not snapshot.exists():
        building = snapshot.with_suffix(".building")
        building.unlink(missing_ok=True)
        engine = create_engine(f"sqlite:///{building}")
        try:
            bootstrap(engine)
        finally:
            engine.dispose()
        with sqlite3.connect(building) as conn:  # fold any WAL left over into the file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        if any(Path(f"{building}{s}").exists() for s in ("-wal", "-journal")):
            return False
        building.rename(snapshot)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snapshot, target)
    return True


# ---------------------------------------------------------------- PostgreSQL


@dataclass
class _PgSnapshot:
    day: str
    script: str  # the dump of schema `public`, psql meta-commands removed


_pg_snapshots: dict[str, _PgSnapshot] = {}


def _pg_empty(url: str) -> None:
    eng = _engine(url)
    try:
        with eng.begin() as conn:
            conn.execute(sa.text("DROP SCHEMA IF EXISTS public CASCADE"))
            conn.execute(sa.text("CREATE SCHEMA public"))
    finally:
        eng.dispose()


def _pg_is_empty(conn: sa.Connection) -> bool:
    found = conn.execute(
        sa.text(
            "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' LIMIT 1"
        )
    ).first()
    return found is None


def _pg_dump(url: str) -> str | None:
    u = make_url(url)
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return None
    env = {**os.environ, "PGPASSWORD": u.password or ""}
    args = [pg_dump, "--no-owner", "--no-privileges", "--inserts", "--schema=public"]
    args += ["-h", u.host or "127.0.0.1", "-p", str(u.port or 5432), "-U", u.username or "postgres"]
    done = subprocess.run([*args, _checked(u.database)], capture_output=True, text=True, env=env)
    if done.returncode != 0 or "CREATE SCHEMA public;" not in done.stdout:
        return None
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith("\\"))


def _restore_pg(url: str) -> bool:
    snap = _pg_snapshots.get(url)
    if snap is None or snap.day != _today():
        eng = create_engine(url)
        try:
            with eng.connect() as conn:
                if not _pg_is_empty(conn):
                    return False
            bootstrap(eng)
        finally:
            eng.dispose()
        script = _pg_dump(url)
        if script is None:
            return True  # bootstrapped the slow way; no snapshot on this machine
        _pg_snapshots[url] = _PgSnapshot(_today(), script)
        return True
    eng = _engine(url)
    try:
        with eng.begin() as conn:
            if not _pg_is_empty(conn):
                return False
            conn.execute(sa.text("DROP SCHEMA public CASCADE"))
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            cursor.execute(snap.script)  # several statements: psycopg sends them as one simple query
            cursor.close()
    finally:
        eng.dispose()
    return True


# ---------------------------------------------------------------- MariaDB / MySQL


@dataclass
class _MySnapshot:
    day: str
    tpl: str
    spare: str
    tables: dict[str, str]  # name -> SHOW CREATE TABLE, AUTO_INCREMENT included
    triggers: list[str]
    checksums: dict[str, int | None]  # CHECKSUM TABLE of the snapshot's tables
    autos: dict[str, int | None]  # their AUTO_INCREMENT
    spare_ready: bool = False  # spare holds every snapshot table, schema unchanged


_my_snapshots: dict[str, _MySnapshot] = {}


def _plain(ddl: str) -> str:
    return _AUTO_INCREMENT.sub("", ddl)


def _my_tables(conn: sa.Connection, db: str) -> tuple[list[str], list[str]]:
    rows = conn.execute(sa.text(f"SHOW FULL TABLES FROM `{db}`")).all()
    tables = [r[0] for r in rows if r[1] == "BASE TABLE"]
    views = [r[0] for r in rows if r[1] != "BASE TABLE"]
    return tables, views


def _my_create(conn: sa.Connection, db: str, table: str) -> str:
    return str(conn.execute(sa.text(f"SHOW CREATE TABLE `{db}`.`{table}`")).one()[1])


def _my_drop_all(conn: sa.Connection, db: str) -> None:
    tables, views = _my_tables(conn, db)
    if views:
        conn.execute(sa.text("DROP VIEW IF EXISTS " + ", ".join(f"`{db}`.`{v}`" for v in views)))
    if tables:
        conn.execute(sa.text("DROP TABLE IF EXISTS " + ", ".join(f"`{db}`.`{t}`" for t in tables)))


def _my_snapshot(url: str) -> _MySnapshot | None:
    snap = _my_snapshots.get(url)
    if snap is not None and snap.day == _today():
        return snap
    db = _checked(make_url(url).database)
    tpl, spare = f"{db}_tpl", f"{db}_spare"
    tpl_url = make_url(url).set(database=tpl).render_as_string(hide_password=False)
    admin = _engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            for name in (tpl, spare):
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{name}`"))
                _my_drop_all(conn, name)
        eng = create_engine(tpl_url)
        try:
            bootstrap(eng)
        finally:
            eng.dispose()
        with admin.connect() as conn:
            tables, views = _my_tables(conn, tpl)
            routines = conn.execute(
                sa.text("SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = :d LIMIT 1"),
                {"d": tpl},
            ).first()
            if views or routines is not None:
                return None  # not copied by this module: every test bootstraps for real
            triggers = _my_triggers(conn, tpl)
            ddl = {t: _my_create(conn, tpl, t) for t in tables}
            checksums = _my_checksums(conn, tpl, tables) if tables else {}
            snap = _MySnapshot(_today(), tpl, spare, ddl, triggers, checksums, _my_auto_increments(conn, tpl))
    finally:
        admin.dispose()
    _my_snapshots[url] = snap
    return snap


def _my_empty(url: str) -> None:
    db = _checked(make_url(url).database)
    snap = _my_snapshots.get(url)
    admin = _engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            tables, views = _my_tables(conn, db)
            if not tables and not views:
                return
            # a session killed while it opened a table with triggers can leave MariaDB a broken copy
            # of that table in its table cache ("Unknown trigger has an error in its body"): evicted
            # here, so one test's failure stays one failure (docs/engine.md, "Killed sessions")
            if tables:
                conn.execute(sa.text("FLUSH TABLES " + ", ".join(f"`{db}`.`{t}`" for t in tables)))
            if snap is not None and not snap.spare_ready:
                _my_recycle(conn, db, snap, tables)
            _my_drop_all(conn, db)
    finally:
        admin.dispose()


def _my_recycle(conn: sa.Connection, db: str, snap: _MySnapshot, tables: list[str]) -> None:
    """Move an unchanged platform's tables to the spare database, to be reloaded for the next copy."""
    if set(snap.tables) - set(tables):
        return
    if _my_triggers(conn, db) != snap.triggers:  # a test made or dropped one
        return
    for table, ddl in snap.tables.items():
        if _plain(_my_create(conn, db, table)) != _plain(ddl):
            return
    for name in _my_trigger_names(conn, db):
        conn.execute(sa.text(f"DROP TRIGGER `{db}`.`{name}`"))
    renames = ", ".join(f"`{db}`.`{t}` TO `{snap.spare}`.`{t}`" for t in snap.tables)
    conn.execute(sa.text(f"RENAME TABLE {renames}"))
    snap.spare_ready = True


def _restore_mysql(url: str) -> bool:
    db = _checked(make_url(url).database)
    snap = _my_snapshot(url)
    admin = _engine(url)
    try:
        with admin.connect() as conn:
            tables, views = _my_tables(conn, db)
            if tables or views:
                return False
        if snap is None:
            eng = create_engine(url)
            try:
                bootstrap(eng)
            finally:
                eng.dispose()
            return True
        if snap.spare_ready and _my_reloaded_spare(admin, db, snap):
            return True
        with admin.begin() as conn:
            conn.execute(sa.text(f"USE `{db}`"))
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            for ddl in snap.tables.values():
                conn.exec_driver_sql(ddl)
            for table in snap.tables:
                source = f"`{snap.tpl}`.`{table}`"
                conn.execute(sa.text(f"INSERT INTO `{db}`.`{table}` SELECT * FROM {source}"))
            for ddl in snap.triggers:  # after the rows: the fence refuses this session's counter rows
                conn.exec_driver_sql(ddl)
    finally:
        admin.dispose()
    return True


def _my_reloaded_spare(admin: sa.Engine, db: str, snap: _MySnapshot) -> bool:
    """Reload the spare tables; False (both databases emptied, the spare given up) when that fails,
    so the caller copies from the template instead. A test that timed out can leave a thread that
    still changes tables after the next test began: one such failure must not fail every later copy."""
    try:
        _my_reload_spare(admin, db, snap)
        return True
    except sa.exc.DBAPIError:
        snap.spare_ready = False
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            _my_drop_all(conn, db)
            _my_drop_all(conn, snap.spare)
        return False


def _my_trigger_names(conn: sa.Connection, db: str) -> list[str]:
    return sorted(str(r[0]) for r in conn.execute(sa.text(f"SHOW TRIGGERS FROM `{db}`")))


def _my_triggers(conn: sa.Connection, db: str) -> list[str]:
    """The CREATE TRIGGER statements of `db`, by name (they name no database: made where `USE`d)."""
    return [
        str(conn.execute(sa.text(f"SHOW CREATE TRIGGER `{db}`.`{t}`")).one()[2])
        for t in _my_trigger_names(conn, db)
    ]


def _my_checksums(conn: sa.Connection, db: str, tables: Iterable[str]) -> dict[str, int | None]:
    listed = ", ".join(f"`{db}`.`{t}`" for t in tables)
    rows = conn.execute(sa.text(f"CHECKSUM TABLE {listed}"))
    return {str(name).split(".", 1)[1]: total for name, total in rows}


def _my_auto_increments(conn: sa.Connection, db: str) -> dict[str, int | None]:
    rows = conn.execute(
        sa.text("SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = :d"),
        {"d": db},
    )
    return {str(name): auto for name, auto in rows}


def _my_reload_spare(admin: sa.Engine, db: str, snap: _MySnapshot) -> None:
    """Reload only the spare tables whose rows or AUTO_INCREMENT differ from the snapshot's."""
    spare, tpl = snap.spare, snap.tpl
    with admin.begin() as conn:
        now = _my_checksums(conn, spare, snap.tables)
        changed = [t for t in snap.tables if now.get(t) != snap.checksums.get(t)]
        conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
        for table in changed:
            # not DELETE: its delete-marked unique-index entries stay until InnoDB's purge runs, and an
            # insert of the same value then takes next-key locks that make a later test's inserts wait
            conn.execute(sa.text(f"TRUNCATE TABLE `{spare}`.`{table}`"))
            conn.execute(sa.text(f"INSERT INTO `{spare}`.`{table}` SELECT * FROM `{tpl}`.`{table}`"))
    with admin.begin() as conn:
        autos = _my_auto_increments(conn, spare)
        for table, value in snap.autos.items():
            if value is not None and autos.get(table) != value:
                conn.execute(sa.text(f"ALTER TABLE `{spare}`.`{table}` AUTO_INCREMENT = {int(value)}"))
        renames = ", ".join(f"`{spare}`.`{t}` TO `{db}`.`{t}`" for t in snap.tables)
        conn.execute(sa.text(f"RENAME TABLE {renames}"))
        conn.execute(sa.text(f"USE `{db}`"))
        for ddl in snap.triggers:
            conn.exec_driver_sql(ddl)
    snap.spare_ready = False


# ---------------------------------------------------------------- entry points


def make_empty(url: str) -> None:
    """Empty the server test database of `url` (tables, views, sequences; on PostgreSQL all of `public`)."""
    if make_url(url).get_backend_name() == "postgresql":
        _pg_empty(url)
    else:
        _my_empty(url)


_managed: set[str] = set()


def manage(url: str) -> None:
    """Mark `url` as a server test database this session owns (copies may replace its contents)."""
    _managed.add(url)


def restore_platform(url: str) -> bool:
    """Give the EMPTY test database `url` a copy of the bootstrapped core pack; False when `url`
    is not an empty test database of this session (the caller then bootstraps for real)."""
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        return _restore_sqlite(url)
    if url not in _managed:
        return False
    if backend == "postgresql":
        return _restore_pg(url)
    return _restore_mysql(url)


# ---------------------------------------------------------------- states beyond the platform

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
    dump = _shared["dir"] / f"state-{_checked(key)}-{backend}-{_today()}.sql"
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
    if url not in _managed:
        return False
    eng = _engine(url)
    try:
        with eng.connect() as conn:
            if backend == "postgresql":
                return _pg_is_empty(conn)
            tables, views = _my_tables(conn, _checked(make_url(url).database))
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
        db = _checked(make_url(url).database)
        _run(["pg_dump", "--no-owner", "--no-privileges", "--schema=public", *args, db], env, stdout=building)
    else:
        args, env = _client_env(url)
        db = _checked(make_url(url).database)
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
    db = _checked(make_url(url).database)
    if backend == "postgresql":
        eng = _engine(url)
        try:
            with eng.begin() as conn:
                conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        finally:
            eng.dispose()
        psql = ["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "--single-transaction", *args, "-d", db]
        _run(psql, env, stdin=dump)
    else:
        _run(["mariadb", *args, db], env, stdin=dump)
