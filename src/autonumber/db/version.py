"""The schema version recorded in the database, and the check every connect makes against it.

`_System_SchemaVersion` holds one row per numbered migration applied (docs/upgrading.md); the
database's version is the largest. A database with the system tables but no row (or no such
table) was made by a release before versioning, 0.1.0 or 0.2.0: version 0. The check is two queries
on the happy path (the version, the list of tables), made when a Platform or a command opens the
database, never per insert.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from autonumber.defaults import SCHEMA_VERSION, release
from autonumber.errors import SchemaMissing, SchemaTooNew, SchemaTooOld, SystemTablesMissing

from .sqlite import READONLY
from .tables import SYSTEM_TABLES, schema_version_table, system_field


def read_version(conn: Connection) -> int | None:
    """The database's schema version; None for a database without the system tables (fresh).
    `conn` must not be in a transaction of the caller's: a missing table aborts it."""
    try:
        value = conn.execute(sa.select(sa.func.max(schema_version_table.c.version))).scalar()
    except sa.exc.DBAPIError:  # no version table: unversioned, or no system schema at all
        conn.rollback()
        return 0 if sa.inspect(conn).has_table(system_field.name) else None
    conn.rollback()
    return int(value or 0)


def stamp(conn: Connection, version: int, name: str) -> None:
    """Record migration `version` as applied (nothing when it already is)."""
    t = schema_version_table
    if conn.execute(sa.select(t.c.version).where(t.c.version == version)).first() is None:
        conn.execute(sa.insert(t).values(version=version, name=name, release=release()[:32]))


def check_version(found: int | None, expected: int = SCHEMA_VERSION) -> None:
    """SchemaTooOld / SchemaTooNew unless the database is at `expected` (or has no schema yet)."""
    if found is None or found == expected:
        return
    if found < expected:
        raise SchemaTooOld(found, expected, release())
    raise SchemaTooNew(found, expected, release())


def check_schema(engine: Engine) -> None:
    """Open one read-only connection and check the database's schema version against this release;
    SchemaMissing for a database without the system tables, SystemTablesMissing for one that lost
    some of them (one more query, listing the tables, made at this release's version only)."""
    with engine.connect() as conn:
        ro = conn.execution_options(**{READONLY: True})
        found = read_version(ro)
        if found is None:
            raise SchemaMissing()
        check_version(found)
        check_system_tables(ro)


def check_system_tables(conn: Connection) -> None:
    """SystemTablesMissing naming every system table that is gone (dropped by another tool: a
    database at this release's version was made with all of them)."""
    present = set(sa.inspect(conn).get_table_names())
    missing = [t.name for t in SYSTEM_TABLES if t.name not in present]
    if missing:
        raise SystemTablesMissing(missing)
