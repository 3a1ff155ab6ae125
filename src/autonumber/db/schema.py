"""Create and reconcile tables idempotently: a missing table is created, a missing column added,
existing rows untouched (the seed's ReconcileTableColumns)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import CreateColumn

from autonumber.defaults import SCHEMA_VERSION
from autonumber.identifiers import check_api_name

from . import dialect_for
from .fence import install_fence
from .tables import LEGACY_TABLES, SYSTEM_TABLES, system_field, utc_now6
from .version import stamp

EPOCH = "1970-01-01 00:00:00.000000"


def reconcile_tables(conn: Connection, tables: Iterable[sa.Table]) -> list[str]:
    """Create missing tables and add missing columns; return what changed, one line each."""
    changes: list[str] = []
    inspector = sa.inspect(conn)
    existing = set(inspector.get_table_names())
    for table in tables:
        check_api_name(table.name.removeprefix("_"), "table name")
        if table.name not in existing:
            table.create(conn)
            changes.append(f"created table {table.name}")
            continue
        present = {col["name"] for col in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in present:
                _add_column(conn, table, column)
                changes.append(f"added column {table.name}.{column.name}")
    return changes


def add_columns(conn: Connection, table: sa.Table, names: Iterable[str]) -> list[str]:
    """Add the named columns of `table` (as tables.py declares them) that the database lacks."""
    present = {col["name"] for col in sa.inspect(conn).get_columns(table.name)}
    changes: list[str] = []
    for name in names:
        if name not in present:
            _add_column(conn, table, table.c[name])
            changes.append(f"added column {table.name}.{name}")
    return changes


def _add_column(conn: Connection, table: sa.Table, column: sa.Column[object]) -> None:
    quoted = dialect_for(conn).quote(conn, table.name)
    default = column.server_default
    if conn.dialect.name == "sqlite" and isinstance(getattr(default, "arg", None), utc_now6):
        # SQLite cannot ADD COLUMN with a non-constant default: add it with a constant one,
        # then stamp the existing rows with the database clock.
        plain = sa.Column(column.name, column.type, nullable=column.nullable, server_default=EPOCH)
        spec = CreateColumn(plain).compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE {quoted} ADD COLUMN {spec}"))
        conn.execute(sa.update(table).values({column.name: dialect_for(conn).utc_now(conn)}))
        return
    spec = CreateColumn(column).compile(dialect=conn.dialect)
    conn.execute(sa.text(f"ALTER TABLE {quoted} ADD COLUMN {spec}"))


def reconcile_system_schema(engine: Engine) -> list[str]:
    """Create or reconcile the system tables (not the legacy ones). A fresh database is created at
    this release's schema version and stamped with it; an existing one is not stamped (only a
    migration's last step does that: setup/upgrade.py)."""
    with engine.begin() as conn:
        return reconcile_system_tables(conn)


def reconcile_system_tables(conn: Connection) -> list[str]:
    """reconcile_system_schema inside the caller's transaction (the Django migration's). A fresh
    database gets the writer fence (db/fence.py) with its version."""
    fresh = system_field.name not in table_names(conn)
    changes = reconcile_tables(conn, SYSTEM_TABLES)
    if fresh:
        stamp(conn, SCHEMA_VERSION, "created at this version")
        changes += install_fence(conn)
    return changes


def create_legacy_tables(engine: Engine) -> list[str]:
    """Create the four legacy tables (tests and the legacy demo only)."""
    with engine.begin() as conn:
        return reconcile_tables(conn, LEGACY_TABLES)


def table_names(bind: Engine | Connection) -> set[str]:
    """The tables that exist now."""
    return set(sa.inspect(bind).get_table_names())


def has_table(bind: Engine | Connection, name: str) -> bool:
    """Whether table `name` exists now: one small look-up, where listing every table of a cut-over
    database (hundreds) on each check made a full-spec `setup apply` spend a sixth of its time there."""
    return sa.inspect(bind).has_table(name)


_ensured: set[tuple[str, str]] = set()
_ensure_lock = threading.Lock()


def ensure_table(engine: Engine, table: sa.Table) -> None:
    """Create one system table on a database set up before it existed (checked once per process)."""
    key = (str(engine.url), table.name)
    if key in _ensured:
        return
    with _ensure_lock:
        if key in _ensured:
            return
        try:
            table.create(engine, checkfirst=True)
        except sa.exc.DBAPIError:  # another process created it between the check and the create
            if not sa.inspect(engine).has_table(table.name):
                raise
        _ensured.add(key)
