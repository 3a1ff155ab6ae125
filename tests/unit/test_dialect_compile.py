"""Each Dialect's statements compiled for SQLite, MySQL and PostgreSQL without a server (docs/
compatibility.md): the SQL every backend difference produces, asserted on its text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection

from autonumber.db import Dialect
from autonumber.db.base import TransactionalDDL
from autonumber.db.guard import MYSQL_VARIABLE, PG_SETTING, TRIGGER
from autonumber.db.mysql import MySQLDialect
from autonumber.db.postgresql import PostgreSQLDialect
from autonumber.db.sqlite import SQLiteDialect
from autonumber.db.tables import AUTONUMBER_COLUMNS
from autonumber.db.tables import counter_table as T
from autonumber.errors import ConfigError

SA_DIALECTS = {"sqlite": sqlite.dialect(), "mysql": mysql.dialect(), "postgresql": postgresql.dialect()}
OURS: dict[str, Dialect] = {
    "sqlite": SQLiteDialect(),
    "mysql": MySQLDialect(),
    "postgresql": PostgreSQLDialect(),
}
KEY = {"field_id": "Case.CaseNumber", "scope_key": ""}
STAMP = datetime(2026, 4, 17, 12, 0, tzinfo=UTC)


class _Result:
    rowcount = 1
    lastrowid = 42

    def scalar_one(self) -> int:
        return 42

    def scalar_one_or_none(self) -> int:
        return 42

    def first(self) -> tuple[int, datetime]:
        return 42, STAMP

    def one(self) -> tuple[int, datetime]:
        return 42, STAMP


class Recorder:
    """A Connection stand-in that compiles every statement for one backend instead of running it."""

    def __init__(self, backend: str) -> None:
        self.dialect = SA_DIALECTS[backend]
        self.sql: list[str] = []

    def execute(self, stmt: Any, params: Any = None) -> _Result:
        rows = params if isinstance(params, list) else [params] if params else []
        keys = list(rows[0]) if rows else None
        self.sql.append(" ".join(str(stmt.compile(dialect=self.dialect, column_keys=keys)).split()))
        return _Result()


def record(backend: str) -> tuple[Dialect, Recorder, Connection]:
    rec = Recorder(backend)
    conn: Connection = rec  # type: ignore[assignment]
    return OURS[backend], rec, conn


def table(backend: str) -> str:
    """The counter table's name as the backend quotes it."""
    return str(SA_DIALECTS[backend].identifier_preparer.quote(T.name))


def where() -> sa.ColumnElement[bool]:
    return sa.and_(T.c.field_id == KEY["field_id"], T.c.scope_key == KEY["scope_key"])


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_atomic_increment_is_update_returning(backend: str) -> None:
    dialect, rec, conn = record(backend)
    after = dialect.atomic_increment(conn, T, where(), "next_value", 3, guard=T.c.next_value <= 997)
    assert after == 42
    (sql,) = rec.sql
    t = table(backend)
    assert sql.startswith(f"UPDATE {t} SET next_value=({t}.next_value +")
    assert sql.endswith("RETURNING next_value") or sql.endswith(f"RETURNING {t}.next_value")
    assert f"{t}.next_value <=" in sql


def test_atomic_increment_on_mysql_carries_the_value_in_last_insert_id() -> None:
    dialect, rec, conn = record("mysql")
    assert dialect.atomic_increment(conn, T, where(), "next_value", 3) == 42
    (update,) = rec.sql  # the OK packet carries LAST_INSERT_ID(expr): no SELECT round trip
    assert f"SET next_value=last_insert_id({table('mysql')}.next_value + %s)" in update
    assert "RETURNING" not in update


@pytest.mark.parametrize(
    ("backend", "clock"),
    [
        ("sqlite", "strftime(?, ?)"),
        ("postgresql", "timezone(%(timezone_1)s, clock_timestamp())"),
        ("mysql", "utc_timestamp(6)"),
    ],
)
def test_the_clock_rides_on_the_increment(backend: str, clock: str) -> None:
    dialect, rec, conn = record(backend)
    last, stamped = dialect.atomic_increment_clocked(  # type: ignore[misc]
        conn, T, where(), "next_value", 1, "last_modified_date"
    )
    assert (last, stamped) == (42, STAMP)
    assert f"last_modified_date={clock}" in rec.sql[0]


@pytest.mark.parametrize(
    ("backend", "upsert", "greatest"),
    [
        (
            "sqlite",
            "ON CONFLICT (field_id, scope_key) DO UPDATE SET",
            "max({t}.next_value, excluded.next_value)",
        ),
        (
            "postgresql",
            "ON CONFLICT (field_id, scope_key) DO UPDATE SET",
            "greatest({t}.next_value, excluded.next_value)",
        ),
        ("mysql", "ON DUPLICATE KEY UPDATE", "greatest({t}.next_value, VALUES(next_value))"),
    ],
)
def test_upsert_greatest_never_lowers_and_keeps_created_date(
    backend: str, upsert: str, greatest: str
) -> None:
    dialect, rec, conn = record(backend)
    dialect.upsert_greatest(
        conn, T, KEY, "next_value", 7, {"created_date": STAMP, "last_modified_date": STAMP}
    )
    (sql,) = rec.sql
    t = table(backend)
    assert sql.startswith(f"INSERT INTO {t} (field_id, scope_key, next_value, created_date, ")
    assert upsert in sql and greatest.format(t=t) in sql
    updated = sql.split(upsert)[1]
    assert "last_modified_date" in updated
    assert "created_date" not in updated.replace("last_modified_date", "")
    assert "field_id" not in updated and "scope_key" not in updated


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_upsert_greatest_many_is_the_same_statement_for_many_rows(backend: str) -> None:
    dialect, one, conn = record(backend)
    dialect.upsert_greatest(conn, T, KEY, "next_value", 7, {"last_modified_date": STAMP})
    _, many, conn_many = record(backend)
    rows = [
        {**KEY, "next_value": 7, "last_modified_date": STAMP},
        {**KEY, "scope_key": "x", "next_value": 2, "last_modified_date": STAMP},
    ]
    dialect.upsert_greatest_many(conn_many, T, list(KEY), "next_value", rows)
    assert many.sql == one.sql
    dialect.upsert_greatest_many(conn_many, T, list(KEY), "next_value", [])
    assert len(many.sql) == 1, "no rows, no statement"


@pytest.mark.parametrize(("backend", "lock"), [("postgresql", "FOR UPDATE"), ("mysql", "FOR UPDATE")])
def test_for_update_locks_the_row(backend: str, lock: str) -> None:
    stmt = OURS[backend].for_update(sa.select(T.c.next_value).where(where()))
    assert str(stmt.compile(dialect=SA_DIALECTS[backend])).endswith(lock)


def test_guard_trigger_ddl_per_backend() -> None:
    pg, my, lite = OURS["postgresql"], OURS["mysql"], OURS["sqlite"]
    with pytest.raises(ConfigError, match="SQLite has no session flag"):
        lite.guard_install_sql()
    function, drop, create = pg.guard_install_sql()
    assert function.startswith(f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger")
    assert f"current_setting('{PG_SETTING}', true)" in function and "LANGUAGE plpgsql" in function
    assert all(f"OLD.{c}::text IS DISTINCT FROM NEW.{c}::text" in function for c in AUTONUMBER_COLUMNS)
    assert drop == f'DROP TRIGGER IF EXISTS {TRIGGER} ON "_System_Field"'
    assert create.endswith(f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER}()")
    drop, create = my.guard_install_sql()
    assert drop == f"DROP TRIGGER IF EXISTS {TRIGGER}"
    assert f"COALESCE({MYSQL_VARIABLE}, 0) <> 1" in create and "SIGNAL SQLSTATE '45000'" in create
    assert all(f"NOT (OLD.{c} <=> NEW.{c})" in create for c in AUTONUMBER_COLUMNS)
    assert pg.guard_drop_sql()[-1] == f"DROP FUNCTION IF EXISTS {TRIGGER}()"
    assert my.guard_drop_sql() == [f"DROP TRIGGER IF EXISTS {TRIGGER}"]
    assert lite.guard_drop_sql() == []


class TextRecorder:
    """Records the text of each statement run by guard_authorized."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def execute(self, stmt: Any, _params: Any = None) -> None:
        self.sql.append(str(stmt))


def authorized_sql(backend: str, fail: bool = False) -> list[str]:
    rec = TextRecorder()
    conn: Connection = rec  # type: ignore[assignment]
    try:
        with OURS[backend].guard_authorized(conn):
            if fail:
                raise RuntimeError("the block failed")
    except RuntimeError:
        pass
    return rec.sql


def test_guard_authorization_per_backend() -> None:
    assert authorized_sql("postgresql") == [
        f"SELECT set_config('{PG_SETTING}', '1', true)",
        f"SELECT set_config('{PG_SETTING}', '', true)",
    ]
    # transaction-local: a failed transaction takes the setting with it (and refuses statements)
    assert authorized_sql("postgresql", fail=True) == [f"SELECT set_config('{PG_SETTING}', '1', true)"]
    session = [f"SET {MYSQL_VARIABLE} = 1", f"SET {MYSQL_VARIABLE} = NULL"]
    assert authorized_sql("mysql") == authorized_sql("mysql", fail=True) == session
    assert authorized_sql("sqlite") == []


def test_only_mysql_ddl_commits_implicitly() -> None:
    assert {name: isinstance(d, TransactionalDDL) for name, d in OURS.items()} == {
        "sqlite": True,
        "mysql": False,
        "postgresql": True,
    }


def test_where_ddl_commits_a_failed_block_is_undone_and_its_error_kept() -> None:
    undone: list[str] = []

    def undo() -> None:
        undone.append("undo")
        raise OSError("undo broke")

    with pytest.raises(RuntimeError, match="disk full") as caught, OURS["mysql"].undoing_ddl(undo, "col X.Y"):
        raise RuntimeError("disk full")
    assert undone == ["undo"]
    assert caught.value.__notes__ == ["undoing col X.Y failed too: undo broke"]
    with pytest.raises(RuntimeError, match="disk full"), OURS["postgresql"].undoing_ddl(undo, "col X.Y"):
        raise RuntimeError("disk full")  # transactional: the caller's rollback undoes it
    assert undone == ["undo"]


class _Keeper(Recorder):
    """A Recorder that also keeps the statement objects it was given."""

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        self.statements: list[Any] = []

    def execute(self, stmt: Any, params: Any = None) -> _Result:
        self.statements.append(stmt)
        return super().execute(stmt, params)


@pytest.mark.parametrize("backend", ["sqlite", "mysql", "postgresql"])
def test_the_reservation_statement_is_built_once_and_takes_its_values_as_parameters(backend: str) -> None:
    from autonumber.engine.reservation import _FITS, _KEY, _N, _params

    rule = type("R", (), {"counter_id": "Case.CaseNumber", "format": type("F", (), {"counter_width": 8})})()
    rec = _Keeper(backend)
    conn: Connection = rec  # type: ignore[assignment]
    for n in (1, 5):
        params = _params(rule, "", n)  # type: ignore[arg-type]
        OURS[backend].atomic_increment_clocked(
            conn, T, _KEY, "next_value", _N, "last_modified_date", _FITS, params
        )
    first, second = rec.statements[0], rec.statements[len(rec.statements) // 2]
    assert first is second, "the statement was built again on the second call"
    assert "Case.CaseNumber" not in rec.sql[0] and "99999995" not in rec.sql[0]  # values are bound
    assert params == {"b_field_id": "Case.CaseNumber", "b_scope_key": "", "b_n": 5, "b_limit": 99999995}


def test_idempotency_keys_get_a_binary_no_pad_collation_on_the_mysql_family() -> None:
    from sqlalchemy.schema import CreateTable

    from autonumber.db.tables import idempotency_table

    mariadb = mysql.dialect()
    mariadb.is_mariadb = True
    assert "utf8mb4_nopad_bin" in str(CreateTable(idempotency_table).compile(dialect=mariadb))
    assert "utf8mb4_0900_bin" in str(CreateTable(idempotency_table).compile(dialect=mysql.dialect()))
    for name in ("sqlite", "postgresql"):
        ddl = str(CreateTable(idempotency_table).compile(dialect=SA_DIALECTS[name]))
        assert "idempotency_key VARCHAR(255) NOT NULL" in ddl and "COLLATE" not in ddl


def test_the_stamped_increment_on_mysql_is_its_update_alone() -> None:
    """No SELECT reads the clock back: the value comes in the OK packet, the stamp stays on the row
    for the record's INSERT … RETURNING to read."""
    from autonumber.engine.reservation import _FITS, _KEY, _N, STAMPED_AT, _params

    rule = type("R", (), {"counter_id": "Case.CaseNumber", "format": type("F", (), {"counter_width": 8})})()
    dialect, rec, conn = record("mysql")
    params = _params(rule, "", 1)  # type: ignore[arg-type]
    after = dialect.atomic_increment_stamped(
        conn, T, _KEY, "next_value", _N, "last_modified_date", _FITS, params
    )
    assert after == 42
    (update,) = rec.sql
    assert update.startswith(f"UPDATE {table('mysql')} SET next_value=last_insert_id(")
    assert "last_modified_date=utc_timestamp(6)" in update
    stamp = " ".join(str(STAMPED_AT.compile(dialect=SA_DIALECTS["mysql"])).split())
    assert stamp == (
        f"(SELECT {table('mysql')}.last_modified_date FROM {table('mysql')} "
        f"WHERE {table('mysql')}.field_id = %s AND {table('mysql')}.scope_key = %s)"
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_only_the_mysql_family_leaves_the_stamp_for_the_insert(backend: str) -> None:
    _, _, conn = record(backend)
    assert not OURS[backend].stamp_rides_on_insert(conn)
