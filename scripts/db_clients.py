"""The command-line clients' connection arguments (mariadb, mariadb-dump, psql, pg_dump) for a
SQLAlchemy URL: one place for the fixture script and the upgrade tests that load its dumps."""

from __future__ import annotations

import sqlalchemy as sa


def client_args(url: str) -> list[str]:
    """Host, port and user options of the URL's backend client (the database name is not included:
    each client takes it its own way)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() in ("mysql", "mariadb"):
        return [
            "-h",
            parsed.host or "127.0.0.1",
            "-P",
            str(parsed.port or 3306),
            "-u",
            parsed.username or "root",
        ]
    if parsed.get_backend_name() == "postgresql":
        return [
            "-h",
            parsed.host or "127.0.0.1",
            "-p",
            str(parsed.port or 5432),
            "-U",
            parsed.username or "postgres",
        ]
    raise ValueError(f"no command-line client for {parsed.get_backend_name()}")
