"""The dialect layer: the only place where SQLite, the MySQL family and PostgreSQL differ."""

from __future__ import annotations

from sqlalchemy.engine import URL, Connection, Engine

from .base import Dialect
from .mysql import MySQLDialect
from .postgresql import PostgreSQLDialect
from .sqlite import SQLiteDialect
from .url import DEFAULT_URL, check_reachable, create_engine, mask, parse_url

_DIALECTS: dict[str, Dialect] = {
    "sqlite": SQLiteDialect(),
    "mysql": MySQLDialect(),
    "mariadb": MySQLDialect(),
    "postgresql": PostgreSQLDialect(),
}


def dialect_for_url(url: URL) -> Dialect:
    """The dialect implementation for a parsed URL."""
    return _DIALECTS[url.get_backend_name()]


def dialect_for(bind: Engine | Connection) -> Dialect:
    """The dialect implementation for an engine or connection, looked up once by dialect name."""
    return _DIALECTS[bind.dialect.name]


__all__ = [
    "DEFAULT_URL",
    "Dialect",
    "check_reachable",
    "create_engine",
    "dialect_for",
    "dialect_for_url",
    "mask",
    "parse_url",
]
