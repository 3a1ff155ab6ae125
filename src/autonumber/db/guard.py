"""The optional database guard (docs/changing-rules.md): a trigger that refuses changes to the
autonumber columns of `_System_Field` unless the session says the change comes from the applier.

The statements are fixed text (no metadata reaches them); each backend's lives behind its Dialect
(`guard_install_sql`, `guard_drop_sql`, `guard_authorized`). SQLite has no session flag a trigger
could read: there a rule changed behind the applier's back is caught by quarantine alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .base import Dialect

TRIGGER = "autonumber_field_guard"
MESSAGE = (
    "autonumber: the rule columns of _System_Field change only through `autonumber spec apply` "
    "(or `autonumber field set`)"
)
PG_SETTING = "autonumber.mutation_authorized"
MYSQL_VARIABLE = "@autonumber_mutation_authorized"


def _dialect(conn: Connection) -> Dialect:
    from . import dialect_for  # the package imports every dialect, and they import this module

    return dialect_for(conn)


def install_guard(conn: Connection) -> None:
    """Create (or replace) the guard trigger; ConfigError on a backend without one (SQLite)."""
    for statement in _dialect(conn).guard_install_sql():
        conn.execute(sa.text(statement))


def refresh_guard(conn: Connection) -> list[str]:
    """Re-create the guard trigger where it is installed, so it covers rule columns added since."""
    if not _dialect(conn).guard_installed(conn):
        return []
    install_guard(conn)
    return [f"guard trigger {TRIGGER} re-created over the rule columns"]


def drop_guard(conn: Connection) -> None:
    """Remove the guard trigger if it exists."""
    for statement in _dialect(conn).guard_drop_sql():
        conn.execute(sa.text(statement))


@contextmanager
def authorized(conn: Connection) -> Iterator[None]:
    """Mark this session as the applier while the block runs (must be inside a transaction)."""
    with _dialect(conn).guard_authorized(conn):
        yield
