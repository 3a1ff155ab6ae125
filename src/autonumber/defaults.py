"""Defaults every entry point shares (library, CLI, web server); imports nothing, so the CLI starts fast."""

from __future__ import annotations

DEFAULT_URL = "sqlite:///autonumber.db"
"""The database used when none is named: a SQLite file in the working directory."""

DATABASE_ENV = "AUTONUMBER_DATABASE_URL"
"""The environment variable naming the database (`--db` and the web server read it)."""

MAX_CONNECTIONS_ENV = "AUTONUMBER_MAX_CONNECTIONS"
"""Database connections per process, all pools together (`--max-connections`)."""

ADMIN_TOKEN_ENV = "AUTONUMBER_ADMIN_TOKEN"
"""The token that enables admin changes on the web console (rules page, PUT of a rule)."""

API_TOKEN_ENV = "AUTONUMBER_API_TOKEN"
"""When set, the Bearer token every web write needs."""

SECRET_ENV = "AUTONUMBER_SECRET_KEY"
"""The key signing web sessions and CSRF tokens (shared by every worker)."""

FORWARDED_ALLOW_IPS_ENV = "AUTONUMBER_FORWARDED_ALLOW_IPS"
"""Proxies whose X-Forwarded-For/-Proto the web server believes (comma-separated); none by default."""

ALLOWED_HOSTS_ENV = "AUTONUMBER_ALLOWED_HOSTS"
"""Host header values the web server answers (comma-separated); `serve` sets it for its workers."""
