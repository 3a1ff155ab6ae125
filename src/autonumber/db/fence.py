"""The writer fence (docs/upgrading.md, "Rolling upgrades"): triggers on the counter table that
refuse a counter INSERT or UPDATE from a session that has not declared the schema version it
writes, or declared one older than the database's (the largest version in
`_System_SchemaVersion`) or than the release that installed the triggers (their floor).

`db upgrade` installs them with its own version as the floor before its first migration step, so
a process of the release before stops at its next counter write from the moment the upgrade
begins, not only once it is stamped: nothing it writes meets a half-migrated schema.

Why: a process of an earlier release kept running across `autonumber db upgrade` would go on
writing counter rows with its old view of them (0.1.0 and 0.2.0 check no version at all); the
current release would misread them. Such a process cannot be reached from the outside, only
stopped by something in the database it trips over: these triggers.

Every connection of this release declares its version as it is opened (the connect hook each
dialect installs in `configure_engine`: a session variable on MariaDB, a session setting on
PostgreSQL, a per-connection SQL function on SQLite), so the check costs no round trip. A
connection the product did not open (a caller's, Django's) is declared by `declare` before the
product writes a counter on it. The statements are fixed text; each backend's lives behind its
Dialect (db/fence_sql.py: `fence_install_sql`, `fence_drop_sql`, `fence_installed`,
`declare_on`).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.errors import SchemaUpgradedMeanwhile

if TYPE_CHECKING:
    from .base import Dialect

TRIGGER = "autonumber_writer_fence"
"""The trigger's name (one per event where a trigger covers only one: `<name>_insert`, …)."""
MARKER = "autonumber: counter write refused"
"""The start of every refusal: how this release recognises one (`is_refusal`)."""
ADVICE = (
    "a process of an earlier release kept running across `autonumber db upgrade`: stop it and "
    "start it on the upgraded release (docs/upgrading.md, Rolling upgrades)"
)
MESSAGE = (
    f"{MARKER}: this session declared no schema version, or an older one than the database needs; {ADVICE}"
)
"""What the trigger says where its message is fixed text (SQLite); MariaDB and PostgreSQL name
both versions: MARKER, the versions, ADVICE. No quote character: it is pasted into SQL text."""
assert "'" not in MESSAGE and "%" not in MESSAGE
PG_SETTING = "autonumber.schema"
MYSQL_VARIABLE = "@autonumber_schema"
SQLITE_FUNCTION = (
    "autonumber: this process is older than the database schema, restart it on the upgraded release"
)
"""The SQL function a SQLite connection of this release registers (it returns the declared
version). A connection without it, an earlier release's, fails with "no such function: " and
this name: the clearest text SQLite lets a trigger give a session that lacks something."""
INFO_KEY = "autonumber_schema"
"""Pool-record info key: the version this connection declared (set by the connect hook)."""


def schema_version() -> int:
    """This release's schema version (db/version.py imports the dialects: read at call time)."""
    from autonumber.defaults import SCHEMA_VERSION

    return SCHEMA_VERSION


def _dialect(bind: Connection) -> Dialect:
    from . import dialect_for  # the package imports every dialect, and they import this module

    return dialect_for(bind)


def install_fence(conn: Connection) -> list[str]:
    """Create (or replace) the fence triggers on the counter table, refusing every session that
    declared less than this release's schema version (the floor), or than the database's."""
    floor = schema_version()
    for statement in _dialect(conn).fence_install_sql(floor):
        conn.execute(sa.text(statement))
    return [f"writer fence {TRIGGER} on _System_AutoNumberCounter (schema {floor} and above)"]


def ensure_fence(conn: Connection) -> list[str]:
    """install_fence where the fence is missing (dropped by another tool); [] when it is there."""
    if _dialect(conn).fence_installed(conn):
        return []
    return install_fence(conn)


def drop_fence(conn: Connection) -> None:
    """Remove the fence triggers if they exist (tests, and a database handed back)."""
    for statement in _dialect(conn).fence_drop_sql():
        conn.execute(sa.text(statement))


_declared: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""Driver connections of other pools already declared on backends where a declaration outlives
the transaction (SQLite's function, MariaDB's session variable)."""


def declare(conn: Connection) -> None:
    """Declare this release's schema version on `conn` before the product writes a counter on it.
    Nothing for a connection the product's own engine opened (its connect hook declared it); a
    caller's or Django's connection is declared here: once per driver connection where the
    declaration outlives a transaction, on every call on PostgreSQL (a session setting made in a
    transaction that rolls back is undone)."""
    fairy = conn.connection
    if INFO_KEY in fairy.info:
        return
    dialect = _dialect(conn)
    driver = fairy.driver_connection
    if dialect.declaration_outlives_transaction and driver in _declared:
        return
    dialect.declare_on(conn)
    if dialect.declaration_outlives_transaction:
        # no weak reference to sqlite3's connection: declared again next time (no round trip)
        with contextlib.suppress(TypeError):
            _declared[driver] = 1


def is_refusal(exc: BaseException) -> bool:
    """Whether a database error is the fence refusing a counter write of this session."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    text = str(exc.orig or exc)
    return MARKER in text or SQLITE_FUNCTION in text


def raise_if_refused(exc: BaseException) -> None:
    """SchemaUpgradedMeanwhile from a refusal of this release's write (a later release upgraded
    the database while this process ran); nothing for any other error."""
    if is_refusal(exc):
        from autonumber.defaults import release

        raise SchemaUpgradedMeanwhile(schema_version(), release()) from exc


__all__ = [
    "ADVICE",
    "MARKER",
    "MESSAGE",
    "MYSQL_VARIABLE",
    "PG_SETTING",
    "SQLITE_FUNCTION",
    "TRIGGER",
    "declare",
    "drop_fence",
    "ensure_fence",
    "install_fence",
    "is_refusal",
    "raise_if_refused",
    "schema_version",
]
