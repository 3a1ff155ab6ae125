"""A short read-only summary of a database: backend, clock, tables, configured fields, counters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from . import dialect_for, mask
from .tables import LEGACY_TABLES, SYSTEM_TABLES, counter_table, system_field, system_object
from .version import read_version


@dataclass(frozen=True)
class DatabaseStatus:
    """What `autonumber db status` prints."""

    url: str
    backend: str
    server_version: str
    clock: datetime
    system_tables: dict[str, bool]
    legacy_tables: list[str]
    objects: int
    autonumber_fields: int
    counter_rows: int
    schema_version: int | None = None
    """None: no system tables yet; 0: made by 0.1.0 or 0.2.0 (docs/upgrading.md)."""
    page_size: int | None = None
    """SQLite: bytes per page of the database file (`db init --page-size`); None elsewhere."""


def database_status(engine: Engine) -> DatabaseStatus:
    """Read the status; missing system tables count as zero rows."""
    dialect = dialect_for(engine)
    with engine.connect() as conn:
        schema_version = read_version(conn)
    with engine.connect() as conn:
        names = set(sa.inspect(conn).get_table_names())

        def count(table: sa.Table, *where: sa.ColumnElement[bool]) -> int:
            if table.name not in names:
                return 0
            stmt = sa.select(sa.func.count()).select_from(table).where(*where)
            return int(conn.execute(stmt).scalar_one())

        version = engine.dialect.server_version_info or ()
        return DatabaseStatus(
            url=mask(engine.url),
            backend=dialect.name,
            server_version=".".join(str(part) for part in version),
            clock=dialect.utc_now(conn),
            system_tables={table.name: table.name in names for table in SYSTEM_TABLES},
            legacy_tables=[table.name for table in LEGACY_TABLES if table.name in names],
            objects=count(system_object),
            autonumber_fields=count(system_field, system_field.c.auto_number_format.is_not(None)),
            counter_rows=count(counter_table),
            schema_version=schema_version,
            page_size=dialect.page_size(conn),
        )
