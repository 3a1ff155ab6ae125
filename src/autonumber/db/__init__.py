"""The dialect layer: the only place where SQLite, the MySQL family and PostgreSQL differ."""

from __future__ import annotations

import importlib

from sqlalchemy.engine import URL, Connection, Engine

from .base import Dialect
from .url import DEFAULT_URL, check_reachable, create_engine, mask, parse_url

_CLASSES = {
    "sqlite": ("sqlite", "SQLiteDialect"),
    "mysql": ("mysql", "MySQLDialect"),
    "mariadb": ("mysql", "MySQLDialect"),
    "postgresql": ("postgresql", "PostgreSQLDialect"),
}
"""Each backend's module and class, imported when the backend is first used: a command on SQLite
starts without the MariaDB and PostgreSQL modules and their drivers (about 45 ms)."""
_DIALECTS: dict[str, Dialect] = {}


def _dialect(name: str) -> Dialect:
    found = _DIALECTS.get(name)
    if found is None:
        if name not in _CLASSES:
            raise KeyError(f"no autonumber dialect for the database backend {name!r}")
        module, cls = _CLASSES[name]
        made = getattr(importlib.import_module(f".{module}", __name__), cls)()
        found = _DIALECTS.setdefault(name, made)
    return found


def dialect_for_url(url: URL) -> Dialect:
    """The dialect implementation for a parsed URL."""
    return _dialect(url.get_backend_name())


def dialect_for(bind: Engine | Connection) -> Dialect:
    """The dialect implementation for an engine or connection, looked up once by dialect name."""
    return _dialect(bind.dialect.name)


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
