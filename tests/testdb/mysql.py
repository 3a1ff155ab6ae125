"""MariaDB/MySQL: the snapshot is a database `<name>_tpl`.

Emptying moves the tables of a platform whose schema is unchanged into `<name>_spare` (RENAME
TABLE, no data copy); the next copy reloads their rows from the snapshot (DML only) and renames
them back. Anything else is dropped, and a copy is then rebuilt from the snapshot's DDL. The
snapshot's triggers (the writer fence on the counter table) are dropped before the move (a table
with triggers cannot change database) and made again after it, and a copy from the DDL makes them
after the rows are in (the fence would refuse the copy's own counter rows: its session declares
no schema version).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from autonumber.db import create_engine
from autonumber.setup.bootstrap import bootstrap

from .servers import checked, engine, today

_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=(\d+)")


@dataclass
class Snapshot:
    day: str
    tpl: str
    spare: str
    tables: dict[str, str]  # name -> SHOW CREATE TABLE, AUTO_INCREMENT included
    triggers: list[str]
    checksums: dict[str, int | None]  # CHECKSUM TABLE of the snapshot's tables
    autos: dict[str, int | None]  # their AUTO_INCREMENT
    spare_ready: bool = False  # spare holds every snapshot table, schema unchanged


snapshots: dict[str, Snapshot] = {}


def _plain(ddl: str) -> str:
    return _AUTO_INCREMENT.sub("", ddl)


def tables_of(conn: sa.Connection, db: str) -> tuple[list[str], list[str]]:
    rows = conn.execute(sa.text(f"SHOW FULL TABLES FROM `{db}`")).all()
    tables = [r[0] for r in rows if r[1] == "BASE TABLE"]
    views = [r[0] for r in rows if r[1] != "BASE TABLE"]
    return tables, views


def _create(conn: sa.Connection, db: str, table: str) -> str:
    return str(conn.execute(sa.text(f"SHOW CREATE TABLE `{db}`.`{table}`")).one()[1])


def _drop_all(conn: sa.Connection, db: str) -> None:
    tables, views = tables_of(conn, db)
    if views:
        conn.execute(sa.text("DROP VIEW IF EXISTS " + ", ".join(f"`{db}`.`{v}`" for v in views)))
    if tables:
        conn.execute(sa.text("DROP TABLE IF EXISTS " + ", ".join(f"`{db}`.`{t}`" for t in tables)))


def _snapshot(url: str) -> Snapshot | None:
    snap = snapshots.get(url)
    if snap is not None and snap.day == today():
        return snap
    db = checked(make_url(url).database)
    tpl, spare = f"{db}_tpl", f"{db}_spare"
    tpl_url = make_url(url).set(database=tpl).render_as_string(hide_password=False)
    admin = engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            for name in (tpl, spare):
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{name}`"))
                _drop_all(conn, name)
        eng = create_engine(tpl_url)
        try:
            bootstrap(eng)
        finally:
            eng.dispose()
        with admin.connect() as conn:
            tables, views = tables_of(conn, tpl)
            routines = conn.execute(
                sa.text("SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = :d LIMIT 1"),
                {"d": tpl},
            ).first()
            if views or routines is not None:
                return None  # not copied by this module: every test bootstraps for real
            triggers = _triggers(conn, tpl)
            ddl = {t: _create(conn, tpl, t) for t in tables}
            checksums = _checksums(conn, tpl, tables) if tables else {}
            snap = Snapshot(today(), tpl, spare, ddl, triggers, checksums, _auto_increments(conn, tpl))
    finally:
        admin.dispose()
    snapshots[url] = snap
    return snap


def empty(url: str) -> None:
    db = checked(make_url(url).database)
    snap = snapshots.get(url)
    admin = engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            tables, views = tables_of(conn, db)
            if not tables and not views:
                return
            # a session killed while it opened a table with triggers can leave MariaDB a broken copy
            # of that table in its table cache ("Unknown trigger has an error in its body"): evicted
            # here, so one test's failure stays one failure (docs/engine.md, "Killed sessions")
            if tables:
                conn.execute(sa.text("FLUSH TABLES " + ", ".join(f"`{db}`.`{t}`" for t in tables)))
            if snap is not None and not snap.spare_ready:
                _recycle(conn, db, snap, tables)
            _drop_all(conn, db)
    finally:
        admin.dispose()


def _recycle(conn: sa.Connection, db: str, snap: Snapshot, tables: list[str]) -> None:
    """Move an unchanged platform's tables to the spare database, to be reloaded for the next copy."""
    if set(snap.tables) - set(tables):
        return
    if _triggers(conn, db) != snap.triggers:  # a test made or dropped one
        return
    for table, ddl in snap.tables.items():
        if _plain(_create(conn, db, table)) != _plain(ddl):
            return
    for name in _trigger_names(conn, db):
        conn.execute(sa.text(f"DROP TRIGGER `{db}`.`{name}`"))
    renames = ", ".join(f"`{db}`.`{t}` TO `{snap.spare}`.`{t}`" for t in snap.tables)
    conn.execute(sa.text(f"RENAME TABLE {renames}"))
    snap.spare_ready = True


def restore(url: str) -> bool:
    db = checked(make_url(url).database)
    snap = _snapshot(url)
    admin = engine(url)
    try:
        with admin.connect() as conn:
            tables, views = tables_of(conn, db)
            if tables or views:
                return False
        if snap is None:
            eng = create_engine(url)
            try:
                bootstrap(eng)
            finally:
                eng.dispose()
            return True
        if snap.spare_ready and _reloaded_spare(admin, db, snap):
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


def _reloaded_spare(admin: sa.Engine, db: str, snap: Snapshot) -> bool:
    """Reload the spare tables; False (both databases emptied, the spare given up) when that fails,
    so the caller copies from the template instead. A test that timed out can leave a thread that
    still changes tables after the next test began: one such failure must not fail every later copy."""
    try:
        _reload_spare(admin, db, snap)
        return True
    except sa.exc.DBAPIError:
        snap.spare_ready = False
        with admin.begin() as conn:
            conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
            _drop_all(conn, db)
            _drop_all(conn, snap.spare)
        return False


def _trigger_names(conn: sa.Connection, db: str) -> list[str]:
    return sorted(str(r[0]) for r in conn.execute(sa.text(f"SHOW TRIGGERS FROM `{db}`")))


def _triggers(conn: sa.Connection, db: str) -> list[str]:
    """The CREATE TRIGGER statements of `db`, by name (they name no database: made where `USE`d)."""
    return [
        str(conn.execute(sa.text(f"SHOW CREATE TRIGGER `{db}`.`{t}`")).one()[2])
        for t in _trigger_names(conn, db)
    ]


def _checksums(conn: sa.Connection, db: str, tables: Iterable[str]) -> dict[str, int | None]:
    listed = ", ".join(f"`{db}`.`{t}`" for t in tables)
    rows = conn.execute(sa.text(f"CHECKSUM TABLE {listed}"))
    return {str(name).split(".", 1)[1]: total for name, total in rows}


def _auto_increments(conn: sa.Connection, db: str) -> dict[str, int | None]:
    rows = conn.execute(
        sa.text("SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = :d"),
        {"d": db},
    )
    return {str(name): auto for name, auto in rows}


def _reload_spare(admin: sa.Engine, db: str, snap: Snapshot) -> None:
    """Reload only the spare tables whose rows or AUTO_INCREMENT differ from the snapshot's."""
    spare, tpl = snap.spare, snap.tpl
    with admin.begin() as conn:
        now = _checksums(conn, spare, snap.tables)
        changed = [t for t in snap.tables if now.get(t) != snap.checksums.get(t)]
        conn.execute(sa.text("SET SESSION FOREIGN_KEY_CHECKS=0"))
        for table in changed:
            # not DELETE: its delete-marked unique-index entries stay until InnoDB's purge runs, and an
            # insert of the same value then takes next-key locks that make a later test's inserts wait
            conn.execute(sa.text(f"TRUNCATE TABLE `{spare}`.`{table}`"))
            conn.execute(sa.text(f"INSERT INTO `{spare}`.`{table}` SELECT * FROM `{tpl}`.`{table}`"))
    with admin.begin() as conn:
        autos = _auto_increments(conn, spare)
        for table, value in snap.autos.items():
            if value is not None and autos.get(table) != value:
                conn.execute(sa.text(f"ALTER TABLE `{spare}`.`{table}` AUTO_INCREMENT = {int(value)}"))
        renames = ", ".join(f"`{spare}`.`{t}` TO `{db}`.`{t}`" for t in snap.tables)
        conn.execute(sa.text(f"RENAME TABLE {renames}"))
        conn.execute(sa.text(f"USE `{db}`"))
        for ddl in snap.triggers:
            conn.exec_driver_sql(ddl)
    snap.spare_ready = False
