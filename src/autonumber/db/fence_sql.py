"""Each backend's writer fence (db/fence.py): the triggers' fixed text, how to find them, and how a
connection the product did not open declares its schema version. Mixed into the dialect classes;
the connect hooks that declare the version on the product's own connections are in
db/<dialect>.py, beside the other session settings."""

from __future__ import annotations

from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .fence import (
    ADVICE,
    MARKER,
    MESSAGE,
    MYSQL_VARIABLE,
    PG_SETTING,
    SQLITE_FUNCTION,
    TRIGGER,
    schema_version,
)

EVENTS = ("insert", "update")
COUNTERS = "_System_AutoNumberCounter"
VERSIONS = "_System_SchemaVersion"


def _count(conn: Connection, sql: str, names: list[str]) -> int:
    params = {f"n{i}": name for i, name in enumerate(names)}
    listed = ", ".join(f":{key}" for key in params)
    return int(conn.execute(sa.text(sql.format(names=listed)), params).scalar() or 0)


class SQLiteFence:
    """A trigger per event whose WHEN calls the function each connection of this release
    registers: an earlier release's connection lacks it (its statement fails to prepare), a
    connection that declared an older version than the database's is refused by RAISE."""

    declaration_outlives_transaction: ClassVar[bool] = True

    def fence_install_sql(self, floor: int) -> list[str]:
        check = (
            f'WHEN "{SQLITE_FUNCTION}"() < max({int(floor)}, '
            f'(SELECT coalesce(max(version), 0) FROM "{VERSIONS}")) '
            f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
        )
        return [
            *self.fence_drop_sql(),
            *(
                f'CREATE TRIGGER {TRIGGER}_{event} BEFORE {event.upper()} ON "{COUNTERS}" '
                f"FOR EACH ROW {check}"
                for event in EVENTS
            ),
        ]

    def fence_drop_sql(self) -> list[str]:
        return [f"DROP TRIGGER IF EXISTS {TRIGGER}_{event}" for event in EVENTS]

    def fence_installed(self, conn: Connection) -> bool:
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({names})"
        return _count(conn, sql, [f"{TRIGGER}_{event}" for event in EVENTS]) == len(EVENTS)

    def declare_on(self, conn: Connection, version: int | None = None) -> None:
        sqlite_declare(conn.connection.driver_connection, schema_version() if version is None else version)


def sqlite_declare(driver: Any, version: int) -> None:
    """Register the fence's function on a SQLite driver connection: it returns `version`.
    Deterministic: SQLite may call it once per statement rather than once per row."""
    driver.create_function(SQLITE_FUNCTION, 0, lambda: version, deterministic=True)


class MySQLFence:
    """A trigger per event (one trigger cannot cover two here); each row written compares the
    session variable with the database's version (MAX on the primary key: an index look-up) and
    SIGNALs a message naming both."""

    declaration_outlives_transaction: ClassVar[bool] = True

    def fence_install_sql(self, floor: int) -> list[str]:
        body = (
            "BEGIN DECLARE at_version INT; DECLARE msg VARCHAR(512); "
            f"SELECT GREATEST({int(floor)}, COALESCE(MAX(version), 0)) INTO at_version FROM `{VERSIONS}`; "
            f"IF COALESCE({MYSQL_VARIABLE}, 0) < at_version THEN "
            f"SET msg = CONCAT('{MARKER}: this session declared schema version ', "
            f"COALESCE({MYSQL_VARIABLE}, 'none'), ', the database needs at least ', at_version, "
            f"'; {ADVICE}'); "
            "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg; END IF; END"
        )
        return [
            *self.fence_drop_sql(),
            *(
                f"CREATE TRIGGER {TRIGGER}_{event} BEFORE {event.upper()} ON `{COUNTERS}` FOR EACH ROW {body}"
                for event in EVENTS
            ),
        ]

    def fence_drop_sql(self) -> list[str]:
        return [f"DROP TRIGGER IF EXISTS {TRIGGER}_{event}" for event in EVENTS]

    def fence_installed(self, conn: Connection) -> bool:
        sql = (
            "SELECT COUNT(*) FROM information_schema.TRIGGERS "
            "WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME IN ({names})"
        )
        return _count(conn, sql, [f"{TRIGGER}_{event}" for event in EVENTS]) == len(EVENTS)

    def declare_on(self, conn: Connection, version: int | None = None) -> None:
        declared = schema_version() if version is None else version
        conn.execute(sa.text(f"SET {MYSQL_VARIABLE} = {int(declared)}"))


class PostgreSQLFence:
    """One statement-level trigger over both events (once per statement, not per row), its
    function comparing the session setting with the database's version."""

    declaration_outlives_transaction: ClassVar[bool] = False

    def fence_install_sql(self, floor: int) -> list[str]:
        return [
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger AS $$ "
            f"DECLARE declared int := coalesce(nullif(current_setting('{PG_SETTING}', true), ''), '0')::int; "
            f"at_version int := (SELECT greatest({int(floor)}, coalesce(max(version), 0)) "
            f'FROM "{VERSIONS}"); '
            "BEGIN IF declared < at_version THEN "
            f"RAISE EXCEPTION '{MARKER}: this session declared schema version %, the database needs at least "
            f"%; {ADVICE}', CASE WHEN declared = 0 THEN 'none' ELSE declared::text END, at_version "
            "USING ERRCODE = 'P0001'; END IF; RETURN NULL; END $$ LANGUAGE plpgsql",
            f'DROP TRIGGER IF EXISTS {TRIGGER} ON "{COUNTERS}"',
            f'CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE ON "{COUNTERS}" '
            f"FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER}()",
        ]

    def fence_drop_sql(self) -> list[str]:
        return [f'DROP TRIGGER IF EXISTS {TRIGGER} ON "{COUNTERS}"', f"DROP FUNCTION IF EXISTS {TRIGGER}()"]

    def fence_installed(self, conn: Connection) -> bool:
        sql = (
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname IN ({names}) AND NOT t.tgisinternal AND c.relname = '" + COUNTERS + "' "
            "AND pg_table_is_visible(c.oid)"
        )
        return _count(conn, sql, [TRIGGER]) == 1

    def declare_on(self, conn: Connection, version: int | None = None) -> None:
        """A session setting (not transaction-local: it serves the caller's later transactions
        too), made again on every call: the caller's transaction may still roll it back."""
        declared = schema_version() if version is None else version
        conn.execute(sa.select(sa.func.set_config(PG_SETTING, str(int(declared)), False)))


__all__ = ["EVENTS", "MySQLFence", "PostgreSQLFence", "SQLiteFence", "sqlite_declare"]
