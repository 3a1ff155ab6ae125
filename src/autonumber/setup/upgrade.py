"""Numbered schema migrations and `autonumber db upgrade` (docs/upgrading.md).

A migration is a number, a name and ordered steps. Every step is idempotent (it looks before it
changes), so a run killed halfway is resumed by running again; the migration's number is recorded
in `_System_SchemaVersion` only after its last step. All of it runs under the bootstrap lock, so
`db upgrade`, `setup apply` and `spec apply` never interleave. A fresh database is created at this
release's version directly (`reconcile_system_schema` stamps it) and needs no migration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from autonumber.db import dialect_for
from autonumber.db.fence import ensure_fence, install_fence
from autonumber.db.guard import refresh_guard
from autonumber.db.schema import add_columns, reconcile_system_schema, reconcile_tables
from autonumber.db.tables import (
    counter_table,
    idempotency_table,
    reservation_journal,
    schema_version_table,
    system_field,
    system_object,
)
from autonumber.db.unique import catalog_targets, check_no_duplicates, ensure_unique_indexes
from autonumber.db.version import check_version, read_version, stamp
from autonumber.defaults import SCHEMA_VERSION
from autonumber.progress import NullReporter, Reporter
from autonumber.rules import state
from autonumber.rules.seed import migrate_keys

from .lock import BOOTSTRAP_LOCK, BOOTSTRAP_TIMEOUT, ensure_lock_table

Step = Callable[[Engine, Reporter], list[str]]


@dataclass(frozen=True)
class Migration:
    """Schema version `number`: the steps that bring a database at `number - 1` to it."""

    number: int
    name: str
    steps: tuple[Step, ...]


def _system_tables(engine: Engine, reporter: Reporter) -> list[str]:
    """Tables and columns added since 0.1.0 (KeyColumn, the rule columns, the journal, …)."""
    changes = reconcile_system_schema(engine)
    with engine.begin() as conn:
        changes += reconcile_tables(conn, [state.setup_state])
    return changes


def _prefix_keys(engine: Engine, reporter: Reporter) -> list[str]:
    """per_prefix counter rows keyed by token values (0.1.0) move to rendered-text keys."""
    return migrate_keys(engine)


def _unique_indexes(engine: Engine, reporter: Reporter) -> list[str]:
    """A UNIQUE index on every autonumber column; stored duplicates refuse it before any is made."""
    with engine.connect() as conn:
        targets = catalog_targets(conn)
        check_no_duplicates(conn, targets)
    changes: list[str] = []
    with reporter.task("unique indexes", len(targets)) as advance:
        for target in targets:
            with engine.begin() as conn:
                changes += ensure_unique_indexes(conn, [target])
            advance(1)
    return changes


def _exact_idempotency_keys(engine: Engine, reporter: Reporter) -> list[str]:
    """Idempotency keys compared byte for byte on MariaDB/MySQL (binary NO PAD collation)."""
    with engine.begin() as conn:
        return dialect_for(conn).retype_column(conn, idempotency_table.c.idempotency_key)


def _rule_columns(*columns: str) -> Step:
    """A step adding `_System_Field` rule columns (their defaults keep every stored rule as it was);
    the guard trigger, where installed, is re-created so that it covers them too."""

    def step(engine: Engine, reporter: Reporter) -> list[str]:
        with engine.begin() as conn:
            changes = add_columns(conn, system_field, columns)
            return changes + (refresh_guard(conn) if changes else [])

    return step


RULE_CALENDAR_COLUMNS = ("auto_number_fiscal_year_start", "auto_number_date_field")
"""Rule columns of migration 5: the fiscal year's first month and the record's own date field."""


def _journal_caller(engine: Engine, reporter: Reporter) -> list[str]:
    """The journal's `caller` column: the application label of the process that reserved."""
    with engine.begin() as conn:
        return reconcile_tables(conn, [reservation_journal])


def _date_columns(engine: Engine, reporter: Reporter) -> list[str]:
    """The `date` fields of the platform's own objects become DATE columns, each value keeping its
    day (they were date-time columns); an adopted table is never altered."""
    o, f = system_object, system_field
    with engine.connect() as conn:
        targets = conn.execute(
            sa.select(o.c.TableName, f.c.ApiName)
            .join(f, f.c.ObjectId == o.c.Id)
            .where(o.c.KeyColumn.is_(None), sa.func.lower(f.c.Type) == "date")
            .order_by(o.c.TableName, f.c.ApiName)
        ).all()
    changes: list[str] = []
    for table_name, column in targets:
        with engine.begin() as conn:
            changes += dialect_for(conn).date_column(conn, str(table_name), str(column))
    return changes


def _raise_fence(engine: Engine) -> list[str]:
    """Before the first migration step: the writer fence with this release's version as its floor
    (and the version table it reads), so processes of earlier releases stop at their next counter
    write while the steps run, none writing into a half-migrated schema (db/fence.py)."""
    with engine.begin() as conn:
        if not sa.inspect(conn).has_table(counter_table.name):
            return []  # no counter to write (dropped by a rollback): migration 8 fences the new one
        return reconcile_tables(conn, [schema_version_table]) + install_fence(conn)


def _writer_fence(engine: Engine, reporter: Reporter) -> list[str]:
    """Triggers on the counter table refusing a counter write from a session that declared no
    schema version, or an older one than the database's: a process of an earlier release kept
    running across the upgrade stops at its next counter write (db/fence.py)."""
    with engine.begin() as conn:
        return install_fence(conn)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "0.2.0 tables and columns, rendered per_prefix keys, UNIQUE autonumber indexes",
        (_system_tables, _prefix_keys, _unique_indexes),
    ),
    Migration(2, "idempotency keys compared byte for byte", (_exact_idempotency_keys,)),
    Migration(
        3,
        "block allocation: _System_Field.auto_number_allocation",
        (_rule_columns("auto_number_allocation"),),
    ),
    Migration(4, "the reservation journal names the caller", (_journal_caller,)),
    Migration(
        5,
        "rule columns: fiscal year start, date field",
        (_rule_columns(*RULE_CALENDAR_COLUMNS),),
    ),
    Migration(
        6,
        "shared counters: _System_Field.auto_number_shared_counter",
        (_rule_columns("auto_number_shared_counter"),),
    ),
    Migration(7, "date fields of custom objects are DATE columns", (_date_columns,)),
    Migration(8, "writer fence: counter writes only from sessions declaring this schema", (_writer_fence,)),
)
"""Every migration, in order; the last number is SCHEMA_VERSION. Add a migration at the end."""

_NUMBERS = [m.number for m in MIGRATIONS]
assert _NUMBERS[-1] == SCHEMA_VERSION and sorted(set(_NUMBERS)) == _NUMBERS


def current_version(engine: Engine) -> int | None:
    """The database's schema version (None: no system schema yet)."""
    with engine.connect() as conn:
        return read_version(conn)


def run_migrations(engine: Engine, reporter: Reporter | None = None) -> list[str]:
    """Bring the database to SCHEMA_VERSION; the caller holds the bootstrap lock. SchemaTooNew
    when a later release upgraded it; [] when it is current."""
    rep = reporter or NullReporter()
    found = current_version(engine)
    if found is None:
        return _system_tables(engine, rep)  # created at this version, and stamped
    if found > SCHEMA_VERSION:
        check_version(found)
    changes = _raise_fence(engine) if found < SCHEMA_VERSION else []
    for migration in MIGRATIONS:
        if migration.number <= found:
            continue
        rep.note(f"migration {migration.number}: {migration.name}")
        for step in migration.steps:
            done = step(engine, rep)
            for line in done:
                rep.detail(f"  {line}")
            changes += done
        with engine.begin() as conn:
            stamp(conn, migration.number, migration.name)
        changes.append(f"schema version {migration.number}: {migration.name}")
    return changes


def repair(engine: Engine, reporter: Reporter | None = None) -> list[str]:
    """Put back what another tool dropped from a database at this release's version: the missing
    system tables (empty), the UNIQUE index of every autonumber column (stored duplicates refuse
    it, naming them) and the writer fence. Idempotent; [] when nothing is missing."""
    rep = reporter or NullReporter()
    changes = _system_tables(engine, rep) + _unique_indexes(engine, rep)
    with engine.begin() as conn:
        return changes + ensure_fence(conn)


def upgrade(
    engine: Engine, reporter: Reporter | None = None, *, lock_timeout: float = BOOTSTRAP_TIMEOUT
) -> list[str]:
    """`autonumber db upgrade`: run_migrations, then repair, under the bootstrap lock (idempotent,
    resumable)."""
    ensure_lock_table(engine)
    with dialect_for(engine).named_lock(engine, BOOTSTRAP_LOCK, lock_timeout):
        changes = run_migrations(engine, reporter)
        return changes + repair(engine, reporter)


__all__ = ["MIGRATIONS", "Migration", "current_version", "repair", "run_migrations", "upgrade"]
