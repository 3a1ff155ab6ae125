"""The MySQL dialect classifies errors by the server's error number, not by SQLSTATE.

PyMySQL ≥ 1.2 also sets `.sqlstate` on its exceptions (1213 → "40001", 1062 → "23000"); a
classification that preferred SQLSTATE let every Galera certification failure (1213) escape the
reservation retry loop as a raw OperationalError.
"""

from __future__ import annotations

import pymysql
import pytest
import sqlalchemy as sa

from autonumber.db.mysql import MySQLDialect, mysql_errno


def _error(errno: int, sqlstate: str | None, cls: type[pymysql.err.MySQLError]) -> sa.exc.DBAPIError:
    orig = cls(errno, "message from the server")
    if sqlstate is not None:
        orig.sqlstate = sqlstate  # what PyMySQL ≥ 1.2 does for every server error
    return sa.exc.DBAPIError("UPDATE …", {}, orig)


@pytest.mark.parametrize("sqlstate", [None, "40001"])
def test_certification_failure_1213_is_retryable_with_or_without_sqlstate(sqlstate: str | None) -> None:
    exc = _error(1213, sqlstate, pymysql.err.OperationalError)
    assert mysql_errno(exc) == 1213
    assert MySQLDialect().is_retryable(exc)
    assert not MySQLDialect().is_duplicate_key(exc)


@pytest.mark.parametrize(("errno", "sqlstate"), [(1205, "HY000"), (1020, "HY000"), (9007, "HY000")])
def test_other_lost_races_are_retryable(errno: int, sqlstate: str) -> None:
    assert MySQLDialect().is_retryable(_error(errno, sqlstate, pymysql.err.OperationalError))


def test_duplicate_key_1062_is_recognised_and_not_retryable() -> None:
    exc = _error(1062, "23000", pymysql.err.IntegrityError)
    assert MySQLDialect().is_duplicate_key(exc)
    assert not MySQLDialect().is_retryable(exc)


@pytest.mark.parametrize(("errno", "sqlstate"), [(2003, "HY000"), (1146, "42S02"), (1064, "42000")])
def test_connection_and_syntax_errors_are_not_lost_races(errno: int, sqlstate: str) -> None:
    exc = _error(errno, sqlstate, pymysql.err.OperationalError)
    assert mysql_errno(exc) == errno
    assert not MySQLDialect().is_retryable(exc)
    assert not MySQLDialect().is_duplicate_key(exc)


def test_an_error_without_a_number_is_neither() -> None:
    exc = sa.exc.DBAPIError("SELECT 1", {}, Exception("no number"))
    assert mysql_errno(exc) is None
    assert not MySQLDialect().is_retryable(exc)


@pytest.mark.parametrize("errno", [1710, 1711])
def test_a_broken_table_cache_copy_is_the_database_unavailable(errno: int) -> None:
    """MariaDB's broken copy of a table with triggers (a session killed while opening it): every
    statement handed it fails until FLUSH TABLES; classified, so the caller gets DatabaseUnavailable
    naming it, never the driver's error."""
    exc = _error(errno, "HY000", pymysql.err.InternalError)
    assert MySQLDialect().is_unavailable(exc)
    assert not MySQLDialect().is_retryable(exc)
    assert not MySQLDialect().is_unavailable(_error(1146, "42S02", pymysql.err.ProgrammingError))
