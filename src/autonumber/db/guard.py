"""The optional database guard (spec §5.6 hook 2): a trigger that refuses changes to the autonumber
columns of `_System_Field` unless the session says the change comes from the applier.

The statements are fixed text (no metadata reaches them); each backend has its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from autonumber.errors import ConfigError

from .tables import AUTONUMBER_COLUMNS

TRIGGER = "autonumber_field_guard"
MESSAGE = (
    "autonumber: the rule columns of _System_Field change only through `autonumber spec apply` "
    "(or `autonumber field set`)"
)
PG_SETTING = "autonumber.mutation_authorized"
MYSQL_VARIABLE = "@autonumber_mutation_authorized"


def _changed(dialect_name: str) -> str:
    if dialect_name == "postgresql":
        return " OR ".join(f"OLD.{c}::text IS DISTINCT FROM NEW.{c}::text" for c in AUTONUMBER_COLUMNS)
    return " OR ".join(f"NOT (OLD.{c} <=> NEW.{c})" for c in AUTONUMBER_COLUMNS)


def install_guard(conn: Connection) -> None:
    """Create (or replace) the guard trigger; SQLite relies on quarantine alone."""
    name = conn.dialect.name
    if name == "postgresql":
        conn.execute(sa.text(
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger AS $$ BEGIN "
            f"IF ({_changed(name)}) AND coalesce(current_setting('{PG_SETTING}', true), '') <> '1' "
            f"THEN RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'P0001'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql"
        ))
        conn.execute(sa.text(f'DROP TRIGGER IF EXISTS {TRIGGER} ON "_System_Field"'))
        conn.execute(sa.text(
            f'CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON "_System_Field" '
            f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER}()"
        ))
    elif name in ("mysql", "mariadb"):
        conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {TRIGGER}"))
        conn.execute(sa.text(
            f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON `_System_Field` FOR EACH ROW BEGIN "
            f"IF ({_changed(name)}) AND COALESCE({MYSQL_VARIABLE}, 0) <> 1 THEN "
            f"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{MESSAGE}'; END IF; END"
        ))
    else:
        raise ConfigError(
            "the guard trigger needs MariaDB/MySQL or PostgreSQL; on SQLite a rule changed behind the "
            "applier's back is caught by quarantine alone"
        )


def drop_guard(conn: Connection) -> None:
    """Remove the guard trigger if it exists."""
    name = conn.dialect.name
    if name == "postgresql":
        conn.execute(sa.text(f'DROP TRIGGER IF EXISTS {TRIGGER} ON "_System_Field"'))
        conn.execute(sa.text(f"DROP FUNCTION IF EXISTS {TRIGGER}()"))
    elif name in ("mysql", "mariadb"):
        conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {TRIGGER}"))


@contextmanager
def authorized(conn: Connection) -> Iterator[None]:
    """Mark this session as the applier while the block runs (must be inside a transaction)."""
    name = conn.dialect.name
    if name == "postgresql":
        # transaction-local: it ends with the transaction, whatever happens; cleared after the block
        # so later statements of the same transaction are not authorized
        conn.execute(sa.text(f"SELECT set_config('{PG_SETTING}', '1', true)"))
        yield
        conn.execute(sa.text(f"SELECT set_config('{PG_SETTING}', '', true)"))
    elif name in ("mysql", "mariadb"):
        conn.execute(sa.text(f"SET {MYSQL_VARIABLE} = 1"))
        try:
            yield
        finally:
            conn.execute(sa.text(f"SET {MYSQL_VARIABLE} = NULL"))
    else:
        yield
